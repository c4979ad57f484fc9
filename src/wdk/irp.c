/*
 * irp.c - IRPs ("IoAllocateIrp function (wdm.h)", "IoCompleteRequest macro (wdm.h)",
 * "IoCallDriver macro (wdm.h)"). The host sends no IRPs; a driver may build its own and pass
 * them to one of its own devices. An IRP of StackSize locations starts one past the last
 * location; IoCallDriver moves to the next one and calls the device's MajorFunction entry.
 * Completion walks back up the stack calling each completion routine whose Invoke* bits match
 * the status, stops at STATUS_MORE_PROCESSING_REQUIRED, then signals UserEvent / fills UserIosb.
 * Only devices of the loaded driver exist, so there is no lower driver to call.
 */
#include "wdk_internal.h"

#undef IoCallDriver
#undef IoCompleteRequest

/* IRPs the I/O manager owns (IoBuildDeviceIoControlRequest) are freed when they complete. */
#define IRP_KIT_FREE_ON_COMPLETION 0x80

VOID IoInitializeIrp(PIRP Irp, USHORT PacketSize, CCHAR StackSize)
{
    memset(Irp, 0, PacketSize);
    Irp->Type = 6;   /* IO_TYPE_IRP */
    Irp->Size = PacketSize;
    Irp->StackCount = StackSize;
    Irp->CurrentLocation = (CHAR)(StackSize + 1);
    InitializeListHead(&Irp->ThreadListEntry);
    Irp->Tail.Overlay.CurrentStackLocation = (PIO_STACK_LOCATION)(Irp + 1) + StackSize;
}

PIRP IoAllocateIrp(CCHAR StackSize, BOOLEAN ChargeQuota)
{
    if (StackSize < 1)
        return NULL;
    SIZE_T n = IoSizeOfIrp(StackSize);
    PIRP irp = wdk_mem_alloc(n, 1, 0, WDK_MEM_IRP, "IoAllocateIrp", WDK_CALLER);
    if (irp)
        IoInitializeIrp(irp, (USHORT)n, StackSize);
    return irp;
}

VOID IoFreeIrp(PIRP Irp)
{
    if (wdk_mem_free(Irp, WDK_MEM_IRP, NULL))
        wdk_verify_report("IRP_FREE_INVALID", WDK_CALLER, "IoFreeIrp of %p, not an IRP from IoAllocateIrp",
                          (void *)Irp);
}

VOID IoReuseIrp(PIRP Irp, NTSTATUS Iostatus)
{
    IoInitializeIrp(Irp, Irp->Size, Irp->StackCount);
    Irp->IoStatus.Status = Iostatus;
}

NTSTATUS IofCallDriver(PDEVICE_OBJECT DeviceObject, PIRP Irp)
{
    if (Irp->CurrentLocation <= 1) {
        wdk_verify_report("IRP_NO_STACK_LOCATION", WDK_CALLER, "IoCallDriver with no stack location left");
        return STATUS_INVALID_PARAMETER;
    }
    IoSetNextIrpStackLocation(Irp);
    PIO_STACK_LOCATION sl = IoGetCurrentIrpStackLocation(Irp);
    sl->DeviceObject = DeviceObject;
    PDRIVER_DISPATCH fn = DeviceObject->DriverObject->MajorFunction[sl->MajorFunction];
    return fn(DeviceObject, Irp);
}

