/* ndk_prov_obj.c - the object base: reference counts, antecedents, close ordering (§5.1). The
 * rules and their reasons are in ndk_prov_obj.h. */
#include "ndk_prov_obj.h"

#include <string.h>

#include "ndk_prov_adapter.h"

void ndk_prov_obj_init(struct ndk_prov_obj *o, struct ndk_prov_adapter *ad, NDK_OBJECT_HEADER *hdr,
                       NDK_OBJECT_TYPE type, const void *dispatch)
{
    memset(o, 0, sizeof(*o));
    o->adapter = ad;
    o->hdr = hdr;
    atomic_init(&o->refs, 1);
    atomic_init(&o->closing, false);

    memset(hdr, 0, sizeof(*hdr));
    hdr->Version = ad->version;
    hdr->ObjectType = type;
    /* Every public object struct is { Header; Dispatch } (§1.5). */
    *(const void **)((char *)hdr + sizeof(NDK_OBJECT_HEADER)) = dispatch;
    ndk_prov_adapter_hold(ad);
}

bool ndk_prov_obj_tryget(struct ndk_prov_obj *o)
{
    int r = atomic_load(&o->refs);

    while (r > 0)
        if (atomic_compare_exchange_weak(&o->refs, &r, r + 1))
            return true;
    return false;
}

void ndk_prov_obj_put(struct ndk_prov_obj *o)
{
    /* The close holds the consumer's reference until it decided, so reaching zero here means
     * the close returned (or will return) STATUS_PENDING. */
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
        o->adapter->hooks->queue(o);
}

void ndk_prov_obj_set_ante(struct ndk_prov_obj *o, int slot, struct ndk_prov_obj *ante)
{
    struct ndk_prov_obj *old = o->ante[slot];

    if (ante)
        ndk_prov_obj_get(ante);
    o->ante[slot] = ante;
    if (old)
        ndk_prov_obj_put(old);
}

/* Destroys the object, then calls the completion (when given), then releases the antecedents
 * and the adapter's count, in that order (ndk_prov_obj.h). Any thread hooks allow, no lock. */
static void ndk_prov_obj_finish(struct ndk_prov_obj *o, NDK_FN_CLOSE_COMPLETION cb, void *ctx)
{
    struct ndk_prov_adapter *ad = o->adapter;
    struct ndk_prov_obj *ante[NDK_PROV_OBJ_MAX_ANTE];

    memcpy(ante, o->ante, sizeof ante);
    ad->hooks->destroy(o);   /* frees o */
    if (cb)
        cb(ctx);
    for (int i = 0; i < NDK_PROV_OBJ_MAX_ANTE; i++)
        if (ante[i])
            ndk_prov_obj_put(ante[i]);
    ndk_prov_adapter_release(ad);
}

void ndk_prov_obj_run_close(struct ndk_prov_obj *o)
{
    if (o->adapter->hooks->quiesce)
        o->adapter->hooks->quiesce(o);
    ndk_prov_obj_finish(o, o->close_cb, o->close_ctx);
}

NTSTATUS ndk_prov_obj_close(struct ndk_prov_obj *o, NDK_FN_CLOSE_COMPLETION cb, void *ctx)
{
    const struct ndk_prov_obj_hooks *h = o->adapter->hooks;

    o->close_cb = cb;
    o->close_ctx = ctx;
    atomic_store_explicit(&o->closing, true, memory_order_release);
    if (h->close_start)
        h->close_start(o);
    if (h->always_defer) {
        ndk_prov_obj_put(o);
        return STATUS_PENDING;
    }
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
        return STATUS_PENDING;
    if (h->quiesce)
        h->quiesce(o);
    ndk_prov_obj_finish(o, NULL, NULL);
    return STATUS_SUCCESS;
}

void ndk_prov_obj_abort_create(struct ndk_prov_obj *o)
{
    o->close_cb = NULL;
    atomic_store(&o->closing, true);
    if (o->adapter->hooks->always_defer)
        ndk_prov_obj_put(o);
    else if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
        ndk_prov_obj_finish(o, NULL, NULL);
}

NTSTATUS ndk_prov_obj_query_extension(NDK_OBJECT_HEADER *o, GUID *id, NDK_VERSION v, NDK_EXTENSION_INTERFACE *out)
{
    (void)o;
    (void)id;
    (void)v;
    (void)out;
    return STATUS_NOT_SUPPORTED;
}
