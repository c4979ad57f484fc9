/*
 * pool.c - pool as a tagged heap ("ExAllocatePool2 function (wdm.h)", "ExAllocatePoolWithTag
 * function (wdm.h)"): every block carries a header with its tag, size, kind and allocating call
 * site, sits in a table of live blocks, and what is still live when the driver unloads is
 * reported, one line per kind and tag. The same tracking serves MDLs, work items, lookaside
 * lists and devices (their own kinds), so each leak is named by what the driver allocated.
 *
 * Alignment follows the WDK: 16 bytes, a whole page from PAGE_SIZE up. ExAllocatePool2 zeroes
 * unless POOL_FLAG_UNINITIALIZED and fails (NULL) on tag 0, unknown required flags, no or
 * several pool types; the older calls return uninitialised memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "wdk_internal.h"

#undef ExAllocatePool2
#undef ExAllocatePoolWithTag
#undef ExAllocatePoolWithTagPriority
#undef ExAllocatePoolWithQuotaTag
#undef ExAllocatePoolZero
#undef ExAllocatePoolUninitialized
#undef ExFreePool
#undef ExFreePoolWithTag
#undef ExFreePool2

#define WDK_MEM_MAGIC 0x57444b6d656d4f4bULL
#define HDR_SIZE 80
#define NBUCKETS 4096

struct mem_hdr {
    uint64_t magic;
    struct mem_hdr *hnext;             /* hash chain */
    struct mem_hdr *next, *prev;       /* live list, allocation order */
    void *base;                        /* what free() takes */
    size_t size;
    ULONG tag;
    uint32_t kind;
    const char *api;
    const char *site;
};
_Static_assert(sizeof(struct mem_hdr) <= HDR_SIZE, "header fits its slot");

/* mem_lock guards the hash table and the live list; leaf lock (nothing is called under it). */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_hdr *buckets[NBUCKETS];
static struct mem_hdr live = { .next = &live, .prev = &live };

static unsigned bucket_of(const void *p)
{
    return (unsigned)(((uintptr_t)p >> 4) * 2654435761u) % NBUCKETS;
}

static struct mem_hdr *hdr_of(const void *p)
{
    return (struct mem_hdr *)((char *)p - HDR_SIZE);
}

void *wdk_mem_alloc(size_t size, int zero, ULONG tag, enum wdk_mem_kind kind, const char *api, const char *site)
{
    if (size > ((size_t)1 << 40))
        return NULL;
    size_t align = size >= PAGE_SIZE ? PAGE_SIZE : 16;
    size_t lead = align > HDR_SIZE ? align : HDR_SIZE;
    void *base = NULL;
    if (posix_memalign(&base, align, lead + size + (size == 0)))
        return NULL;
    char *user = (char *)base + lead;
    if (zero)
        memset(user, 0, size);
    struct mem_hdr *h = hdr_of(user);
    h->magic = WDK_MEM_MAGIC;
    h->base = base;
    h->size = size;
    h->tag = tag;
    h->kind = kind;
    h->api = api;
    h->site = site;
    pthread_mutex_lock(&mem_lock);
    unsigned b = bucket_of(user);
    h->hnext = buckets[b];
    buckets[b] = h;
    h->prev = live.prev;
    h->next = &live;
    live.prev->next = h;
    live.prev = h;
    pthread_mutex_unlock(&mem_lock);
    return user;
}

/* Lock held: unlinks p's header if p is a live block; NULL otherwise. */
static struct mem_hdr *unlink_locked(const void *p)
{
    unsigned b = bucket_of(p);
    for (struct mem_hdr **pp = &buckets[b]; *pp; pp = &(*pp)->hnext) {
        struct mem_hdr *h = *pp;
        if ((char *)h + HDR_SIZE != (const char *)p)
            continue;
        *pp = h->hnext;
        h->prev->next = h->next;
        h->next->prev = h->prev;
        return h;
    }
    return NULL;
}

