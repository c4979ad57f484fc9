/* ndk_prov_obj: the provider-side object base shared by the providers: reference counts,
 * antecedents and close ordering (NDKPI §5.1, §0.4).
 *
 * The rules, and why:
 *  - refs: 1 for the consumer's handle (dropped by the close), +1 per successor (taken through
 *    ndk_prov_obj_set_ante on the successor), +1 per in-flight request, work item or running
 *    callback that names the object.
 *  - The last reference drop after a close queues the finish to the provider's progress thread
 *    (hooks->queue), never runs it on the dropping thread: consumer callbacks stay out of
 *    consumer calls, so a consumer holding its own lock around NdkCloseXxx cannot deadlock
 *    against its close completion.
 *  - The finish: quiesce (flush what is still queued, so it completes first), destroy (the
 *    object's resources are gone before the consumer hears it is closed), the close
 *    completion, and only then the antecedent references and the adapter's object count: an
 *    antecedent's close never completes while a successor's close completion still runs, and
 *    the blocking adapter close waits for every completion to return (§2.2).
 *  - A provider that may destroy on any thread lets a close that drops the last reference
 *    finish inline and return STATUS_SUCCESS without a callback; one that destroys only on its
 *    progress thread (always_defer) returns STATUS_PENDING from every close.
 *
 * The provider's object struct embeds struct ndk_prov_obj and keeps its own fields (type, device,
 * work item, ids); its hooks reach its struct with ndk_container_of. */
#ifndef NDK_PROV_OBJ_H
#define NDK_PROV_OBJ_H

#include <stdatomic.h>
#include <stdbool.h>

#include <ndkpi.h>

#include "ndk_list.h"

#define NDK_PROV_OBJ_MAX_ANTE 4          /* a QP: PD, receive CQ, initiator CQ, SRQ */

struct ndk_prov_obj;
struct ndk_prov_adapter;

/* A provider's hooks, one table per provider (the adapter names it). */
struct ndk_prov_obj_hooks {
    /* Queues o's finish to the progress thread, whose work function then calls
     * ndk_prov_obj_run_close(o). Any thread, any lock held except the provider's work-queue
     * lock; never blocks. */
    void (*queue)(struct ndk_prov_obj *o);
    /* Close side effects due at once (§5.1 rule 3). Consumer's thread, no lock held; must not
     * call consumer callbacks inline. Optional. */
    void (*close_start)(struct ndk_prov_obj *o);
    /* After the last reference, before the close completion: flushes what is still queued.
     * Any thread allowed by always_defer, no lock held, antecedents alive. Optional. */
    void (*quiesce)(struct ndk_prov_obj *o);
    /* Frees the object's resources and the object. Same context as quiesce. */
    void (*destroy)(struct ndk_prov_obj *o);
    /* true: every close returns STATUS_PENDING and every finish runs on the progress thread. */
    bool always_defer;
};

struct ndk_prov_obj {
    struct ndk_prov_adapter *adapter; /* counts the object until its finish is done */
    NDK_OBJECT_HEADER *hdr;           /* the public header */
    atomic_int refs;
    atomic_bool closing;              /* NdkCloseXxx was called (or internal teardown) */
    NDK_FN_CLOSE_COMPLETION close_cb; /* set before the consumer's reference is dropped */
    void *close_ctx;
    struct ndk_prov_obj *ante[NDK_PROV_OBJ_MAX_ANTE];   /* each holds one reference */
};

/* Sets up the base and the public header (§1.4: Version = the adapter's, ObjectType, zeroed
 * NdkReserved; §1.5: the Dispatch that follows the header) and counts the object on the
 * adapter. refs starts at 1 (the consumer). Creating thread; takes the adapter's lock. */
void ndk_prov_obj_init(struct ndk_prov_obj *o, struct ndk_prov_adapter *ad, NDK_OBJECT_HEADER *hdr,
                       NDK_OBJECT_TYPE type, const void *dispatch);

/* Any thread, any lock; never blocks. */
static inline void ndk_prov_obj_get(struct ndk_prov_obj *o)
{
    atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
}

/* A reference unless the object is already finishing (refs at 0). Any thread, any lock. */
bool ndk_prov_obj_tryget(struct ndk_prov_obj *o);

/* Drops a reference; the last one queues the finish. Any thread, any lock held except the
 * provider's work-queue lock; never blocks. */
void ndk_prov_obj_put(struct ndk_prov_obj *o);

/* Takes a reference on ante (may be NULL) and stores it in slot, dropping what was there.
 * Any thread; the caller serializes the calls for one object. */
void ndk_prov_obj_set_ante(struct ndk_prov_obj *o, int slot, struct ndk_prov_obj *ante);

