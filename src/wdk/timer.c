/*
 * timer.c - KTIMER ("KeSetTimerEx function (wdm.h)", "KeCancelTimer function (wdm.h)"): one kit
 * thread keeps the set timers and, at each expiry, signals the timer (a notification timer
 * stays signaled, a synchronization timer releases one waiter) and queues its DPC with the
 * expiry time as the system arguments. DueTime < 0 is relative (100 ns units, monotonic), > 0
 * absolute system time; Period is in milliseconds. Setting a set timer cancels it first (and
 * its queued DPC) and returns TRUE. A timer still set after DriverUnload, or inside memory being
 * freed, is reported and cancelled.
 */
#include <stdio.h>
#include "wdk_internal.h"
#include "wdk_timer.h"

#undef KeSetTimer
#undef KeSetTimerEx
#undef KeSetCoalescableTimer

/* Under wdk_ke_lock: set timers (linked through TimerListEntry), their KeSetTimer sites. */
static LIST_ENTRY timers = { &timers, &timers };
static int thread_started;
static pthread_cond_t timer_cond;
static pthread_once_t timer_once = PTHREAD_ONCE_INIT;
#define INSERTED(t) ((t)->Header.Signalling)

static void timer_cond_init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&timer_cond, &a);
    pthread_condattr_destroy(&a);
}

struct timer_site {
    PKTIMER timer;
    const char *site;
};
static struct timer_site sites[256];

static void site_set_locked(PKTIMER t, const char *site)
{
    struct timer_site *free_slot = NULL;
    for (unsigned i = 0; i < 256; i++) {
        if (sites[i].timer == t) {
            sites[i].site = site;
            return;
        }
        if (!sites[i].timer && !free_slot)
            free_slot = &sites[i];
    }
    if (free_slot) {
        free_slot->timer = t;
        free_slot->site = site;
    }
}

static const char *site_take_locked(PKTIMER t)
{
    for (unsigned i = 0; i < 256; i++)
        if (sites[i].timer == t) {
            sites[i].timer = NULL;
            return sites[i].site;
        }
    return "?";
}

static void timer_thread(void *arg)
{
    pthread_mutex_lock(&wdk_ke_lock);
    for (;;) {
        int64_t now = wdk_mono_ns(), next = INT64_MAX;
        for (PLIST_ENTRY e = timers.Flink; e != &timers;) {
            PKTIMER t = CONTAINING_RECORD(e, KTIMER, TimerListEntry);
            e = e->Flink;
            int64_t due = (int64_t)t->DueTime.QuadPart;
            if (due > now) {
                if (due < next)
                    next = due;
                continue;
            }
            wdk_signal_set(&t->Header, 1);
            LARGE_INTEGER when = { .QuadPart = wdk_system_time() };
            if (t->Period) {
                int64_t step = (int64_t)t->Period * 1000000;
                due += step;
                if (due <= now)
                    due = now + step;
                t->DueTime.QuadPart = (ULONGLONG)due;
                if (due < next)
                    next = due;
            } else {
                RemoveEntryList(&t->TimerListEntry);
                INSERTED(t) = 0;
                site_take_locked(t);
            }
            if (t->Dpc)
                wdk_dpc_insert_locked(t->Dpc, (PVOID)(uintptr_t)when.LowPart, (PVOID)(uintptr_t)(ULONG)when.HighPart);
            pthread_cond_broadcast(&wdk_ke_cond);
        }
        if (next == INT64_MAX) {
            pthread_cond_wait(&timer_cond, &wdk_ke_lock);
        } else {
            struct timespec ts = { .tv_sec = next / 1000000000, .tv_nsec = next % 1000000000 };
            pthread_cond_timedwait(&timer_cond, &wdk_ke_lock, &ts);
        }
    }
}

VOID KeInitializeTimerEx(PKTIMER Timer, TIMER_TYPE Type)
{
    memset(Timer, 0, sizeof *Timer);
    Timer->Header.Type = Type == SynchronizationTimer ? WDK_OBJ_TIMER_SYNCHRONIZATION : WDK_OBJ_TIMER_NOTIFICATION;
    InitializeListHead(&Timer->Header.WaitListHead);
}

VOID KeInitializeTimer(PKTIMER Timer)
{
    KeInitializeTimerEx(Timer, NotificationTimer);
}

