/*
 * lookaside.c - lookaside lists ("ExInitializeLookasideListEx function (wdm.h)",
 * "ExInitializeNPagedLookasideList function (wdm.h)"): fixed-size entries kept on a LIFO cache
 * (at most 256) in a kit object the driver's LOOKASIDE_LIST_EX / NPAGED_LOOKASIDE_LIST points
 * to. Entries come from the driver's allocate routine, or from pool with the list's tag when it
 * gave none, and go back through its free routine when the cache is full or the list is
 * deleted. A list not deleted by unload is reported with its entries still handed out; entries
 * handed out from a deleted list are pool like any other and reported by tag.
 */
#include <stdlib.h>
#include "wdk_internal.h"

#undef ExInitializeLookasideListEx
#undef ExInitializeNPagedLookasideList
#undef ExInitializePagedLookasideList
#undef ExAllocateFromLookasideListEx
#undef ExAllocateFromNPagedLookasideList
#undef ExAllocateFromPagedLookasideList

#define CACHE_MAX 256
#define LA_MAGIC 0x4c6f6f6bu

struct la {
    uint32_t magic;
    PVOID storage;                     /* the driver's list structure */
    PALLOCATE_FUNCTION_EX alloc_ex;
    PFREE_FUNCTION_EX free_ex;
    PALLOCATE_FUNCTION alloc;
    PFREE_FUNCTION free_fn;
    POOL_TYPE type;
    SIZE_T size;
    ULONG tag;
    const char *site;
    const char *api;
    pthread_mutex_t lock;              /* guards cache and outstanding; never held in callbacks */
    unsigned ncache;
    long outstanding;
    void *cache[CACHE_MAX];
    struct la *next;                   /* live lists, under lists_lock */
};

static pthread_mutex_t lists_lock = PTHREAD_MUTEX_INITIALIZER;
static struct la *lists;

