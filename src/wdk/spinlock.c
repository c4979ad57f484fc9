/*
 * spinlock.c - KSPIN_LOCK ("KeAcquireSpinLock function (wdm.h)", "Queued Spin Locks"): a ticket
 * lock in the lock's own 8 bytes, so both the ordinary and the in-stack queued forms grant the
 * lock in arrival order. Bits 0-15 are the next ticket, 16-31 the ticket being served, 32-63
 * the kit's id of the owning thread (0 when free), which lets the kit report a lock released by
 * another thread or taken recursively. Acquiring raises the thread's IRQL to DISPATCH_LEVEL and
 * releasing restores the caller's saved level; the AtDpcLevel/FromDpcLevel forms require
 * DISPATCH_LEVEL already.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include "wdk_internal.h"

#undef KeAcquireSpinLockRaiseToDpc
#undef KeReleaseSpinLock
#undef KeAcquireSpinLockAtDpcLevel
#undef KeReleaseSpinLockFromDpcLevel
#undef KeTryToAcquireSpinLockAtDpcLevel
#undef KeAcquireInStackQueuedSpinLock
#undef KeReleaseInStackQueuedSpinLock
#undef KeAcquireInStackQueuedSpinLockAtDpcLevel
#undef KeReleaseInStackQueuedSpinLockFromDpcLevel

#define T_NEXT(v) ((v) & 0xffffu)
#define T_SERVING(v) (((v) >> 16) & 0xffffu)
#define T_OWNER(v) ((uint32_t)((v) >> 32))

static uint32_t next_thread_id = 1;   /* atomic */
static __thread uint32_t my_id;

static uint32_t thread_id(void)
{
    if (!my_id)
        my_id = __atomic_fetch_add(&next_thread_id, 1, __ATOMIC_RELAXED);
    return my_id;
}

static uint64_t lock_load(PKSPIN_LOCK l)
{
    return __atomic_load_n((uint64_t *)l, __ATOMIC_ACQUIRE);
}

static int lock_cas(PKSPIN_LOCK l, uint64_t *expect, uint64_t v)
{
    return __atomic_compare_exchange_n((uint64_t *)l, expect, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Takes a ticket and spins until it is served; the caller set the IRQL. */
static void lock_acquire(PKSPIN_LOCK l, const char *site)
{
    uint32_t me = thread_id();
    uint64_t v = lock_load(l);
    if (T_OWNER(v) == me) {
        wdk_verify_report("SPINLOCK_RECURSIVE", site, "spin lock %p acquired again by the thread that holds it",
                          (void *)l);
        fprintf(stderr, "ndkdrv: a recursive spin lock acquisition never returns on Windows; stopping\n");
        abort();
    }
    uint64_t nv;
    do {
        nv = (v & ~(uint64_t)0xffff) | ((v + 1) & 0xffff);
    } while (!lock_cas(l, &v, nv));
    uint64_t ticket = T_NEXT(v);
    for (unsigned spins = 0;; spins++) {
        v = lock_load(l);
        if (T_SERVING(v) == ticket)
            break;
        if (spins < 64)
            YieldProcessor();
        else
            sched_yield();
    }
    do {
        nv = (v & 0xffffffffu) | ((uint64_t)me << 32);
    } while (!lock_cas(l, &v, nv));
}

static BOOLEAN lock_try(PKSPIN_LOCK l)
{
    uint64_t v = lock_load(l);
    if (T_NEXT(v) != T_SERVING(v))
        return FALSE;
    uint64_t nv = (v & ~(uint64_t)0xffff) | ((v + 1) & 0xffff);
    nv = (nv & 0xffffffffu) | ((uint64_t)thread_id() << 32);
    return (BOOLEAN)lock_cas(l, &v, nv);
}

static void lock_release(PKSPIN_LOCK l, const char *site)
{
    uint64_t v = lock_load(l);
    if (T_OWNER(v) == 0) {
        wdk_verify_report("SPINLOCK_NOT_HELD", site, "spin lock %p released while not held", (void *)l);
        return;
    }
    if (T_OWNER(v) != thread_id())
        wdk_verify_report("SPINLOCK_RELEASE_NOT_OWNER", site,
                          "spin lock %p released by a thread other than the one that acquired it", (void *)l);
    uint64_t nv;
    do {
        nv = T_NEXT(v) | ((uint64_t)((T_SERVING(v) + 1) & 0xffff) << 16);
    } while (!lock_cas(l, &v, nv));
}

static void check_release_irql(const char *api, const char *site)
{
    KIRQL cur = wdk_irql_get();
    if (cur != DISPATCH_LEVEL)
        wdk_verify_report("SPINLOCK_RELEASE_IRQL", site, "%s at IRQL %u (must be DISPATCH_LEVEL)", api, cur);
}

VOID KeInitializeSpinLock(PKSPIN_LOCK SpinLock)
{
    __atomic_store_n((uint64_t *)SpinLock, 0, __ATOMIC_RELEASE);
}

BOOLEAN KeTestSpinLock(PKSPIN_LOCK SpinLock)
{
    uint64_t v = lock_load(SpinLock);
    return (BOOLEAN)(T_NEXT(v) == T_SERVING(v));
}

KIRQL wdk_KeAcquireSpinLock_at(PKSPIN_LOCK SpinLock, const char *site)
{
    KIRQL old = wdk_irql_get();
    if (old > DISPATCH_LEVEL)
        wdk_verify_report("SPINLOCK_ACQUIRE_IRQL", site, "KeAcquireSpinLock at IRQL %u", old);
    else
        wdk_irql_set(DISPATCH_LEVEL);
    lock_acquire(SpinLock, site);
    return old;
}

KIRQL KeAcquireSpinLockRaiseToDpc(PKSPIN_LOCK SpinLock)
{
    return wdk_KeAcquireSpinLock_at(SpinLock, WDK_CALLER);
}

void wdk_KeReleaseSpinLock_at(PKSPIN_LOCK SpinLock, KIRQL NewIrql, const char *site)
{
    check_release_irql("KeReleaseSpinLock", site);
    lock_release(SpinLock, site);
    wdk_irql_set(NewIrql);
}

VOID KeReleaseSpinLock(PKSPIN_LOCK SpinLock, KIRQL NewIrql)
{
    wdk_KeReleaseSpinLock_at(SpinLock, NewIrql, WDK_CALLER);
}

void wdk_KeAcquireSpinLockAtDpcLevel_at(PKSPIN_LOCK SpinLock, const char *site)
{
    KIRQL cur = wdk_irql_get();
    if (cur < DISPATCH_LEVEL)
        wdk_verify_report("SPINLOCK_ACQUIRE_IRQL", site, "KeAcquireSpinLockAtDpcLevel at IRQL %u", cur);
    lock_acquire(SpinLock, site);
}

VOID KeAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock)
{
    wdk_KeAcquireSpinLockAtDpcLevel_at(SpinLock, WDK_CALLER);
}

void wdk_KeReleaseSpinLockFromDpcLevel_at(PKSPIN_LOCK SpinLock, const char *site)
{
    KIRQL cur = wdk_irql_get();
    if (cur < DISPATCH_LEVEL)
        wdk_verify_report("SPINLOCK_RELEASE_IRQL", site, "KeReleaseSpinLockFromDpcLevel at IRQL %u", cur);
    lock_release(SpinLock, site);
}

VOID KeReleaseSpinLockFromDpcLevel(PKSPIN_LOCK SpinLock)
{
    wdk_KeReleaseSpinLockFromDpcLevel_at(SpinLock, WDK_CALLER);
}

BOOLEAN wdk_KeTryToAcquireSpinLockAtDpcLevel_at(PKSPIN_LOCK SpinLock, const char *site)
{
    KIRQL cur = wdk_irql_get();
    if (cur < DISPATCH_LEVEL)
        wdk_verify_report("SPINLOCK_ACQUIRE_IRQL", site, "KeTryToAcquireSpinLockAtDpcLevel at IRQL %u", cur);
    return lock_try(SpinLock);
}

BOOLEAN KeTryToAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock)
{
    return wdk_KeTryToAcquireSpinLockAtDpcLevel_at(SpinLock, WDK_CALLER);
}

