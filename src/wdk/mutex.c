/*
 * mutex.c - the blocking locks: KMUTEX (recursive, owned by a thread; "KeInitializeMutex
 * function (wdm.h)"), KSEMAPHORE, FAST_MUTEX and KGUARDED_MUTEX (non-recursive, taken at
 * APC_LEVEL; "ExAcquireFastMutex function (wdm.h)"). All wait through dispatcher.c, so the
 * wait rules apply: acquiring one at DISPATCH_LEVEL is reported.
 */
#include "wdk_internal.h"

#undef KeWaitForSingleObject

VOID KeInitializeMutex(PRKMUTEX Mutex, ULONG Level)
{
    memset(Mutex, 0, sizeof *Mutex);
    Mutex->Header.Type = WDK_OBJ_MUTANT;
    InitializeListHead(&Mutex->Header.WaitListHead);
    wdk_signal_set(&Mutex->Header, 1);
}

/* Releases one level of ownership; returns the previous state. Releasing a mutex the thread does
 * not own is bug check 0x40 (MUTEX_NOT_OWNED) on Windows: reported here. */
LONG KeReleaseMutex(PRKMUTEX Mutex, BOOLEAN Wait)
{
    struct _KTHREAD *me = wdk_thread_self();
    pthread_mutex_lock(&wdk_ke_lock);
    LONG old = wdk_signal_get(&Mutex->Header);
    if (Mutex->OwnerThread != me || old > 0) {
        pthread_mutex_unlock(&wdk_ke_lock);
        wdk_verify_report("MUTEX_NOT_OWNED", WDK_CALLER, "KeReleaseMutex by a thread that does not own it");
        return old;
    }
    wdk_signal_set(&Mutex->Header, old + 1);
    if (old + 1 > 0)
        Mutex->OwnerThread = NULL;
    pthread_cond_broadcast(&wdk_ke_cond);
    pthread_mutex_unlock(&wdk_ke_lock);
    return old;
}

LONG KeReadStateMutex(PRKMUTEX Mutex)
{
    return wdk_signal_get(&Mutex->Header);
}

VOID KeInitializeSemaphore(PRKSEMAPHORE Semaphore, LONG Count, LONG Limit)
{
    memset(Semaphore, 0, sizeof *Semaphore);
    Semaphore->Header.Type = WDK_OBJ_SEMAPHORE;
    InitializeListHead(&Semaphore->Header.WaitListHead);
    wdk_signal_set(&Semaphore->Header, Count);
    Semaphore->Limit = Limit;
}

/* Adds Adjustment to the count and returns the previous count; going past the limit raises
 * STATUS_SEMAPHORE_LIMIT_EXCEEDED on Windows: reported, and the count is left unchanged. */
LONG KeReleaseSemaphore(PRKSEMAPHORE Semaphore, KPRIORITY Increment, LONG Adjustment, BOOLEAN Wait)
{
    pthread_mutex_lock(&wdk_ke_lock);
    LONG old = wdk_signal_get(&Semaphore->Header);
    if (Adjustment <= 0 || old > Semaphore->Limit - Adjustment) {
        pthread_mutex_unlock(&wdk_ke_lock);
        wdk_verify_report("SEMAPHORE_LIMIT_EXCEEDED", WDK_CALLER, "KeReleaseSemaphore(+%d) at count %d, limit %d",
                          Adjustment, old, Semaphore->Limit);
        return old;
    }
    wdk_signal_set(&Semaphore->Header, old + Adjustment);
    pthread_cond_broadcast(&wdk_ke_cond);
    pthread_mutex_unlock(&wdk_ke_lock);
    return old;
}

LONG KeReadStateSemaphore(PRKSEMAPHORE Semaphore)
{
    return wdk_signal_get(&Semaphore->Header);
}

/* ---- fast and guarded mutexes: a synchronization event held by Owner ---- */
VOID ExInitializeFastMutex(PFAST_MUTEX FastMutex)
{
    memset(FastMutex, 0, sizeof *FastMutex);
    FastMutex->Count = 1;
    KeInitializeEvent(&FastMutex->Event, SynchronizationEvent, TRUE);
}