/* Lock held: takes the timer (and its queued DPC) out; TRUE if it was set. */
static BOOLEAN cancel_locked(PKTIMER t)
{
    if (!INSERTED(t))
        return FALSE;
    RemoveEntryList(&t->TimerListEntry);
    INSERTED(t) = 0;
    if (t->Dpc)
        wdk_dpc_remove_locked(t->Dpc);
    site_take_locked(t);
    return TRUE;
}

BOOLEAN wdk_KeSetTimerEx_at(PKTIMER Timer, LARGE_INTEGER DueTime, LONG Period, PKDPC Dpc, const char *site)
{
    if (wdk_irql_get() > DISPATCH_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", site, "KeSetTimer at IRQL %u", wdk_irql_get());
    if (Period < 0) {
        wdk_verify_report("TIMER_BAD_PERIOD", site, "KeSetTimerEx with a negative period (%d)", Period);
        Period = 0;
    }
    pthread_once(&timer_once, timer_cond_init);
    int64_t due = wdk_deadline_ns(&DueTime);
    pthread_mutex_lock(&wdk_ke_lock);
    BOOLEAN was = cancel_locked(Timer);
    Timer->DueTime.QuadPart = (ULONGLONG)due;
    Timer->Period = (ULONG)Period;
    Timer->Dpc = Dpc;
    wdk_signal_set(&Timer->Header, 0);
    InsertTailList(&timers, &Timer->TimerListEntry);
    INSERTED(Timer) = 1;
    site_set_locked(Timer, site);
    if (!thread_started && wdk_kit_thread_start(timer_thread, NULL, DISPATCH_LEVEL) == 0)
        thread_started = 1;
    pthread_cond_signal(&timer_cond);
    pthread_mutex_unlock(&wdk_ke_lock);
    return was;
}

BOOLEAN KeSetTimer(PKTIMER Timer, LARGE_INTEGER DueTime, PKDPC Dpc)
{
    return wdk_KeSetTimerEx_at(Timer, DueTime, 0, Dpc, WDK_CALLER);
}

BOOLEAN KeSetTimerEx(PKTIMER Timer, LARGE_INTEGER DueTime, LONG Period, PKDPC Dpc)
{
    return wdk_KeSetTimerEx_at(Timer, DueTime, Period, Dpc, WDK_CALLER);
}

BOOLEAN KeSetCoalescableTimer(PKTIMER Timer, LARGE_INTEGER DueTime, ULONG Period, ULONG TolerableDelay, PKDPC Dpc)
{
    return wdk_KeSetTimerEx_at(Timer, DueTime, (LONG)Period, Dpc, WDK_CALLER);
}

BOOLEAN KeCancelTimer(PKTIMER Timer)
{
    pthread_mutex_lock(&wdk_ke_lock);
    BOOLEAN was = cancel_locked(Timer);
    pthread_mutex_unlock(&wdk_ke_lock);
    return was;
}

BOOLEAN KeReadStateTimer(PKTIMER Timer)
{
    return (BOOLEAN)(wdk_signal_get(&Timer->Header) != 0);
}

unsigned wdk_timers_set(void)
{
    unsigned n = 0;
    pthread_mutex_lock(&wdk_ke_lock);
    for (PLIST_ENTRY e = timers.Flink; e != &timers; e = e->Flink)
        n++;
    pthread_mutex_unlock(&wdk_ke_lock);
    return n;
}

static void report_and_cancel(const char *lo, const char *hi, const char *rule, const char *what)
{
    pthread_mutex_lock(&wdk_ke_lock);
    for (PLIST_ENTRY e = timers.Flink; e != &timers;) {
        PKTIMER t = CONTAINING_RECORD(e, KTIMER, TimerListEntry);
        e = e->Flink;
        if (lo && ((const char *)t < lo || (const char *)t >= hi))
            continue;
        const char *site = site_take_locked(t);
        site_set_locked(t, site);
        cancel_locked(t);
        pthread_mutex_unlock(&wdk_ke_lock);
        wdk_verify_report(rule, site, "timer %p %s (cancelled)", (void *)t, what);
        pthread_mutex_lock(&wdk_ke_lock);
        e = timers.Flink;
    }
    pthread_mutex_unlock(&wdk_ke_lock);
}

void wdk_timers_check(void)
{
    report_and_cancel(NULL, NULL, "TIMER_STILL_SET", "still set after DriverUnload");
}

static void timer_forget(const char *lo, const char *hi)
{
    report_and_cancel(lo, hi, "TIMER_FREED_WHILE_SET", "was set when the memory holding it was freed");
}

__attribute__((constructor)) static void timer_ctor(void)
{
    wdk_forget_register(timer_forget);
}
