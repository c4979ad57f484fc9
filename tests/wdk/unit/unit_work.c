/*
 * unit_work - IO and Ex work items (PASSIVE_LEVEL, re-queue and free from the routine), DPCs and
 * timers (DISPATCH_LEVEL, one-shot and periodic, cancel), KeDelayExecutionThread and rundown
 * protection.
 */
#include "kunit.h"

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD WorkUnload;
static IO_WORKITEM_ROUTINE_EX WorkRoutine;
static WORKER_THREAD_ROUTINE ExRoutine;
static KDEFERRED_ROUTINE DpcRoutine;
static KDEFERRED_ROUTINE TimerDpc;

static KEVENT g_done;
static volatile LONG g_runs;
static KIRQL g_seen_irql = 99;
static PDEVICE_OBJECT g_dev;
static KTIMER g_timer;
static KDPC g_dpc, g_tdpc;
static volatile LONG g_ticks;
static PVOID g_arg1;
static EX_RUNDOWN_REF g_rd;

_Use_decl_annotations_
static VOID WorkUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
    PAGED_CODE();
    KeCancelTimer(&g_timer);
    KeFlushQueuedDpcs();
    if (g_dev)
        IoDeleteDevice(g_dev);
}

/* Runs twice: queues itself again from inside, then frees itself on the second run. */
_Use_decl_annotations_
static VOID WorkRoutine(PVOID IoObject, PVOID Context, PIO_WORKITEM IoWorkItem)
{
    UNREFERENCED_PARAMETER(Context);
    g_seen_irql = KeGetCurrentIrql();
    if (IoObject != g_dev)
        g_seen_irql = 77;
    if (InterlockedIncrement(&g_runs) == 1) {
        IoQueueWorkItemEx(IoWorkItem, WorkRoutine, DelayedWorkQueue, NULL);
        return;
    }
    IoFreeWorkItem(IoWorkItem);
    KeSetEvent(&g_done, IO_NO_INCREMENT, FALSE);
}

_Use_decl_annotations_
static VOID ExRoutine(PVOID Parameter)
{
    PAGED_CODE();
    InterlockedIncrement(&g_runs);
    ExFreePoolWithTag(Parameter, 'krWx');
    KeSetEvent(&g_done, IO_NO_INCREMENT, FALSE);
}

static NTSTATUS WorkItems(PDRIVER_OBJECT Driver)
{
    LARGE_INTEGER timeout;
    timeout.QuadPart = -5LL * 10 * 1000 * 1000;
    CHECK(NT_SUCCESS(IoCreateDevice(Driver, 0, NULL, FILE_DEVICE_UNKNOWN, 0, FALSE, &g_dev)));
    KeInitializeEvent(&g_done, NotificationEvent, FALSE);
    PIO_WORKITEM wi = IoAllocateWorkItem(g_dev);
    CHECK(wi != NULL);
    IoQueueWorkItemEx(wi, WorkRoutine, DelayedWorkQueue, NULL);
    CHECK(KeWaitForSingleObject(&g_done, Executive, KernelMode, FALSE, &timeout) == STATUS_SUCCESS);
    CHECK(g_runs == 2 && g_seen_irql == PASSIVE_LEVEL);
    /* The legacy form, the item in pool. */
    PWORK_QUEUE_ITEM ex = ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(*ex), 'krWx');
    CHECK(ex != NULL);
    KeClearEvent(&g_done);
    ExInitializeWorkItem(ex, ExRoutine, ex);
    ExQueueWorkItem(ex, DelayedWorkQueue);
    CHECK(KeWaitForSingleObject(&g_done, Executive, KernelMode, FALSE, &timeout) == STATUS_SUCCESS);
    CHECK(g_runs == 3);
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
static VOID DpcRoutine(PKDPC Dpc, PVOID DeferredContext, PVOID SystemArgument1, PVOID SystemArgument2)
{
    UNREFERENCED_PARAMETER(Dpc);
    UNREFERENCED_PARAMETER(SystemArgument2);
    g_seen_irql = KeGetCurrentIrql();
    g_arg1 = SystemArgument1;
    KeSetEvent((PKEVENT)DeferredContext, IO_NO_INCREMENT, FALSE);
}

