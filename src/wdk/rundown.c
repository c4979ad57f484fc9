/*
 * rundown.c - run-down protection ("ExAcquireRundownProtection function (wdm.h)",
 * "ExWaitForRundownProtectionRelease function (wdm.h)"). The reference's own 8 bytes hold the
 * count (in units of EX_RUNDOWN_COUNT_INC) and the EX_RUNDOWN_ACTIVE bit; acquire fails once the
 * bit is set. ExWaitForRundownProtectionRelease sets it and blocks until every reference is
 * released (as documented: it does not time out); if it has waited 5 s it reports
 * RUNDOWN_WAIT_STUCK once, naming where the held references were taken, and keeps waiting.
 *
 * A side table remembers, per reference address, how many references are held and where the
 * last one was taken, so that a reference still held at unload (RUNDOWN_REF_HELD) and a release
 * without an acquire (RUNDOWN_RELEASE_UNACQUIRED) name the driver's line. Entries inside freed
 * pool are dropped.
 */
#include <stdlib.h>
#include "wdk_internal.h"

#undef ExAcquireRundownProtection
#undef ExAcquireRundownProtectionEx
#undef ExReleaseRundownProtection
#undef ExReleaseRundownProtectionEx
#undef ExWaitForRundownProtectionRelease

#define NB 256

struct rd_entry {
    PEX_RUNDOWN_REF ref;
    long held;
    const char *site;                  /* last acquire */
    struct rd_entry *next;
};

/* rd_lock guards the side table; leaf lock. */
static pthread_mutex_t rd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rd_entry *table[NB];

static unsigned slot(const void *p)
{
    return (unsigned)(((uintptr_t)p >> 3) * 2654435761u) % NB;
}

static struct rd_entry *entry_locked(PEX_RUNDOWN_REF r, int create)
{
    for (struct rd_entry *e = table[slot(r)]; e; e = e->next)
        if (e->ref == r)
            return e;
    if (!create)
        return NULL;
    struct rd_entry *e = calloc(1, sizeof *e);
    if (e) {
        e->ref = r;
        e->next = table[slot(r)];
        table[slot(r)] = e;
    }
    return e;
}

static void forget_locked(PEX_RUNDOWN_REF r)
{
    for (struct rd_entry **pp = &table[slot(r)]; *pp; pp = &(*pp)->next)
        if ((*pp)->ref == r) {
            struct rd_entry *e = *pp;
            *pp = e->next;
            free(e);
            return;
        }
}

static ULONG_PTR load(PEX_RUNDOWN_REF r)
{
    return __atomic_load_n(&r->Count, __ATOMIC_ACQUIRE);
}

VOID ExInitializeRundownProtection(PEX_RUNDOWN_REF RunRef)
{
    __atomic_store_n(&RunRef->Count, 0, __ATOMIC_RELEASE);
    pthread_mutex_lock(&rd_lock);
    forget_locked(RunRef);
    pthread_mutex_unlock(&rd_lock);
}

VOID ExReInitializeRundownProtection(PEX_RUNDOWN_REF RunRef)
{
    ExInitializeRundownProtection(RunRef);
}