void wdk_KeAcquireInStackQueuedSpinLock_at(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle, const char *site)
{
    LockHandle->LockQueue.Next = NULL;
    LockHandle->LockQueue.Lock = SpinLock;
    LockHandle->OldIrql = wdk_KeAcquireSpinLock_at(SpinLock, site);
}

VOID KeAcquireInStackQueuedSpinLock(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle)
{
    wdk_KeAcquireInStackQueuedSpinLock_at(SpinLock, LockHandle, WDK_CALLER);
}

void wdk_KeReleaseInStackQueuedSpinLock_at(PKLOCK_QUEUE_HANDLE LockHandle, const char *site)
{
    check_release_irql("KeReleaseInStackQueuedSpinLock", site);
    lock_release(LockHandle->LockQueue.Lock, site);
    wdk_irql_set(LockHandle->OldIrql);
}

VOID KeReleaseInStackQueuedSpinLock(PKLOCK_QUEUE_HANDLE LockHandle)
{
    wdk_KeReleaseInStackQueuedSpinLock_at(LockHandle, WDK_CALLER);
}

void wdk_KeAcquireInStackQueuedSpinLockAtDpcLevel_at(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle,
                                                     const char *site)
{
    LockHandle->LockQueue.Next = NULL;
    LockHandle->LockQueue.Lock = SpinLock;
    LockHandle->OldIrql = wdk_irql_get();
    wdk_KeAcquireSpinLockAtDpcLevel_at(SpinLock, site);
}

VOID KeAcquireInStackQueuedSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle)
{
    wdk_KeAcquireInStackQueuedSpinLockAtDpcLevel_at(SpinLock, LockHandle, WDK_CALLER);
}

void wdk_KeReleaseInStackQueuedSpinLockFromDpcLevel_at(PKLOCK_QUEUE_HANDLE LockHandle, const char *site)
{
    wdk_KeReleaseSpinLockFromDpcLevel_at(LockHandle->LockQueue.Lock, site);
}

VOID KeReleaseInStackQueuedSpinLockFromDpcLevel(PKLOCK_QUEUE_HANDLE LockHandle)
{
    wdk_KeReleaseInStackQueuedSpinLockFromDpcLevel_at(LockHandle, WDK_CALLER);
}