_Use_decl_annotations_
static VOID TimerDpc(PKDPC Dpc, PVOID DeferredContext, PVOID SystemArgument1, PVOID SystemArgument2)
{
    UNREFERENCED_PARAMETER(Dpc);
    UNREFERENCED_PARAMETER(DeferredContext);
    UNREFERENCED_PARAMETER(SystemArgument1);
    UNREFERENCED_PARAMETER(SystemArgument2);
    if (KeGetCurrentIrql() != DISPATCH_LEVEL)
        return;
    if (InterlockedIncrement(&g_ticks) == 3)
        KeSetEvent(&g_done, IO_NO_INCREMENT, FALSE);
}

static NTSTATUS DpcsAndTimers(void)
{
    LARGE_INTEGER timeout, due;
    timeout.QuadPart = -5LL * 10 * 1000 * 1000;
    KeInitializeEvent(&g_done, NotificationEvent, FALSE);
    KeInitializeDpc(&g_dpc, DpcRoutine, &g_done);
    CHECK(KeInsertQueueDpc(&g_dpc, (PVOID)0x1234, NULL));
    CHECK(KeWaitForSingleObject(&g_done, Executive, KernelMode, FALSE, &timeout) == STATUS_SUCCESS);
    CHECK(g_seen_irql == DISPATCH_LEVEL && g_arg1 == (PVOID)0x1234);
    KeFlushQueuedDpcs();

    /* A periodic timer (first in 1 ms, then every 5 ms) ticks three times. */
    KeClearEvent(&g_done);
    KeInitializeTimerEx(&g_timer, NotificationTimer);
    KeInitializeDpc(&g_tdpc, TimerDpc, NULL);
    due.QuadPart = -10000;
    CHECK(!KeSetTimerEx(&g_timer, due, 5, &g_tdpc));
    CHECK(KeWaitForSingleObject(&g_done, Executive, KernelMode, FALSE, &timeout) == STATUS_SUCCESS);
    CHECK(KeCancelTimer(&g_timer));   /* periodic: still set */
    CHECK(!KeCancelTimer(&g_timer));
    KeFlushQueuedDpcs();
    CHECK(g_ticks >= 3);

    /* Re-setting a set timer reports TRUE; a cancelled one-shot never fires. */
    LONG before = g_ticks;
    due.QuadPart = -50LL * 10000;
    CHECK(!KeSetTimer(&g_timer, due, &g_tdpc));
    CHECK(KeSetTimer(&g_timer, due, &g_tdpc));
    CHECK(KeCancelTimer(&g_timer));
    due.QuadPart = -80LL * 10000;
    KeDelayExecutionThread(KernelMode, FALSE, &due);
    CHECK(g_ticks == before);
    return STATUS_SUCCESS;
}

static NTSTATUS Rundown(void)
{
    ExInitializeRundownProtection(&g_rd);
    CHECK(ExAcquireRundownProtection(&g_rd));
    CHECK(ExAcquireRundownProtectionEx(&g_rd, 3));
    ExReleaseRundownProtectionEx(&g_rd, 3);
    ExReleaseRundownProtection(&g_rd);
    ExWaitForRundownProtectionRelease(&g_rd);
    CHECK(!ExAcquireRundownProtection(&g_rd));
    ExRundownCompleted(&g_rd);
    ExWaitForRundownProtectionRelease(&g_rd);   /* returns at once */
    ExReInitializeRundownProtection(&g_rd);
    CHECK(ExAcquireRundownProtection(&g_rd));
    ExReleaseRundownProtection(&g_rd);
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    UNREFERENCED_PARAMETER(RegistryPath);
    DriverObject->DriverUnload = WorkUnload;
    NTSTATUS st = WorkItems(DriverObject);
    if (!NT_SUCCESS(st))
        return st;
    DbgPrint("PASS WorkItems\n");
    RUN(DpcsAndTimers);
    RUN(Rundown);
    return STATUS_SUCCESS;
}