/* The common NdkCloseXxx: records the completion, marks closing, runs close_start, drops the
 * consumer's reference. STATUS_SUCCESS when that finished the object inline (no callback),
 * else STATUS_PENDING (the completion follows exactly once, on the progress thread). Consumer's
 * thread or a callback, no provider lock held; never blocks. */
NTSTATUS ndk_prov_obj_close(struct ndk_prov_obj *o, NDK_FN_CLOSE_COMPLETION cb, void *ctx);

/* Undoes a create that failed after ndk_prov_obj_init: no completion. Creating thread. */
void ndk_prov_obj_abort_create(struct ndk_prov_obj *o);

/* The queued finish: quiesce, destroy, close completion, antecedents, adapter count.
 * Progress thread (from the work function hooks->queue armed), no lock held. */
void ndk_prov_obj_run_close(struct ndk_prov_obj *o);

static inline bool ndk_prov_obj_closing(const struct ndk_prov_obj *o)
{
    return atomic_load_explicit(&o->closing, memory_order_acquire);
}

/* NdkQueryExtension for every table: no extension interfaces are defined (§2.1), so none is
 * implemented. Any thread. */
NTSTATUS ndk_prov_obj_query_extension(NDK_OBJECT_HEADER *o, GUID *id, NDK_VERSION v, NDK_EXTENSION_INTERFACE *out);

/* The header names an object of that type (a consumer-passed handle's sanity check). */
static inline bool ndk_prov_obj_check(const NDK_OBJECT_HEADER *hdr, NDK_OBJECT_TYPE type)
{
    return hdr && hdr->ObjectType == type;
}

/* A provider's typed face of the base, for an object struct T that embeds struct ndk_prov_obj as
 * `base`: P##_get, _put, _tryget, _set_ante, _ante (the antecedent in a slot, or NULL), _close,
 * _abort_create, _closing, each the ndk_prov_obj_ function of that name (same contexts). */
#define NDK_PROV_OBJ_TYPED(P, T)                                                                   \
    static inline void P##_get(T *o) { ndk_prov_obj_get(&o->base); }                              \
    static inline void P##_put(T *o) { ndk_prov_obj_put(&o->base); }                              \
    static inline bool P##_tryget(T *o) { return ndk_prov_obj_tryget(&o->base); }                 \
    static inline void P##_set_ante(T *o, int slot, T *ante)                                       \
    {                                                                                              \
        ndk_prov_obj_set_ante(&o->base, slot, ante ? &ante->base : NULL);                          \
    }                                                                                              \
    static inline T *P##_ante(const T *o, int slot)                                                \
    {                                                                                              \
        return o->base.ante[slot] ? ndk_container_of(o->base.ante[slot], T, base) : NULL;          \
    }                                                                                              \
    static inline NTSTATUS P##_close(T *o, NDK_FN_CLOSE_COMPLETION cb, void *ctx)                  \
    {                                                                                              \
        return ndk_prov_obj_close(&o->base, cb, ctx);                                              \
    }                                                                                              \
    static inline void P##_abort_create(T *o) { ndk_prov_obj_abort_create(&o->base); }            \
    static inline bool P##_closing(const T *o) { return ndk_prov_obj_closing(&o->base); }

/* Defines `const struct ndk_prov_obj_hooks NAME` for an object struct T that embeds struct
 * ndk_prov_obj as `base` and names its typed operations `ops` (members close_start, quiesce,
 * destroy, each taking T *; the first two may be NULL). QUEUE(T *) queues the finish to the
 * progress thread (whose work function calls ndk_prov_obj_run_close); DEFER is always_defer.
 * The contexts are those of struct ndk_prov_obj_hooks. */
#define NDK_PROV_OBJ_HOOK_(NAME, T, OP)                                                            \
    static void NAME##_##OP(struct ndk_prov_obj *b)                                                \
    {                                                                                              \
        T *o = ndk_container_of(b, T, base);                                                       \
        if (o->ops->OP)                                                                            \
            o->ops->OP(o);                                                                         \
    }
#define NDK_PROV_OBJ_HOOKS(NAME, T, QUEUE, DEFER)                                                  \
    static void NAME##_queue(struct ndk_prov_obj *b) { QUEUE(ndk_container_of(b, T, base)); }      \
    NDK_PROV_OBJ_HOOK_(NAME, T, close_start)                                                       \
    NDK_PROV_OBJ_HOOK_(NAME, T, quiesce)                                                           \
    NDK_PROV_OBJ_HOOK_(NAME, T, destroy)                                                           \
    const struct ndk_prov_obj_hooks NAME = {                                                       \
        .queue = NAME##_queue,                                                                     \
        .close_start = NAME##_close_start,                                                         \
        .quiesce = NAME##_quiesce,                                                                 \
        .destroy = NAME##_destroy,                                                                 \
        .always_defer = (DEFER),                                                                   \
    }

#endif