static struct mem_hdr *find_locked(const void *p)
{
    for (struct mem_hdr *h = buckets[bucket_of(p)]; h; h = h->hnext)
        if ((char *)h + HDR_SIZE == (const char *)p)
            return h;
    return NULL;
}

int wdk_mem_free(void *p, enum wdk_mem_kind kind, ULONG *tag_out)
{
    pthread_mutex_lock(&mem_lock);
    struct mem_hdr *h = find_locked(p);
    if (!h || h->kind != kind) {
        pthread_mutex_unlock(&mem_lock);
        return -ENOENT;
    }
    unlink_locked(p);
    pthread_mutex_unlock(&mem_lock);
    if (tag_out)
        *tag_out = h->tag;
    /* Only driver pool can hold driver objects (timers, DPCs, rundown references); kit blocks
     * are freed under kit locks the forget hooks take. */
    if (kind == WDK_MEM_POOL)
        wdk_forget_range(p, h->size);
    h->magic = 0;
    free(h->base);
    return 0;
}

size_t wdk_mem_size(const void *p)
{
    pthread_mutex_lock(&mem_lock);
    struct mem_hdr *h = find_locked(p);
    size_t n = h ? h->size : 0;
    pthread_mutex_unlock(&mem_lock);
    return n;
}

static const char *kind_rule(uint32_t kind)
{
    switch (kind) {
    case WDK_MEM_POOL: return "POOL_LEAK";
    case WDK_MEM_MDL: return "MDL_LEAK";
    case WDK_MEM_WORKITEM: return "WORKITEM_LEAK";
    case WDK_MEM_LOOKASIDE: return "LOOKASIDE_NOT_DELETED";
    case WDK_MEM_DEVICE: return "DEVICE_NOT_DELETED";
    case WDK_MEM_IRP: return "IRP_LEAK";
    default: return NULL;
    }
}

/* One line per (kind, tag): count, bytes and the first allocation's site. Kit-internal blocks
 * (WDK_MEM_KIT) are not the driver's and are not reported. Lookaside lists and devices report
 * themselves with more detail (lookaside.c, driver.c) before this runs and are skipped here. */
void wdk_mem_check_leaks(void)
{
    pthread_mutex_lock(&mem_lock);
    for (struct mem_hdr *h = live.next; h != &live; h = h->next)
        h->magic = WDK_MEM_MAGIC;   /* "not yet reported" */
    for (struct mem_hdr *h = live.next; h != &live; h = h->next) {
        if (h->magic != WDK_MEM_MAGIC || h->kind == WDK_MEM_KIT || h->kind == WDK_MEM_LOOKASIDE ||
            h->kind == WDK_MEM_DEVICE)
            continue;
        unsigned count = 0;
        size_t bytes = 0;
        for (struct mem_hdr *o = h; o != &live; o = o->next)
            if (o->magic == WDK_MEM_MAGIC && o->kind == h->kind && o->tag == h->tag) {
                count++;
                bytes += o->size;
                o->magic = WDK_MEM_MAGIC + 1;
            }
        char tb[8];
        const char *what = h->kind == WDK_MEM_POOL ? "pool block" : h->kind == WDK_MEM_MDL ? "MDL"
                         : h->kind == WDK_MEM_WORKITEM ? "work item" : "IRP";
        if (h->kind == WDK_MEM_POOL)
            wdk_verify_report(kind_rule(h->kind), h->site,
                              "%u %s%s (%zu bytes) with tag '%s' still allocated at unload; first by %s", count,
                              what, count == 1 ? "" : "s", bytes, wdk_tag_str(h->tag, tb), h->api);
        else
            wdk_verify_report(kind_rule(h->kind), h->site, "%u %s%s still allocated at unload; first by %s", count,
                              what, count == 1 ? "" : "s", h->api);
    }
    pthread_mutex_unlock(&mem_lock);
}