static void fast_acquire(PFAST_MUTEX m, int raise, const char *site)
{
    struct _KTHREAD *me = wdk_thread_self();
    if (__atomic_load_n(&m->Owner, __ATOMIC_ACQUIRE) == me) {
        wdk_verify_report("FAST_MUTEX_RECURSIVE", site, "fast mutex acquired again by its owner (it would deadlock)");
        return;
    }
    KIRQL old = wdk_irql_get();
    if (old > APC_LEVEL)
        wdk_verify_report("FAST_MUTEX_IRQL", site, "fast/guarded mutex acquired at IRQL %u", old);
    wdk_KeWaitForSingleObject_at(&m->Event, Executive, KernelMode, FALSE, NULL, site);
    __atomic_store_n(&m->Owner, me, __ATOMIC_RELEASE);
    if (raise) {
        m->OldIrql = old;
        if (old < APC_LEVEL)
            wdk_irql_set(APC_LEVEL);
    }
}

static void fast_release(PFAST_MUTEX m, int lower, const char *site)
{
    if (__atomic_load_n(&m->Owner, __ATOMIC_ACQUIRE) != wdk_thread_self()) {
        wdk_verify_report("FAST_MUTEX_NOT_OWNED", site, "fast/guarded mutex released by a thread that does not own it");
        return;
    }
    KIRQL old = (KIRQL)m->OldIrql;
    __atomic_store_n(&m->Owner, NULL, __ATOMIC_RELEASE);
    KeSetEvent(&m->Event, 0, FALSE);
    if (lower)
        wdk_irql_set(old);
}

VOID ExAcquireFastMutex(PFAST_MUTEX FastMutex) { fast_acquire(FastMutex, 1, WDK_CALLER); }
VOID ExReleaseFastMutex(PFAST_MUTEX FastMutex) { fast_release(FastMutex, 1, WDK_CALLER); }
VOID ExAcquireFastMutexUnsafe(PFAST_MUTEX FastMutex) { fast_acquire(FastMutex, 0, WDK_CALLER); }
VOID ExReleaseFastMutexUnsafe(PFAST_MUTEX FastMutex) { fast_release(FastMutex, 0, WDK_CALLER); }

BOOLEAN ExTryToAcquireFastMutex(PFAST_MUTEX FastMutex)
{
    LARGE_INTEGER zero = { .QuadPart = 0 };
    KIRQL old = wdk_irql_get();
    if (wdk_KeWaitForSingleObject_at(&FastMutex->Event, Executive, KernelMode, FALSE, &zero, WDK_CALLER) !=
        STATUS_SUCCESS)
        return FALSE;
    __atomic_store_n(&FastMutex->Owner, wdk_thread_self(), __ATOMIC_RELEASE);
    FastMutex->OldIrql = old;
    if (old < APC_LEVEL)
        wdk_irql_set(APC_LEVEL);
    return TRUE;
}

VOID KeInitializeGuardedMutex(PKGUARDED_MUTEX Mutex) { ExInitializeFastMutex(Mutex); }
VOID KeAcquireGuardedMutex(PKGUARDED_MUTEX Mutex) { fast_acquire(Mutex, 0, WDK_CALLER); }
VOID KeReleaseGuardedMutex(PKGUARDED_MUTEX Mutex) { fast_release(Mutex, 0, WDK_CALLER); }
BOOLEAN KeTryToAcquireGuardedMutex(PKGUARDED_MUTEX Mutex)
{
    LARGE_INTEGER zero = { .QuadPart = 0 };
    if (wdk_KeWaitForSingleObject_at(&Mutex->Event, Executive, KernelMode, FALSE, &zero, WDK_CALLER) != STATUS_SUCCESS)
        return FALSE;
    __atomic_store_n(&Mutex->Owner, wdk_thread_self(), __ATOMIC_RELEASE);
    return TRUE;
}
