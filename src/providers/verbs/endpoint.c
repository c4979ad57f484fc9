/* endpoint.c - shared endpoints (§2.3 NdkCreateSharedEndpoint, map §1.7): a placeholder rdma_cm
 * id with RDMA_OPTION_ID_REUSEADDR holds address:port; every NdkConnectWithSharedEndpoint binds
 * its own REUSEADDR id to the same address. rdma_cm shares a port only among REUSEADDR ids, so
 * plain binds and listeners on it still conflict (STATUS_SHARING_VIOLATION). */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static NTSTATUS vb_sep_local(NDK_SHARED_ENDPOINT *e, PSOCKADDR out, ULONG *len)
{
    return vb_sa_copy_out((struct sockaddr *)&to_vb_sep(e)->addr, out, len);
}

/* The same port on an overlapping address (equal, or either one the wildcard). dev->lock held. */
static bool vb_sep_clash(struct vb_device *dev, const SOCKADDR_INET *a)
{
    struct ndk_list *pos;

    ndk_list_for_each(pos, &dev->seps) {
        const SOCKADDR_INET *b = &ndk_list_entry(pos, struct vb_sep, link)->addr;
        if (a->si_family != b->si_family)
            continue;
        if (a->si_family == AF_INET6 ? a->Ipv6.sin6_port == b->Ipv6.sin6_port &&
                                           (vb_sa_is_wildcard((const struct sockaddr *)a) ||
                                            vb_sa_is_wildcard((const struct sockaddr *)b) ||
                                            !memcmp(&a->Ipv6.sin6_addr, &b->Ipv6.sin6_addr, 16))
                                     : a->Ipv4.sin_port == b->Ipv4.sin_port &&
                                           (!a->Ipv4.sin_addr.s_addr || !b->Ipv4.sin_addr.s_addr ||
                                            a->Ipv4.sin_addr.s_addr == b->Ipv4.sin_addr.s_addr))
            return true;
    }
    return false;
}

static void vb_sep_destroy(struct vb_obj *o)
{
    struct vb_sep *sep = ndk_container_of(o, struct vb_sep, obj);

    vb_obj_sv_free(o);
    pthread_mutex_lock(&o->dev->lock);
    if (sep->link.next)
        ndk_list_del(&sep->link);
    pthread_mutex_unlock(&o->dev->lock);
    vb_cm_destroy_id(sep->id);
    free(sep);
}

static const struct vb_obj_ops vb_sep_ops = { .destroy = vb_sep_destroy };

static NTSTATUS vb_sep_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return vb_obj_close(&to_vb_sep((NDK_SHARED_ENDPOINT *)h)->obj, cb, ctx);
}

static const NDK_SHARED_ENDPOINT_DISPATCH vb_sep_dispatch = {
    .NdkCloseSharedEndpoint = vb_sep_close,
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkGetLocalAddress = vb_sep_local,
};

NTSTATUS vb_sep_create(NDK_ADAPTER *a, CONST PSOCKADDR addr, ULONG len, NDK_FN_CREATE_COMPLETION cb, PVOID ctx,
                       NDK_SHARED_ENDPOINT **out)
{
    struct vb_adapter *ad = to_vb_adapter(a);
    struct vb_device *dev = ad->dev;
    struct vb_sep *sep;
    struct sockaddr *sa;
    int err;

    (void)cb;
    (void)ctx;
    if (!out || vb_sa_check(addr, len))
        return STATUS_INVALID_PARAMETER;
    if (!vb_device_has_address(dev, addr))
        return STATUS_INVALID_ADDRESS;
    sep = calloc(1, sizeof(*sep));
    if (!sep)
        return STATUS_INSUFFICIENT_RESOURCES;
    vb_obj_init(&sep->obj, &vb_sep_ops, VB_OBJ_SEP, ad, &sep->ndk.Header, &vb_sep_dispatch);
    err = vb_cm_create_id(dev, &sep->obj, &sep->id);
    if (!err && rdma_set_option(sep->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &(int){ 1 }, sizeof(int)))
        err = -errno;
    if (!err)
        err = vb_cm_bind(sep->id, addr);
    if (err) {
        bool port0 = (addr->sa_family == AF_INET6 ? ((struct sockaddr_in6 *)addr)->sin6_port
                                                  : ((struct sockaddr_in *)addr)->sin_port) == 0;
        vb_obj_abort_create(&sep->obj);
        return vb_status_from_bind(err, port0);
    }
    if (sep->id->verbs && sep->id->verbs != dev->ctx) {
        vb_obj_abort_create(&sep->obj);
        return STATUS_INVALID_ADDRESS;
    }
    sa = rdma_get_local_addr(sep->id);
    memcpy(&sep->addr, sa, vb_sa_len(sa));
    /* rdma_cm lets REUSEADDR ids share a port; NDK shared endpoints may not (§2.3). */
    pthread_mutex_lock(&dev->lock);
    if (vb_sep_clash(dev, &sep->addr)) {
        pthread_mutex_unlock(&dev->lock);
        vb_obj_abort_create(&sep->obj);
        return STATUS_SHARING_VIOLATION;
    }
    ndk_list_add_tail(&dev->seps, &sep->link);
    pthread_mutex_unlock(&dev->lock);
    if (sep->obj.sv) {
        ndk_sv_begin(sep->obj.sv);
        vb_sv_name(sep->obj.sv->u.ep.state, "BOUND");
        vb_sv_addr(&sep->obj.sv->u.ep.local, (const struct sockaddr *)&sep->addr);
        ndk_sv_end(sep->obj.sv);
    }
    *out = &sep->ndk;
    return STATUS_SUCCESS;
}