/* ---- forget hooks: objects that live inside memory being freed ---- */
static wdk_forget_fn forget_fns[8];
static unsigned nforget;   /* registered from constructors, before any thread runs */

void wdk_forget_register(wdk_forget_fn fn)
{
    if (nforget < sizeof forget_fns / sizeof forget_fns[0])
        forget_fns[nforget++] = fn;
}

void wdk_forget_range(const void *p, size_t size)
{
    for (unsigned i = 0; i < nforget; i++)
        forget_fns[i]((const char *)p, (const char *)p + size);
}

/* ---- the WDK calls ---- */
static int pool_irql_ok(int paged, const char *api, const char *site)
{
    KIRQL irql = wdk_irql_get();
    if (paged && irql > APC_LEVEL) {
        wdk_verify_report("PAGED_POOL_AT_DISPATCH", site, "%s of paged pool at IRQL %u", api, irql);
        return 0;
    }
    if (irql > DISPATCH_LEVEL) {
        wdk_verify_report("POOL_ABOVE_DISPATCH", site, "%s at IRQL %u", api, irql);
        return 0;
    }
    return 1;
}

#define POOL_FLAG_KNOWN_REQUIRED (POOL_FLAG_USE_QUOTA | POOL_FLAG_UNINITIALIZED | POOL_FLAG_SESSION | \
                                  POOL_FLAG_CACHE_ALIGNED | POOL_FLAG_RAISE_ON_FAILURE | POOL_FLAG_NON_PAGED | \
                                  POOL_FLAG_NON_PAGED_EXECUTE | POOL_FLAG_PAGED)

PVOID wdk_pool_alloc_at(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag, EX_POOL_PRIORITY Priority,
                        const char *api, const char *site)
{
    POOL_FLAGS types = Flags & (POOL_FLAG_NON_PAGED | POOL_FLAG_NON_PAGED_EXECUTE | POOL_FLAG_PAGED);
    if (Tag == 0 || NumberOfBytes == 0 || (Flags & POOL_FLAG_REQUIRED_MASK & ~POOL_FLAG_KNOWN_REQUIRED) ||
        types == 0 || (types & (types - 1)))
        return NULL;
    if (!pool_irql_ok(types == POOL_FLAG_PAGED, api, site))
        return NULL;
    void *p = wdk_mem_alloc(NumberOfBytes, !(Flags & POOL_FLAG_UNINITIALIZED), Tag, WDK_MEM_POOL, api, site);
    if (!p && (Flags & POOL_FLAG_RAISE_ON_FAILURE))
        ExRaiseStatus(STATUS_INSUFFICIENT_RESOURCES);
    return p;
}

static int pool_type_paged(POOL_TYPE t)
{
    int base = (int)t & ~(POOL_NX_ALLOCATION | POOL_QUOTA_FAIL_INSTEAD_OF_RAISE | POOL_RAISE_IF_ALLOCATION_FAILURE |
                          POOL_COLD_ALLOCATION | 32);
    return base == PagedPool || base == PagedPoolCacheAligned;
}

PVOID wdk_pool_alloc_type_at(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag, BOOLEAN Zero, const char *api,
                             const char *site)
{
    if (!pool_irql_ok(pool_type_paged(PoolType), api, site))
        return NULL;
    void *p = wdk_mem_alloc(NumberOfBytes, Zero, Tag, WDK_MEM_POOL, api, site);
    if (!p && ((PoolType & POOL_RAISE_IF_ALLOCATION_FAILURE) || PoolType == NonPagedPoolMustSucceed))
        ExRaiseStatus(STATUS_INSUFFICIENT_RESOURCES);
    return p;
}

