/*
 * dispatcher.c - waits on dispatcher objects ("KeWaitForSingleObject function (wdm.h)",
 * "KeWaitForMultipleObjects function (wdm.h)"): events, timers, semaphores, mutexes and threads
 * share one state lock and one condition variable; a waiter re-checks its objects whenever any
 * of them changes. A satisfied wait applies the object's side effect (an auto-reset event or
 * timer is cleared, a semaphore decremented, a mutex acquired).
 *
 * Timeouts: NULL waits forever, 0 polls, a negative value is a relative interval in 100 ns units
 * (monotonic clock), a positive one an absolute system time (converted once, at the start of the
 * wait, to the monotonic clock).
 */
#include <errno.h>
#include <time.h>
#include "wdk_internal.h"

#undef KeWaitForSingleObject
#undef KeWaitForMultipleObjects
#undef KeDelayExecutionThread

pthread_mutex_t wdk_ke_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t wdk_ke_cond;
static pthread_once_t ke_once = PTHREAD_ONCE_INIT;

static void ke_init_once(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&wdk_ke_cond, &a);
    pthread_condattr_destroy(&a);
}

void wdk_ke_init(void)
{
    pthread_once(&ke_once, ke_init_once);
}

__attribute__((constructor)) static void ke_ctor(void)
{
    wdk_ke_init();
}

int64_t wdk_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* 100 ns intervals between 1601-01-01 and 1970-01-01. */
#define WDK_EPOCH_DIFF 116444736000000000LL

LONGLONG wdk_system_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (LONGLONG)ts.tv_sec * 10000000 + ts.tv_nsec / 100 + WDK_EPOCH_DIFF;
}

int64_t wdk_deadline_ns(const LARGE_INTEGER *timeout)
{
    if (!timeout)
        return INT64_MAX;
    LONGLONG t = timeout->QuadPart;
    int64_t now = wdk_mono_ns();
    if (t < 0) {
        if (t < -(INT64_MAX / 200))
            return INT64_MAX;
        return now + (-t) * 100;
    }
    if (t == 0)
        return now;
    LONGLONG delta = t - wdk_system_time();
    if (delta <= 0)
        return now;
    if (delta > INT64_MAX / 200)
        return INT64_MAX;
    return now + delta * 100;
}

int wdk_ke_wait_until(int64_t deadline_ns)
{
    if (deadline_ns == INT64_MAX)
        return pthread_cond_wait(&wdk_ke_cond, &wdk_ke_lock);
    struct timespec ts = { .tv_sec = deadline_ns / 1000000000, .tv_nsec = deadline_ns % 1000000000 };
    return pthread_cond_timedwait(&wdk_ke_cond, &wdk_ke_lock, &ts);
}

void wdk_wait_check(const char *api, const LARGE_INTEGER *timeout, const char *site)
{
    KIRQL irql = wdk_irql_get();
    if (irql >= DISPATCH_LEVEL && (!timeout || timeout->QuadPart != 0))
        wdk_verify_report("WAIT_AT_DISPATCH", site, "%s with a %s timeout at IRQL %u", api,
                          timeout ? "nonzero" : "NULL (infinite)", irql);
}

/* Lock held. Can this object satisfy a wait by the calling thread? */
static int obj_ready(DISPATCHER_HEADER *h, struct _KTHREAD *me)
{
    if (h->Type == WDK_OBJ_MUTANT)
        return wdk_signal_get(h) > 0 || ((PKMUTANT)h)->OwnerThread == me;
    return wdk_signal_get(h) > 0;
}

/* Lock held. The side effect of a satisfied wait. */
static void obj_consume(DISPATCHER_HEADER *h, struct _KTHREAD *me)
{
    switch (h->Type) {
    case WDK_OBJ_EVENT_SYNCHRONIZATION:
    case WDK_OBJ_TIMER_SYNCHRONIZATION:
        wdk_signal_set(h, 0);
        break;
    case WDK_OBJ_SEMAPHORE:
        wdk_signal_set(h, wdk_signal_get(h) - 1);
        break;
    case WDK_OBJ_MUTANT:
        wdk_signal_set(h, wdk_signal_get(h) - 1);
        ((PKMUTANT)h)->OwnerThread = me;
        break;
    default:
        break;
    }
}

/* Lock held. Satisfies the wait if it can: the status to return, or -1. */
static NTSTATUS try_satisfy(ULONG count, PVOID *objects, WAIT_TYPE type, struct _KTHREAD *me)
{
    if (type == WaitAny) {
        for (ULONG i = 0; i < count; i++)
            if (obj_ready(objects[i], me)) {
                obj_consume(objects[i], me);
                return (NTSTATUS)(STATUS_WAIT_0 + i);
            }
        return -1;
    }
    for (ULONG i = 0; i < count; i++)
        if (!obj_ready(objects[i], me))
            return -1;
    for (ULONG i = 0; i < count; i++)
        obj_consume(objects[i], me);
    return STATUS_SUCCESS;
}

