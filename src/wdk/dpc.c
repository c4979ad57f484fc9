/*
 * dpc.c - deferred procedure calls ("KeInsertQueueDpc function (wdm.h)", "KeFlushQueuedDpcs
 * function (wdm.h)"): one kit thread, the kit's single "processor" for DPCs, runs queued DPCs in
 * order at DISPATCH_LEVEL. A DPC object is in the queue at most once (DpcData marks it); the
 * system arguments are those of the insert. A DPC routine that returns at another IRQL is
 * reported; so is a DPC still queued at unload or inside memory being freed.
 */
#include <stdlib.h>
#include "wdk_internal.h"
#include "wdk_timer.h"

#define DPC_QUEUED ((PVOID)(uintptr_t)1)

/* Under wdk_ke_lock: the FIFO (linked through DpcListEntry) and the running count. */
static PKDPC head, tail;
static unsigned running_dpcs;
static int thread_started;
static pthread_cond_t dpc_cond = PTHREAD_COND_INITIALIZER;

static PKDPC next_of(PKDPC d)
{
    return d->DpcListEntry.Next ? CONTAINING_RECORD(d->DpcListEntry.Next, KDPC, DpcListEntry) : NULL;
}

static void dpc_thread(void *arg)
{
    pthread_mutex_lock(&wdk_ke_lock);
    for (;;) {
        while (!head)
            pthread_cond_wait(&dpc_cond, &wdk_ke_lock);
        PKDPC d = head;
        head = next_of(d);
        if (!head)
            tail = NULL;
        d->DpcListEntry.Next = NULL;
        d->DpcData = NULL;
        PKDEFERRED_ROUTINE routine = d->DeferredRoutine;
        PVOID ctx = d->DeferredContext, a1 = d->SystemArgument1, a2 = d->SystemArgument2;
        running_dpcs++;
        pthread_mutex_unlock(&wdk_ke_lock);
        wdk_irql_set(DISPATCH_LEVEL);
        routine(d, ctx, a1, a2);
        if (wdk_irql_get() != DISPATCH_LEVEL) {
            wdk_verify_report("DPC_IRQL", wdk_site_from_ra((const void *)(uintptr_t)routine),
                              "DPC routine returned at IRQL %u", wdk_irql_get());
            wdk_irql_set(DISPATCH_LEVEL);
        }
        pthread_mutex_lock(&wdk_ke_lock);
        running_dpcs--;
        pthread_cond_broadcast(&wdk_ke_cond);
    }
}

VOID KeInitializeDpc(PRKDPC Dpc, PKDEFERRED_ROUTINE DeferredRoutine, PVOID DeferredContext)
{
    memset(Dpc, 0, sizeof *Dpc);
    Dpc->Type = 19;   /* DpcObject */
    Dpc->Importance = MediumImportance;
    Dpc->DeferredRoutine = DeferredRoutine;
    Dpc->DeferredContext = DeferredContext;
}

VOID KeInitializeThreadedDpc(PRKDPC Dpc, PKDEFERRED_ROUTINE DeferredRoutine, PVOID DeferredContext)
{
    KeInitializeDpc(Dpc, DeferredRoutine, DeferredContext);
    Dpc->Type = 24;   /* ThreadedDpcObject; runs like any DPC here */
}

BOOLEAN wdk_dpc_insert_locked(PKDPC Dpc, PVOID SystemArgument1, PVOID SystemArgument2)
{
    if (Dpc->DpcData)
        return FALSE;
    Dpc->SystemArgument1 = SystemArgument1;
    Dpc->SystemArgument2 = SystemArgument2;
    Dpc->DpcData = DPC_QUEUED;
    Dpc->DpcListEntry.Next = NULL;
    if (tail)
        tail->DpcListEntry.Next = &Dpc->DpcListEntry;
    else
        head = Dpc;
    tail = Dpc;
    if (!thread_started && wdk_kit_thread_start(dpc_thread, NULL, DISPATCH_LEVEL) == 0)
        thread_started = 1;
    pthread_cond_signal(&dpc_cond);
    return TRUE;
}

