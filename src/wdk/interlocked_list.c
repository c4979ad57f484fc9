/*
 * interlocked_list.c - the list operations that take a lock ("ExInterlockedInsertTailList
 * function (wdm.h)") and the interlocked singly linked list (SLIST). The ExInterlocked forms
 * take the caller's spin lock, as on Windows, so the same lock can guard the list elsewhere.
 * The SLIST header keeps its first entry and depth under a small lock word of its own (no
 * ABA-tagged compare-and-swap); every operation is safe at any IRQL up to DISPATCH_LEVEL.
 */
#include <sched.h>
#include "wdk_internal.h"

#undef KeAcquireSpinLock
#undef KeReleaseSpinLock

PLIST_ENTRY ExInterlockedInsertHeadList(PLIST_ENTRY ListHead, PLIST_ENTRY ListEntry, PKSPIN_LOCK Lock)
{
    KIRQL old = wdk_KeAcquireSpinLock_at(Lock, WDK_CALLER);
    PLIST_ENTRY first = IsListEmpty(ListHead) ? NULL : ListHead->Flink;
    InsertHeadList(ListHead, ListEntry);
    wdk_KeReleaseSpinLock_at(Lock, old, WDK_CALLER);
    return first;
}

PLIST_ENTRY ExInterlockedInsertTailList(PLIST_ENTRY ListHead, PLIST_ENTRY ListEntry, PKSPIN_LOCK Lock)
{
    KIRQL old = wdk_KeAcquireSpinLock_at(Lock, WDK_CALLER);
    PLIST_ENTRY last = IsListEmpty(ListHead) ? NULL : ListHead->Blink;
    InsertTailList(ListHead, ListEntry);
    wdk_KeReleaseSpinLock_at(Lock, old, WDK_CALLER);
    return last;
}

PLIST_ENTRY ExInterlockedRemoveHeadList(PLIST_ENTRY ListHead, PKSPIN_LOCK Lock)
{
    KIRQL old = wdk_KeAcquireSpinLock_at(Lock, WDK_CALLER);
    PLIST_ENTRY e = IsListEmpty(ListHead) ? NULL : RemoveHeadList(ListHead);
    wdk_KeReleaseSpinLock_at(Lock, old, WDK_CALLER);
    return e;
}

PSINGLE_LIST_ENTRY ExInterlockedPopEntryList(PSINGLE_LIST_ENTRY ListHead, PKSPIN_LOCK Lock)
{
    KIRQL old = wdk_KeAcquireSpinLock_at(Lock, WDK_CALLER);
    PSINGLE_LIST_ENTRY e = PopEntryList(ListHead);
    wdk_KeReleaseSpinLock_at(Lock, old, WDK_CALLER);
    return e;
}

PSINGLE_LIST_ENTRY ExInterlockedPushEntryList(PSINGLE_LIST_ENTRY ListHead, PSINGLE_LIST_ENTRY ListEntry,
                                              PKSPIN_LOCK Lock)
{
    KIRQL old = wdk_KeAcquireSpinLock_at(Lock, WDK_CALLER);
    PSINGLE_LIST_ENTRY first = ListHead->Next;
    PushEntryList(ListHead, ListEntry);
    wdk_KeReleaseSpinLock_at(Lock, old, WDK_CALLER);
    return first;
}

/* ---- SLIST: KitLock is 0 (free) or 1 (held) ---- */
static void slist_lock(PSLIST_HEADER h)
{
    unsigned spins = 0;
    while (__atomic_exchange_n(&h->KitLock, 1, __ATOMIC_ACQUIRE))
        if (++spins > 64)
            sched_yield();
}

static void slist_unlock(PSLIST_HEADER h)
{
    __atomic_store_n(&h->KitLock, 0, __ATOMIC_RELEASE);
}

VOID InitializeSListHead(PSLIST_HEADER SListHead)
{
    memset(SListHead, 0, sizeof *SListHead);
}

PSLIST_ENTRY InterlockedPushEntrySList(PSLIST_HEADER ListHead, PSLIST_ENTRY ListEntry)
{
    slist_lock(ListHead);
    PSLIST_ENTRY first = ListHead->KitFirst;
    ListEntry->Next = first;
    ListHead->KitFirst = ListEntry;
    ListHead->KitDepth++;
    slist_unlock(ListHead);
    return first;
}

PSLIST_ENTRY InterlockedPopEntrySList(PSLIST_HEADER ListHead)
{
    slist_lock(ListHead);
    PSLIST_ENTRY first = ListHead->KitFirst;
    if (first) {
        ListHead->KitFirst = first->Next;
        ListHead->KitDepth--;
    }
    slist_unlock(ListHead);
    return first;
}

PSLIST_ENTRY InterlockedFlushSList(PSLIST_HEADER ListHead)
{
    slist_lock(ListHead);
    PSLIST_ENTRY first = ListHead->KitFirst;
    ListHead->KitFirst = NULL;
    ListHead->KitDepth = 0;
    slist_unlock(ListHead);
    return first;
}

USHORT QueryDepthSList(PSLIST_HEADER ListHead)
{
    slist_lock(ListHead);
    USHORT d = ListHead->KitDepth;
    slist_unlock(ListHead);
    return d;
}