NTSTATUS wdk_lookaside_init_at(PVOID Storage, PALLOCATE_FUNCTION_EX AllocateEx, PFREE_FUNCTION_EX FreeEx,
                               PALLOCATE_FUNCTION Allocate, PFREE_FUNCTION Free, POOL_TYPE PoolType, ULONG Flags,
                               SIZE_T Size, ULONG Tag, const char *api, const char *site)
{
    int ex = !Allocate && !Free && (AllocateEx || FreeEx || !strcmp(api, "ExInitializeLookasideListEx"));
    if (ex && (Flags & ~(EX_LOOKASIDE_LIST_EX_FLAGS_RAISE_ON_FAIL | EX_LOOKASIDE_LIST_EX_FLAGS_FAIL_NO_RAISE) ||
               (Flags & EX_LOOKASIDE_LIST_EX_FLAGS_RAISE_ON_FAIL && Flags & EX_LOOKASIDE_LIST_EX_FLAGS_FAIL_NO_RAISE)))
        return STATUS_INVALID_PARAMETER_5;
    if (Size < LOOKASIDE_MINIMUM_BLOCK_SIZE)
        Size = LOOKASIDE_MINIMUM_BLOCK_SIZE;
    struct la *l = wdk_mem_alloc(sizeof *l, 1, Tag, WDK_MEM_LOOKASIDE, api, site);
    if (!l) {
        ((LOOKASIDE_LIST_EX *)Storage)->KitState = NULL;
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    l->magic = LA_MAGIC;
    l->storage = Storage;
    l->alloc_ex = AllocateEx;
    l->free_ex = FreeEx;
    l->alloc = Allocate;
    l->free_fn = Free;
    l->type = PoolType;
    l->size = Size;
    l->tag = Tag;
    l->site = site;
    l->api = api;
    pthread_mutex_init(&l->lock, NULL);
    ((LOOKASIDE_LIST_EX *)Storage)->KitState = l;
    pthread_mutex_lock(&lists_lock);
    l->next = lists;
    lists = l;
    pthread_mutex_unlock(&lists_lock);
    return STATUS_SUCCESS;
}

/* The kit object of a list, or NULL (reported) when the storage was never initialised or the
 * list was deleted. */
static struct la *la_of(PVOID Storage, const char *site)
{
    struct la *l = Storage ? ((LOOKASIDE_LIST_EX *)Storage)->KitState : NULL;
    int live = 0;
    pthread_mutex_lock(&lists_lock);
    for (struct la *o = lists; o; o = o->next)
        if (o == l && o->storage == Storage)
            live = 1;
    pthread_mutex_unlock(&lists_lock);
    if (!live) {
        wdk_verify_report("LOOKASIDE_INVALID", site, "lookaside list %p is not initialized (or was deleted)", Storage);
        return NULL;
    }
    return l;
}

static void *entry_alloc(struct la *l)
{
    if (l->alloc_ex)
        return l->alloc_ex(l->type, l->size, l->tag, (PLOOKASIDE_LIST_EX)l->storage);
    if (l->alloc)
        return l->alloc(l->type, l->size, l->tag);
    return wdk_pool_alloc_type_at(l->type, l->size, l->tag, FALSE, l->api, l->site);
}

static void entry_free(struct la *l, void *p)
{
    if (l->free_ex)
        l->free_ex(p, (PLOOKASIDE_LIST_EX)l->storage);
    else if (l->free_fn)
        l->free_fn(p);
    else
        wdk_pool_free_at(p, l->tag, TRUE, l->site);
}

PVOID wdk_lookaside_alloc_at(PVOID Storage, const char *site)
{
    struct la *l = la_of(Storage, site);
    if (!l)
        return NULL;
    if (wdk_irql_get() > DISPATCH_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", site, "lookaside allocation at IRQL %u", wdk_irql_get());
    void *p = NULL;
    pthread_mutex_lock(&l->lock);
    if (l->ncache)
        p = l->cache[--l->ncache];
    pthread_mutex_unlock(&l->lock);
    if (!p)
        p = entry_alloc(l);
    if (p) {
        pthread_mutex_lock(&l->lock);
        l->outstanding++;
        pthread_mutex_unlock(&l->lock);
    }
    return p;
}

static void la_free(PVOID Storage, PVOID Entry, const char *site)
{
    struct la *l = la_of(Storage, site);
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->outstanding--;
    if (l->ncache < CACHE_MAX) {
        l->cache[l->ncache++] = Entry;
        Entry = NULL;
    }
    pthread_mutex_unlock(&l->lock);
    if (Entry)
        entry_free(l, Entry);
}

/* Lock (lists_lock) not held. Frees the cached entries. */
static void la_flush(struct la *l)
{
    for (;;) {
        pthread_mutex_lock(&l->lock);
        void *p = l->ncache ? l->cache[--l->ncache] : NULL;
        pthread_mutex_unlock(&l->lock);
        if (!p)
            break;
        entry_free(l, p);
    }
}

static void la_delete(PVOID Storage, const char *site)
{
    struct la *l = la_of(Storage, site);
    if (!l)
        return;
    pthread_mutex_lock(&lists_lock);
    for (struct la **pp = &lists; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    pthread_mutex_unlock(&lists_lock);
    la_flush(l);
    ((LOOKASIDE_LIST_EX *)Storage)->KitState = NULL;
    pthread_mutex_destroy(&l->lock);
    wdk_mem_free(l, WDK_MEM_LOOKASIDE, NULL);
}

NTSTATUS ExInitializeLookasideListEx(PLOOKASIDE_LIST_EX Lookaside, PALLOCATE_FUNCTION_EX Allocate,
                                     PFREE_FUNCTION_EX Free, POOL_TYPE PoolType, ULONG Flags, SIZE_T Size, ULONG Tag,
                                     USHORT Depth)
{
    return wdk_lookaside_init_at(Lookaside, Allocate, Free, NULL, NULL, PoolType, Flags, Size, Tag,
                                 "ExInitializeLookasideListEx", WDK_CALLER);
}

VOID ExDeleteLookasideListEx(PLOOKASIDE_LIST_EX Lookaside) { la_delete(Lookaside, WDK_CALLER); }

VOID ExFlushLookasideListEx(PLOOKASIDE_LIST_EX Lookaside)
{
    struct la *l = la_of(Lookaside, WDK_CALLER);
    if (l)
        la_flush(l);
}

PVOID ExAllocateFromLookasideListEx(PLOOKASIDE_LIST_EX Lookaside) { return wdk_lookaside_alloc_at(Lookaside, WDK_CALLER); }
VOID ExFreeToLookasideListEx(PLOOKASIDE_LIST_EX Lookaside, PVOID Entry) { la_free(Lookaside, Entry, WDK_CALLER); }

VOID ExInitializeNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside, PALLOCATE_FUNCTION Allocate,
                                     PFREE_FUNCTION Free, ULONG Flags, SIZE_T Size, ULONG Tag, USHORT Depth)
{
    wdk_lookaside_init_at(Lookaside, NULL, NULL, Allocate, Free, NonPagedPoolNx, Flags, Size, Tag,
                          "ExInitializeNPagedLookasideList", WDK_CALLER);
}

VOID ExDeleteNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside) { la_delete(Lookaside, WDK_CALLER); }
PVOID ExAllocateFromNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside)
{
    return wdk_lookaside_alloc_at(Lookaside, WDK_CALLER);
}
VOID ExFreeToNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside, PVOID Entry) { la_free(Lookaside, Entry, WDK_CALLER); }

VOID ExInitializePagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside, PALLOCATE_FUNCTION Allocate, PFREE_FUNCTION Free,
                                    ULONG Flags, SIZE_T Size, ULONG Tag, USHORT Depth)
{
    wdk_lookaside_init_at(Lookaside, NULL, NULL, Allocate, Free, PagedPool, Flags, Size, Tag,
                          "ExInitializePagedLookasideList", WDK_CALLER);
}

VOID ExDeletePagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside) { la_delete(Lookaside, WDK_CALLER); }
PVOID ExAllocateFromPagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside)
{
    return wdk_lookaside_alloc_at(Lookaside, WDK_CALLER);
}
VOID ExFreeToPagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside, PVOID Entry) { la_free(Lookaside, Entry, WDK_CALLER); }

void wdk_lookaside_check(void)
{
    for (;;) {
        pthread_mutex_lock(&lists_lock);
        struct la *l = lists;
        pthread_mutex_unlock(&lists_lock);
        if (!l)
            break;
        char tb[8];
        wdk_verify_report("LOOKASIDE_NOT_DELETED", l->site,
                          "lookaside list with tag '%s' (entries of %zu bytes, %ld still handed out) was not deleted "
                          "by DriverUnload",
                          wdk_tag_str(l->tag, tb), (size_t)l->size, l->outstanding);
        la_delete(l->storage, l->site);
    }
}