BOOLEAN wdk_rundown_acquire_at(PEX_RUNDOWN_REF RunRef, ULONG Count, const char *site)
{
    ULONG_PTR v = load(RunRef);
    do {
        if (v & EX_RUNDOWN_ACTIVE)
            return FALSE;
    } while (!__atomic_compare_exchange_n(&RunRef->Count, &v, v + (ULONG_PTR)Count * EX_RUNDOWN_COUNT_INC, 0,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    pthread_mutex_lock(&rd_lock);
    struct rd_entry *e = entry_locked(RunRef, 1);
    if (e) {
        e->held += Count;
        e->site = site;
    }
    pthread_mutex_unlock(&rd_lock);
    return TRUE;
}

void wdk_rundown_release_at(PEX_RUNDOWN_REF RunRef, ULONG Count, const char *site)
{
    ULONG_PTR v = load(RunRef), nv;
    do {
        if ((v >> EX_RUNDOWN_COUNT_SHIFT) < Count) {
            wdk_verify_report("RUNDOWN_RELEASE_UNACQUIRED", site,
                              "ExReleaseRundownProtection of %u reference%s while %lu %s held", Count,
                              Count == 1 ? "" : "s", (unsigned long)(v >> EX_RUNDOWN_COUNT_SHIFT),
                              (v >> EX_RUNDOWN_COUNT_SHIFT) == 1 ? "is" : "are");
            return;
        }
        nv = v - (ULONG_PTR)Count * EX_RUNDOWN_COUNT_INC;
    } while (!__atomic_compare_exchange_n(&RunRef->Count, &v, nv, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    pthread_mutex_lock(&rd_lock);
    struct rd_entry *e = entry_locked(RunRef, 0);
    if (e) {
        e->held -= Count;
        if (e->held <= 0)
            forget_locked(RunRef);
    }
    pthread_mutex_unlock(&rd_lock);
    if ((nv & EX_RUNDOWN_ACTIVE) && (nv >> EX_RUNDOWN_COUNT_SHIFT) == 0) {
        pthread_mutex_lock(&wdk_ke_lock);
        pthread_cond_broadcast(&wdk_ke_cond);
        pthread_mutex_unlock(&wdk_ke_lock);
    }
}

void wdk_rundown_wait_at(PEX_RUNDOWN_REF RunRef, const char *site)
{
    if (wdk_irql_get() > APC_LEVEL)
        wdk_verify_report("WAIT_AT_DISPATCH", site, "ExWaitForRundownProtectionRelease at IRQL %u", wdk_irql_get());
    __atomic_fetch_or(&RunRef->Count, EX_RUNDOWN_ACTIVE, __ATOMIC_ACQ_REL);
    int64_t report_at = wdk_mono_ns() + 5LL * 1000000000;
    int reported = 0;
    pthread_mutex_lock(&wdk_ke_lock);
    while (load(RunRef) >> EX_RUNDOWN_COUNT_SHIFT) {
        if (!reported && wdk_mono_ns() >= report_at) {
            pthread_mutex_unlock(&wdk_ke_lock);
            pthread_mutex_lock(&rd_lock);
            struct rd_entry *e = entry_locked(RunRef, 0);
            const char *held_at = e ? e->site : "?";
            pthread_mutex_unlock(&rd_lock);
            wdk_verify_report("RUNDOWN_WAIT_STUCK", site,
                              "ExWaitForRundownProtectionRelease has waited 5 s for %lu reference(s); last taken at %s",
                              (unsigned long)(load(RunRef) >> EX_RUNDOWN_COUNT_SHIFT), held_at);
            reported = 1;
            pthread_mutex_lock(&wdk_ke_lock);
            continue;
        }
        wdk_ke_wait_until(reported ? INT64_MAX : report_at);
    }
    pthread_mutex_unlock(&wdk_ke_lock);
}

VOID ExRundownCompleted(PEX_RUNDOWN_REF RunRef)
{
    __atomic_store_n(&RunRef->Count, EX_RUNDOWN_ACTIVE, __ATOMIC_RELEASE);
}

BOOLEAN ExAcquireRundownProtection(PEX_RUNDOWN_REF RunRef) { return wdk_rundown_acquire_at(RunRef, 1, WDK_CALLER); }
BOOLEAN ExAcquireRundownProtectionEx(PEX_RUNDOWN_REF RunRef, ULONG Count)
{
    return wdk_rundown_acquire_at(RunRef, Count, WDK_CALLER);
}
VOID ExReleaseRundownProtection(PEX_RUNDOWN_REF RunRef) { wdk_rundown_release_at(RunRef, 1, WDK_CALLER); }
VOID ExReleaseRundownProtectionEx(PEX_RUNDOWN_REF RunRef, ULONG Count)
{
    wdk_rundown_release_at(RunRef, Count, WDK_CALLER);
}
VOID ExWaitForRundownProtectionRelease(PEX_RUNDOWN_REF RunRef) { wdk_rundown_wait_at(RunRef, WDK_CALLER); }

void wdk_rundown_check(void)
{
    pthread_mutex_lock(&rd_lock);
    for (unsigned i = 0; i < NB; i++)
        while (table[i]) {
            struct rd_entry *e = table[i];
            table[i] = e->next;
            if (e->held > 0)
                wdk_verify_report("RUNDOWN_REF_HELD", e->site,
                                  "%ld rundown reference%s on %p still held at unload (acquired, never released)",
                                  e->held, e->held == 1 ? "" : "s", (void *)e->ref);
            free(e);
        }
    pthread_mutex_unlock(&rd_lock);
}

static void rundown_forget(const char *lo, const char *hi)
{
    pthread_mutex_lock(&rd_lock);
    for (unsigned i = 0; i < NB; i++)
        for (struct rd_entry **pp = &table[i]; *pp;) {
            struct rd_entry *e = *pp;
            if ((const char *)e->ref >= lo && (const char *)e->ref < hi) {
                *pp = e->next;
                free(e);
            } else {
                pp = &e->next;
            }
        }
    pthread_mutex_unlock(&rd_lock);
}

__attribute__((constructor)) static void rundown_ctor(void)
{
    wdk_forget_register(rundown_forget);
}
