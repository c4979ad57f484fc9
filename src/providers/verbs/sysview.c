/* sysview.c - the verbs provider's part of the system view (ndk/sysview.h, ndk-sysview(7)):
 * one record per object, asked of the runtime at create and given back at destroy, and the
 * adapter's NDK counters, which are this process's software counters and so live in the
 * adapter record (the runtime sums every process's for OID_NDK_STATISTICS). The descriptive
 * fields are written where the state changes (connector.c, qp.c, mr.c, mw.c, listener.c,
 * endpoint.c), the counters by the poster and the poller under the locks they already hold. */
#include "verbs.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof(NDIS_NDK_PERFORMANCE_COUNTERS) == NDK_SV_COUNTERS * sizeof(uint64_t),
              "the adapter record's counters are NDIS_NDK_PERFORMANCE_COUNTERS");

bool vb_sv_services(const NDK_RUNTIME_SERVICES *s)
{
    return s && s->Size >= offsetof(NDK_RUNTIME_SERVICES, SysviewAdapter) + sizeof(void *) && s->SysviewAlloc &&
           s->SysviewFree && s->SysviewAdapter;
}

/* Bind time (InitializeHandler), no lock: the counters go to the adapter record when the
 * runtime has one, else to the device's own words. */
void vb_sv_device_init(struct vb_device *dev)
{
    const NDK_RUNTIME_SERVICES *s = dev->prov->drv.services;
    struct ndk_sv_rec *a = NULL;

    dev->cnt = dev->own_cnt;
    dev->sv = vb_sv_services(s);
    if (dev->sv)
        a = s->SysviewAdapter(dev->miniport_handle);
    if (!a || a->type != NDK_SV_ADAPTER)
        return;
    ndk_sv_begin(a);
    a->u.adapter.flags |= NDK_SV_ADAPTER_COUNTERS;
    ndk_sv_end(a);
    dev->cnt = a->u.adapter.counters;
}

/* Create time, any thread, no provider lock needed (the runtime takes its own briefly). */
struct ndk_sv_rec *vb_sv_alloc(struct vb_device *dev, uint16_t type)
{
    if (!dev->sv)
        return NULL;
    return dev->prov->drv.services->SysviewAlloc(dev->miniport_handle, type);
}

void vb_sv_free(struct vb_device *dev, struct ndk_sv_rec *rec)
{
    if (rec && dev->sv)
        dev->prov->drv.services->SysviewFree(dev->miniport_handle, rec);
}

uint64_t vb_sv_id(const struct ndk_sv_rec *rec)
{
    return rec ? rec->id : 0;
}

/* Between ndk_sv_begin and ndk_sv_end. */
void vb_sv_name(char dst[16], const char *name)
{
    size_t n = strlen(name);

    if (n > 15)
        n = 15;
    memcpy(dst, name, n);
    memset(dst + n, 0, 16 - n);
}

/* An address without anything but family, port, scope and the address bytes; NULL clears it. */
void vb_sv_addr(struct ndk_sv_addr *out, const struct sockaddr *sa)
{
    memset(out, 0, sizeof(*out));
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        out->family = AF_INET;
        out->port = ntohs(in->sin_port);
        memcpy(out->addr, &in->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        out->family = AF_INET6;
        out->port = ntohs(in6->sin6_port);
        out->scope_id = in6->sin6_scope_id;
        memcpy(out->addr, &in6->sin6_addr, 16);
    }
}

/* The post time of a request: the coarse clock is a vDSO read of the kernel's tick, no system
 * call and no lock; its few milliseconds of resolution are enough for an age. */
uint64_t vb_sv_now(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts))
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The first protocol error of a QP, kept: one word, so no sequence lock is needed. True for
 * the first (an error completion, so never on the successful data path). */
bool vb_sv_qp_error(struct ndk_sv_rec *rec, int err)
{
    int32_t none = 0;

    return rec && __atomic_compare_exchange_n(&rec->u.qp.first_error, &none, (int32_t)err, false, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED);
}

/* A work completion status as the -errno of the QP's first error. */
int vb_sv_wc_errno(enum ibv_wc_status st)
{
    switch (st) {
    case IBV_WC_SUCCESS: return 0;
    case IBV_WC_LOC_LEN_ERR: case IBV_WC_REM_INV_REQ_ERR: case IBV_WC_LOC_QP_OP_ERR: return -EINVAL;
    case IBV_WC_LOC_PROT_ERR: case IBV_WC_REM_ACCESS_ERR: case IBV_WC_MW_BIND_ERR: return -EACCES;
    case IBV_WC_RETRY_EXC_ERR: case IBV_WC_RESP_TIMEOUT_ERR: return -ETIMEDOUT;
    case IBV_WC_RNR_RETRY_EXC_ERR: return -ENOBUFS;
    case IBV_WC_REM_ABORT_ERR: case IBV_WC_REM_OP_ERR: return -ECONNABORTED;
    case IBV_WC_WR_FLUSH_ERR: return -ECANCELED;
    default: return -EIO;
    }
}
