/*
 * irql.c - the emulated IRQL of each thread ("Managing Hardware Priorities"): a thread-local
 * level that kit threads set (PASSIVE_LEVEL for DriverEntry, DriverUnload, work items and system
 * threads; DISPATCH_LEVEL for DPCs and timers) and that KeRaiseIrql/KeLowerIrql and the spin
 * locks move. Threads the kit did not create (provider progress threads, for example) read
 * DISPATCH_LEVEL, the strictest level an NDK callback may arrive at, so code that passes here
 * passes on Windows.
 */
#include "wdk_internal.h"

#undef KeRaiseIrqlToDpcLevel
#undef KeRaiseIrqlToSynchLevel
#undef KeLowerIrql

static __thread int irql_known;   /* this thread's level was set by the kit */
static __thread KIRQL irql_value;

KIRQL wdk_irql_get(void)
{
    return irql_known ? irql_value : DISPATCH_LEVEL;
}

void wdk_irql_set(KIRQL irql)
{
    irql_known = 1;
    irql_value = irql;
}

KIRQL KeGetCurrentIrql(VOID)
{
    return wdk_irql_get();
}

/* Raising to a lower level is a bug check on Windows; the kit reports it and keeps the level. */
KIRQL wdk_KfRaiseIrql_at(KIRQL NewIrql, const char *site)
{
    KIRQL old = wdk_irql_get();
    if (NewIrql < old) {
        wdk_verify_report("IRQL_RAISE_BELOW_CURRENT", site, "KeRaiseIrql to %u while at %u", NewIrql, old);
        return old;
    }
    wdk_irql_set(NewIrql);
    return old;
}

KIRQL KfRaiseIrql(KIRQL NewIrql)
{
    return wdk_KfRaiseIrql_at(NewIrql, WDK_CALLER);
}

KIRQL KeRaiseIrqlToDpcLevel(VOID)
{
    return wdk_KfRaiseIrql_at(DISPATCH_LEVEL, WDK_CALLER);
}

KIRQL KeRaiseIrqlToSynchLevel(VOID)
{
    return wdk_KfRaiseIrql_at(SYNCH_LEVEL, WDK_CALLER);
}

void wdk_KeLowerIrql_at(KIRQL NewIrql, const char *site)
{
    KIRQL cur = wdk_irql_get();
    if (NewIrql > cur) {
        wdk_verify_report("IRQL_LOWER_ABOVE_CURRENT", site, "KeLowerIrql to %u while at %u", NewIrql, cur);
        return;
    }
    wdk_irql_set(NewIrql);
}

VOID KeLowerIrql(KIRQL NewIrql)
{
    wdk_KeLowerIrql_at(NewIrql, WDK_CALLER);
}

/* PAGED_CODE(): pageable code must not run above APC_LEVEL. */
void wdk_paged_code_at(const char *site)
{
    KIRQL cur = wdk_irql_get();
    if (cur > APC_LEVEL)
        wdk_verify_report("PAGED_CODE_ABOVE_APC", site, "pageable code runs at IRQL %u", cur);
}

/* APCs are not emulated: there is nothing to disable, so critical and guarded regions only
 * nest. */
static __thread int critical_depth;

VOID KeEnterCriticalRegion(VOID) { critical_depth++; }
VOID KeLeaveCriticalRegion(VOID) { critical_depth--; }
VOID KeEnterGuardedRegion(VOID) { critical_depth++; }
VOID KeLeaveGuardedRegion(VOID) { critical_depth--; }

BOOLEAN KeAreApcsDisabled(VOID)
{
    return (BOOLEAN)(critical_depth > 0 || wdk_irql_get() >= APC_LEVEL);
}

BOOLEAN KeAreAllApcsDisabled(VOID)
{
    return (BOOLEAN)(wdk_irql_get() >= APC_LEVEL);
}