VOID IofCompleteRequest(PIRP Irp, CCHAR PriorityBoost)
{
    if (wdk_irql_get() > DISPATCH_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", WDK_CALLER, "IoCompleteRequest at IRQL %u", wdk_irql_get());
    if (Irp->IoStatus.Status == STATUS_PENDING) {
        wdk_verify_report("IRP_COMPLETED_PENDING", WDK_CALLER, "IoCompleteRequest with status STATUS_PENDING");
        return;
    }
    PIO_STACK_LOCATION bottom = (PIO_STACK_LOCATION)(Irp + 1);
    PIO_STACK_LOCATION last = bottom + Irp->StackCount;
    PIO_STACK_LOCATION sl = Irp->Tail.Overlay.CurrentStackLocation;
    while (sl < last) {
        Irp->PendingReturned = (BOOLEAN)((sl->Control & SL_PENDING_RETURNED) != 0);
        UCHAR want = NT_SUCCESS(Irp->IoStatus.Status) ? SL_INVOKE_ON_SUCCESS : SL_INVOKE_ON_ERROR;
        if (Irp->Cancel)
            want |= SL_INVOKE_ON_CANCEL;
        PIO_COMPLETION_ROUTINE routine = sl->CompletionRoutine;
        PVOID ctx = sl->Context;
        UCHAR control = sl->Control;
        Irp->CurrentLocation++;
        Irp->Tail.Overlay.CurrentStackLocation++;
        sl++;
        if (routine && (control & want)) {
            PDEVICE_OBJECT dev = sl < last ? sl->DeviceObject : NULL;
            if (routine(dev, Irp, ctx) == STATUS_MORE_PROCESSING_REQUIRED)
                return;
        } else if (Irp->PendingReturned && sl < last) {
            sl->Control |= SL_PENDING_RETURNED;
        }
    }
    if (Irp->UserIosb)
        *Irp->UserIosb = Irp->IoStatus;
    if (Irp->UserEvent)
        KeSetEvent(Irp->UserEvent, PriorityBoost, FALSE);
    if (Irp->AllocationFlags & IRP_KIT_FREE_ON_COMPLETION)
        IoFreeIrp(Irp);
}

/* Sets Cancel and calls the cancel routine (with the cancel spin lock held, as documented). */
static KSPIN_LOCK cancel_lock;

VOID IoAcquireCancelSpinLock(PKIRQL Irql)
{
    *Irql = wdk_KeAcquireSpinLock_at(&cancel_lock, WDK_CALLER);
}

VOID IoReleaseCancelSpinLock(KIRQL Irql)
{
    wdk_KeReleaseSpinLock_at(&cancel_lock, Irql, WDK_CALLER);
}

BOOLEAN IoCancelIrp(PIRP Irp)
{
    KIRQL irql;
    IoAcquireCancelSpinLock(&irql);
    Irp->Cancel = TRUE;
    PDRIVER_CANCEL routine = IoSetCancelRoutine(Irp, NULL);
    if (!routine) {
        IoReleaseCancelSpinLock(irql);
        return FALSE;
    }
    Irp->CancelIrql = irql;
    PIO_STACK_LOCATION sl = IoGetCurrentIrpStackLocation(Irp);
    routine(sl->DeviceObject, Irp);   /* the routine releases the cancel spin lock */
    return TRUE;
}

PIRP IoBuildDeviceIoControlRequest(ULONG IoControlCode, PDEVICE_OBJECT DeviceObject, PVOID InputBuffer,
                                   ULONG InputBufferLength, PVOID OutputBuffer, ULONG OutputBufferLength,
                                   BOOLEAN InternalDeviceIoControl, PKEVENT Event, PIO_STATUS_BLOCK IoStatusBlock)
{
    PIRP irp = IoAllocateIrp(DeviceObject->StackSize, FALSE);
    if (!irp)
        return NULL;
    PIO_STACK_LOCATION sl = IoGetNextIrpStackLocation(irp);
    sl->MajorFunction = InternalDeviceIoControl ? IRP_MJ_INTERNAL_DEVICE_CONTROL : IRP_MJ_DEVICE_CONTROL;
    sl->Parameters.DeviceIoControl.IoControlCode = IoControlCode;
    sl->Parameters.DeviceIoControl.InputBufferLength = InputBufferLength;
    sl->Parameters.DeviceIoControl.OutputBufferLength = OutputBufferLength;
    sl->Parameters.DeviceIoControl.Type3InputBuffer = InputBuffer;
    irp->AssociatedIrp.SystemBuffer = InputBuffer ? InputBuffer : OutputBuffer;
    irp->UserBuffer = OutputBuffer;
    irp->UserEvent = Event;
    irp->UserIosb = IoStatusBlock;
    irp->AllocationFlags |= IRP_KIT_FREE_ON_COMPLETION;
    return irp;
}
