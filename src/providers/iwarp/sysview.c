/* sysview.c - what the provider publishes in the system view (ndk/sysview.h, ndk-iwarp(7)
 * "System view"): the adapter's NDK counters live in the runtime's adapter record, and every
 * object has a record of its own from create to destroy.
 *
 * The records come from the runtime's SysviewAlloc (NDK_RUNTIME_SERVICES); a runtime older than
 * the system view, or a device made without one (the data-path tests), gets private memory
 * nobody else reads, so the object files never check. Which fields each object writes, and
 * under which of its locks, is said where it writes them.
 *
 * Talks to: the runtime's services. Called by obj.c (every object) and adapter.c (the device). */
#include "iwarp.h"

#include <stdlib.h>
#include <string.h>

/* The record of objects created while out of memory: its counters take anyone's adds (relaxed
 * atomics, values meaningless), its description is never written (iw_sv_desc). */
static struct ndk_sv_rec iw_sv_sink;

static const uint16_t iw_sv_type[] = {
    [IW_OBJ_PD] = NDK_SV_PD, [IW_OBJ_CQ] = NDK_SV_CQ, [IW_OBJ_SRQ] = NDK_SV_SRQ, [IW_OBJ_QP] = NDK_SV_QP,
    [IW_OBJ_MR] = NDK_SV_MR, [IW_OBJ_MW] = NDK_SV_MW, [IW_OBJ_CONNECTOR] = NDK_SV_CONNECTOR,
    [IW_OBJ_LISTENER] = NDK_SV_LISTENER, [IW_OBJ_SHARED_ENDPOINT] = NDK_SV_SHARED_ENDPOINT,
};

/* The runtime's services when they include the system view, else NULL. Any thread. */
static const NDK_RUNTIME_SERVICES *iw_sv_services(const struct iw_device *dev)
{
    const NDK_RUNTIME_SERVICES *s = dev->prov ? dev->prov->drv.services : NULL;

    if (!s || s->Size < offsetof(NDK_RUNTIME_SERVICES, SysviewAdapter) + sizeof(void *) || !s->SysviewAlloc ||
        !s->SysviewFree || !s->SysviewAdapter)
        return NULL;
    return s;
}

void iw_sv_device_init(struct iw_device *dev)
{
    const NDK_RUNTIME_SERVICES *s = iw_sv_services(dev);
    struct ndk_sv_rec *r = s ? s->SysviewAdapter(dev->miniport_handle) : NULL;

    dev->ndk = &dev->counters.ndk;
    dev->sv = r;
    if (!r)
        return;
    /* The record's words start at zero (one record per process and adapter); from here on they
     * are the only copy, and the runtime sums every process's for OID_NDK_STATISTICS. */
    dev->ndk = (struct iw_ndk_counters *)(void *)r->u.adapter.counters;
    __atomic_fetch_or(&r->u.adapter.flags, NDK_SV_ADAPTER_COUNTERS, __ATOMIC_RELEASE);
}

struct ndk_sv_rec *iw_sv_alloc(struct iw_device *dev, enum iw_obj_type type, uint8_t *kind)
{
    const NDK_RUNTIME_SERVICES *s = iw_sv_services(dev);
    uint16_t t = (size_t)type < sizeof iw_sv_type / sizeof iw_sv_type[0] ? iw_sv_type[type] : 0;
    struct ndk_sv_rec *r;

    /* A device made without iw_device_create (the data-path tests' stub) counts in its own
     * words; its first object is created before any engine runs. */
    if (!dev->ndk)
        dev->ndk = &dev->counters.ndk;
    if (s && t) {
        r = s->SysviewAlloc(dev->miniport_handle, t);
        if (r) {
            *kind = IW_SV_RUNTIME;
            return r;
        }
    } else {
        r = calloc(1, sizeof *r);
        if (r) {
            r->type = t;
            *kind = IW_SV_PRIVATE;
            return r;
        }
    }
    *kind = IW_SV_SINK;
    return &iw_sv_sink;
}

void iw_sv_free(struct iw_device *dev, struct ndk_sv_rec *r, uint8_t kind)
{
    const NDK_RUNTIME_SERVICES *s;

    if (kind == IW_SV_PRIVATE) {
        free(r);
    } else if (kind == IW_SV_RUNTIME) {
        s = iw_sv_services(dev);
        if (s)
            s->SysviewFree(dev->miniport_handle, r);
    }
}

void iw_sv_set_state(char dst[16], const char *name)
{
    size_t n = strlen(name);

    if (n > 15)
        n = 15;
    memcpy(dst, name, n);
    memset(dst + n, 0, 16 - n);
}

void iw_sv_set_addr(struct ndk_sv_addr *dst, const SOCKADDR_INET *a)
{
    memset(dst, 0, sizeof *dst);
    if (a->si_family == AF_INET) {
        dst->family = AF_INET;
        dst->port = ntohs(a->Ipv4.sin_port);
        memcpy(dst->addr, &a->Ipv4.sin_addr, 4);
    } else if (a->si_family == AF_INET6) {
        dst->family = AF_INET6;
        dst->port = ntohs(a->Ipv6.sin6_port);
        dst->scope_id = a->Ipv6.sin6_scope_id;
        memcpy(dst->addr, &a->Ipv6.sin6_addr, 16);
    }
}
