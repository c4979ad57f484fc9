/* log.c - provider logging through the runtime (Services->Log) of the right instance, and the
 * process-wide registry of live instances that context-free logging needs.
 *
 * Talks to: nothing of the provider (everything logs through it). provider.c registers each
 * instance; progress.c names the device of its thread (iw_log_bind_thread). */
#include "iwarp.h"

#include <stdarg.h>
#include <stdio.h>

/* The device whose progress thread this is (set by that thread at start), or NULL. */
static __thread const struct iw_device *iw_log_dev;

void iw_log_bind_thread(const struct iw_device *dev)
{
    iw_log_dev = dev;
}

/* Registry of live instances. Job of iw_reg_lock: the list and every entry's log_users; never
 * held across a call into the runtime (its Log may run a consumer's log callback). */
static pthread_mutex_t iw_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t iw_reg_cond = PTHREAD_COND_INITIALIZER;
static struct ndk_list iw_reg = NDK_LIST_INIT(iw_reg);

static void iw_vplog(struct iw_provider *prov, int level, const char *fmt, va_list ap)
{
    char line[512];

    if (!prov || !prov->drv.services || !prov->drv.services->Log)
        return;
    vsnprintf(line, sizeof line, fmt, ap);
    /* No prefix of ours: the runtime names the provider on every line it logs for it. */
    prov->drv.services->Log(prov->drv.driver_handle, level, "%s", line);
}

void iw_prov_log(struct iw_provider *prov, int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    iw_vplog(prov, level, fmt, ap);
    va_end(ap);
}

/* Context-free logging (the data path's iw_err / iw_warn / ...): on a device's progress thread
 * the message goes to that device's instance. Elsewhere (a consumer's posting thread) the oldest
 * live instance takes it, pinned against its unload while the runtime formats it; code that has
 * its device at hand logs with iw_dev_log instead. */
static void iw_vlog_any(int level, const char *fmt, va_list ap)
{
    const struct iw_device *dev = iw_log_dev;
    struct iw_provider *prov = NULL;

    if (dev) {
        iw_vplog(dev->prov, level, fmt, ap);
        return;
    }
    pthread_mutex_lock(&iw_reg_lock);
    if (!ndk_list_empty(&iw_reg)) {
        prov = ndk_list_entry(iw_reg.next, struct iw_provider, reg_link);
        prov->log_users++;
    }
    pthread_mutex_unlock(&iw_reg_lock);
    if (!prov)
        return;
    iw_vplog(prov, level, fmt, ap);
    pthread_mutex_lock(&iw_reg_lock);
    if (--prov->log_users == 0)
        pthread_cond_broadcast(&iw_reg_cond);
    pthread_mutex_unlock(&iw_reg_lock);
}

void iw_log(int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    iw_vlog_any(level, fmt, ap);
    va_end(ap);
}

void iw_dev_log(const struct iw_device *dev, int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (dev)
        iw_vplog(dev->prov, level, fmt, ap);
    else
        iw_vlog_any(level, fmt, ap);
    va_end(ap);
}

void iw_log_register(struct iw_provider *prov)
{
    pthread_mutex_lock(&iw_reg_lock);
    ndk_list_add_tail(&iw_reg, &prov->reg_link);
    pthread_mutex_unlock(&iw_reg_lock);
}

void iw_log_unregister(struct iw_provider *prov)
{
    pthread_mutex_lock(&iw_reg_lock);
    ndk_list_del(&prov->reg_link);
    while (prov->log_users)
        pthread_cond_wait(&iw_reg_cond, &iw_reg_lock);
    pthread_mutex_unlock(&iw_reg_lock);
}