void wdk_pool_free_at(PVOID P, ULONG Tag, BOOLEAN CheckTag, const char *site)
{
    if (!P) {
        wdk_verify_report("POOL_FREE_INVALID", site, "ExFreePool of NULL (BAD_POOL_CALLER on Windows)");
        return;
    }
    if (wdk_irql_get() > DISPATCH_LEVEL)
        wdk_verify_report("POOL_ABOVE_DISPATCH", site, "ExFreePool at IRQL %u", wdk_irql_get());
    ULONG tag = 0;
    pthread_mutex_lock(&mem_lock);
    struct mem_hdr *h = find_locked(P);
    int ok = h && h->kind == WDK_MEM_POOL;
    if (ok)
        tag = h->tag;
    pthread_mutex_unlock(&mem_lock);
    if (!ok) {
        wdk_verify_report("POOL_FREE_INVALID", site,
                          "ExFreePool of %p, which is not a live pool block (double free or foreign pointer)", P);
        return;
    }
    if (CheckTag && Tag != tag) {
        char a[8], b[8];
        wdk_verify_report("POOL_FREE_WRONG_TAG", site, "ExFreePoolWithTag with tag '%s' on a block tagged '%s'",
                          wdk_tag_str(Tag, a), wdk_tag_str(tag, b));
    }
    wdk_mem_free(P, WDK_MEM_POOL, NULL);
}

PVOID ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag)
{
    return wdk_pool_alloc_at(Flags, NumberOfBytes, Tag, NormalPoolPriority, "ExAllocatePool2", WDK_CALLER);
}

/* Extended parameters: priority and NUMA node are accepted (one heap serves all); an unknown
 * type that is not marked Optional fails the allocation, as documented. */
PVOID ExAllocatePool3(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag, PCPOOL_EXTENDED_PARAMETER ExtendedParameters,
                      ULONG ExtendedParametersCount)
{
    for (ULONG i = 0; i < ExtendedParametersCount; i++) {
        unsigned t = (unsigned)ExtendedParameters[i].Type;
        if ((t == PoolExtendedParameterInvalidType || t >= PoolExtendedParameterMax ||
             t == PoolExtendedParameterSecurePool) && !ExtendedParameters[i].Optional)
            return NULL;
    }
    return wdk_pool_alloc_at(Flags, NumberOfBytes, Tag, NormalPoolPriority, "ExAllocatePool3", WDK_CALLER);
}

PVOID ExAllocatePoolWithTag(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag)
{
    return wdk_pool_alloc_type_at(PoolType, NumberOfBytes, Tag, FALSE, "ExAllocatePoolWithTag", WDK_CALLER);
}

PVOID ExAllocatePoolWithTagPriority(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag, EX_POOL_PRIORITY Priority)
{
    return wdk_pool_alloc_type_at(PoolType, NumberOfBytes, Tag, FALSE, "ExAllocatePoolWithTagPriority", WDK_CALLER);
}

PVOID ExAllocatePoolWithQuotaTag(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag)
{
    return wdk_pool_alloc_type_at(PoolType, NumberOfBytes, Tag, FALSE, "ExAllocatePoolWithQuotaTag", WDK_CALLER);
}

PVOID ExAllocatePoolZero(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag)
{
    return wdk_pool_alloc_type_at(PoolType, NumberOfBytes, Tag, TRUE, "ExAllocatePoolZero", WDK_CALLER);
}

PVOID ExAllocatePoolUninitialized(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag)
{
    return wdk_pool_alloc_type_at(PoolType, NumberOfBytes, Tag, FALSE, "ExAllocatePoolUninitialized", WDK_CALLER);
}

VOID ExFreePool(PVOID P)
{
    wdk_pool_free_at(P, 0, FALSE, WDK_CALLER);
}

VOID ExFreePoolWithTag(PVOID P, ULONG Tag)
{
    wdk_pool_free_at(P, Tag, TRUE, WDK_CALLER);
}

VOID ExFreePool2(PVOID P, ULONG Tag, PCPOOL_EXTENDED_PARAMETER ExtendedParameters, ULONG ExtendedParametersCount)
{
    wdk_pool_free_at(P, Tag, TRUE, WDK_CALLER);
}