BOOLEAN wdk_dpc_remove_locked(PKDPC Dpc)
{
    if (!Dpc->DpcData)
        return FALSE;
    PKDPC prev = NULL;
    for (PKDPC d = head; d; prev = d, d = next_of(d))
        if (d == Dpc) {
            PKDPC next = next_of(d);
            if (prev)
                prev->DpcListEntry.Next = next ? &next->DpcListEntry : NULL;
            else
                head = next;
            if (!next)
                tail = prev;
            d->DpcData = NULL;
            d->DpcListEntry.Next = NULL;
            return TRUE;
        }
    return FALSE;
}

BOOLEAN KeInsertQueueDpc(PRKDPC Dpc, PVOID SystemArgument1, PVOID SystemArgument2)
{
    pthread_mutex_lock(&wdk_ke_lock);
    BOOLEAN r = wdk_dpc_insert_locked(Dpc, SystemArgument1, SystemArgument2);
    pthread_mutex_unlock(&wdk_ke_lock);
    return r;
}

BOOLEAN KeRemoveQueueDpc(PRKDPC Dpc)
{
    pthread_mutex_lock(&wdk_ke_lock);
    BOOLEAN r = wdk_dpc_remove_locked(Dpc);
    pthread_mutex_unlock(&wdk_ke_lock);
    return r;
}

/* Waits until nothing queued before the call is left to run (the kit waits for an empty,
 * idle queue, which covers it). */
VOID KeFlushQueuedDpcs(VOID)
{
    if (wdk_irql_get() != PASSIVE_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", WDK_CALLER, "KeFlushQueuedDpcs at IRQL %u", wdk_irql_get());
    pthread_mutex_lock(&wdk_ke_lock);
    while (head || running_dpcs)
        wdk_ke_wait_until(INT64_MAX);
    pthread_mutex_unlock(&wdk_ke_lock);
}

VOID KeSetImportanceDpc(PRKDPC Dpc, KDPC_IMPORTANCE Importance)
{
    Dpc->Importance = (UCHAR)Importance;
}

VOID KeSetTargetProcessorDpc(PRKDPC Dpc, CCHAR Number)
{
    Dpc->Number = (USHORT)Number;
}

NTSTATUS KeSetTargetProcessorDpcEx(PKDPC Dpc, PPROCESSOR_NUMBER ProcNumber)
{
    if (!ProcNumber || ProcNumber->Group >= KeQueryActiveGroupCount())
        return STATUS_INVALID_PARAMETER;
    Dpc->Number = ProcNumber->Number;
    return STATUS_SUCCESS;
}

unsigned wdk_dpc_pending(void)
{
    pthread_mutex_lock(&wdk_ke_lock);
    unsigned n = running_dpcs;
    for (PKDPC d = head; d; d = next_of(d))
        n++;
    pthread_mutex_unlock(&wdk_ke_lock);
    return n;
}

void wdk_dpc_check(void)
{
    pthread_mutex_lock(&wdk_ke_lock);
    while (head) {
        PKDPC d = head;
        wdk_dpc_remove_locked(d);
        pthread_mutex_unlock(&wdk_ke_lock);
        wdk_verify_report("DPC_STILL_QUEUED", wdk_site_from_ra((const void *)(uintptr_t)d->DeferredRoutine),
                          "DPC %p still queued after DriverUnload (removed)", (void *)d);
        pthread_mutex_lock(&wdk_ke_lock);
    }
    pthread_mutex_unlock(&wdk_ke_lock);
}

static void dpc_forget(const char *lo, const char *hi)
{
    pthread_mutex_lock(&wdk_ke_lock);
    for (PKDPC d = head; d;) {
        PKDPC next = next_of(d);
        if ((const char *)d >= lo && (const char *)d < hi) {
            wdk_dpc_remove_locked(d);
            pthread_mutex_unlock(&wdk_ke_lock);
            wdk_verify_report("DPC_FREED_WHILE_QUEUED", wdk_site_from_ra((const void *)(uintptr_t)d->DeferredRoutine),
                              "memory holding a queued DPC was freed (DPC removed)");
            pthread_mutex_lock(&wdk_ke_lock);
            next = head;
        }
        d = next;
    }
    pthread_mutex_unlock(&wdk_ke_lock);
}

__attribute__((constructor)) static void dpc_ctor(void)
{
    wdk_forget_register(dpc_forget);
}