/* May block (the rule check is the caller's). */
static NTSTATUS wait_objects(ULONG count, PVOID *objects, WAIT_TYPE type, const LARGE_INTEGER *timeout)
{
    struct _KTHREAD *me = wdk_thread_self();
    int64_t deadline = wdk_deadline_ns(timeout);
    NTSTATUS st;
    pthread_mutex_lock(&wdk_ke_lock);
    for (;;) {
        st = try_satisfy(count, objects, type, me);
        if (st != -1)
            break;
        if (wdk_mono_ns() >= deadline) {
            st = STATUS_TIMEOUT;
            break;
        }
        wdk_ke_wait_until(deadline);
    }
    pthread_mutex_unlock(&wdk_ke_lock);
    return st;
}

NTSTATUS wdk_KeWaitForSingleObject_at(PVOID Object, KWAIT_REASON WaitReason, KPROCESSOR_MODE WaitMode,
                                      BOOLEAN Alertable, PLARGE_INTEGER Timeout, const char *site)
{
    wdk_wait_check("KeWaitForSingleObject", Timeout, site);
    if (!Object) {
        wdk_verify_report("WAIT_NULL_OBJECT", site, "KeWaitForSingleObject on a NULL object");
        return STATUS_INVALID_PARAMETER;
    }
    return wait_objects(1, &Object, WaitAny, Timeout);
}

NTSTATUS KeWaitForSingleObject(PVOID Object, KWAIT_REASON WaitReason, KPROCESSOR_MODE WaitMode, BOOLEAN Alertable,
                               PLARGE_INTEGER Timeout)
{
    return wdk_KeWaitForSingleObject_at(Object, WaitReason, WaitMode, Alertable, Timeout, WDK_CALLER);
}

NTSTATUS wdk_KeWaitForMultipleObjects_at(ULONG Count, PVOID Object[], WAIT_TYPE WaitType, KWAIT_REASON WaitReason,
                                         KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Timeout,
                                         PKWAIT_BLOCK WaitBlockArray, const char *site)
{
    wdk_wait_check("KeWaitForMultipleObjects", Timeout, site);
    /* Count above MAXIMUM_WAIT_OBJECTS, or above THREAD_WAIT_OBJECTS without a wait-block array,
     * is bug check 0xC on Windows. */
    if (Count == 0 || Count > MAXIMUM_WAIT_OBJECTS || (!WaitBlockArray && Count > THREAD_WAIT_OBJECTS) ||
        !Object || (WaitType != WaitAll && WaitType != WaitAny)) {
        wdk_verify_report("WAIT_TOO_MANY_OBJECTS", site,
                          "KeWaitForMultipleObjects with %u objects%s (MAXIMUM_WAIT_OBJECTS_EXCEEDED)", Count,
                          WaitBlockArray ? "" : " and no wait-block array");
        return STATUS_INVALID_PARAMETER;
    }
    for (ULONG i = 0; i < Count; i++)
        if (!Object[i]) {
            wdk_verify_report("WAIT_NULL_OBJECT", site, "KeWaitForMultipleObjects: object %u is NULL", i);
            return STATUS_INVALID_PARAMETER;
        }
    return wait_objects(Count, Object, WaitType, Timeout);
}

NTSTATUS KeWaitForMultipleObjects(ULONG Count, PVOID Object[], WAIT_TYPE WaitType, KWAIT_REASON WaitReason,
                                  KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Timeout,
                                  PKWAIT_BLOCK WaitBlockArray)
{
    return wdk_KeWaitForMultipleObjects_at(Count, Object, WaitType, WaitReason, WaitMode, Alertable, Timeout,
                                           WaitBlockArray, WDK_CALLER);
}

NTSTATUS wdk_KeDelayExecutionThread_at(KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Interval,
                                       const char *site)
{
    wdk_wait_check("KeDelayExecutionThread", Interval, site);
    if (!Interval)
        return STATUS_INVALID_PARAMETER;
    int64_t deadline = wdk_deadline_ns(Interval);
    for (;;) {
        int64_t left = deadline - wdk_mono_ns();
        if (left <= 0)
            break;
        struct timespec ts = { .tv_sec = left / 1000000000, .tv_nsec = left % 1000000000 };
        nanosleep(&ts, NULL);
    }
    return STATUS_SUCCESS;
}

NTSTATUS KeDelayExecutionThread(KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Interval)
{
    return wdk_KeDelayExecutionThread_at(WaitMode, Alertable, Interval, WDK_CALLER);
}

/* A busy stall: no rule forbids it at any IRQL. */
VOID KeStallExecutionProcessor(ULONG MicroSeconds)
{
    int64_t end = wdk_mono_ns() + (int64_t)MicroSeconds * 1000;
    while (wdk_mono_ns() < end)
        YieldProcessor();
}
