/*
 * verifier_drv - breaks one Driver Verifier rule of the kit, chosen by the Case parameter
 * (ndkdrv --param Case=NAME), or follows it (Case=*_ok) as the control. Plain WDM code.
 */
#include <ntddk.h>

#define TAG_LEAK 'kaeL'
#define TAG_TEST 'tseT'

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD VfUnload;
static IO_WORKITEM_ROUTINE VfReleaseElsewhere;

static KSPIN_LOCK g_lock;
static KEVENT g_done;
static EX_RUNDOWN_REF g_rundown;
static KTIMER g_timer;
static PDEVICE_OBJECT g_device;

_Use_decl_annotations_
static VOID VfUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
}

static NTSTATUS ReadCase(PUNICODE_STRING RegistryPath, PWCHAR Buffer, ULONG Chars)
{
    OBJECT_ATTRIBUTES oa;
    UNICODE_STRING params, name;
    HANDLE root, key;
    UCHAR info[sizeof(KEY_VALUE_PARTIAL_INFORMATION) + 128];
    PKEY_VALUE_PARTIAL_INFORMATION v = (PKEY_VALUE_PARTIAL_INFORMATION)info;
    ULONG len;
    NTSTATUS status;

    InitializeObjectAttributes(&oa, RegistryPath, OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE, NULL, NULL);
    status = ZwOpenKey(&root, KEY_READ, &oa);
    if (!NT_SUCCESS(status))
        return status;
    RtlInitUnicodeString(&params, L"Parameters");
    InitializeObjectAttributes(&oa, &params, OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE, root, NULL);
    status = ZwOpenKey(&key, KEY_READ, &oa);
    ZwClose(root);
    if (!NT_SUCCESS(status))
        return status;
    RtlInitUnicodeString(&name, L"Case");
    status = ZwQueryValueKey(key, &name, KeyValuePartialInformation, v, sizeof(info), &len);
    ZwClose(key);
    if (!NT_SUCCESS(status))
        return status;
    if (v->Type != REG_SZ || v->DataLength > Chars * sizeof(WCHAR))
        return STATUS_INVALID_PARAMETER;
    RtlCopyMemory(Buffer, v->Data, v->DataLength);
    return STATUS_SUCCESS;
}

static BOOLEAN Is(PCWSTR Case, PCWSTR Name)
{
    UNICODE_STRING a, b;
    RtlInitUnicodeString(&a, Case);
    RtlInitUnicodeString(&b, Name);
    return RtlEqualUnicodeString(&a, &b, TRUE);
}

_Use_decl_annotations_
static VOID VfReleaseElsewhere(PDEVICE_OBJECT DeviceObject, PVOID Context)
{
    KIRQL old;
    UNREFERENCED_PARAMETER(DeviceObject);
    KeRaiseIrql(DISPATCH_LEVEL, &old);
    KeReleaseSpinLockFromDpcLevel(&g_lock);   /* acquired by DriverEntry's thread */
    KeLowerIrql(old);
    IoFreeWorkItem((PIO_WORKITEM)Context);
    KeSetEvent(&g_done, IO_NO_INCREMENT, FALSE);
}

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    WCHAR c[64] = { 0 };
    KIRQL old;
    LARGE_INTEGER timeout;
    NTSTATUS status;

    DriverObject->DriverUnload = VfUnload;
    status = ReadCase(RegistryPath, c, RTL_NUMBER_OF(c) - 1);
    if (!NT_SUCCESS(status)) {
        DbgPrint("no Case parameter (0x%08X)\n", status);
        return status;
    }
    DbgPrint("case %ws\n", c);
    KeInitializeSpinLock(&g_lock);
    KeInitializeEvent(&g_done, NotificationEvent, FALSE);

    if (Is(c, L"wait_dispatch") || Is(c, L"wait_dispatch_ok")) {
        /* A 1 ms wait at DISPATCH_LEVEL is the bug; a zero-timeout poll is allowed there. */
        timeout.QuadPart = Is(c, L"wait_dispatch") ? -10000 : 0;
        KeRaiseIrql(DISPATCH_LEVEL, &old);
        status = KeWaitForSingleObject(&g_done, Executive, KernelMode, FALSE, &timeout);
        KeLowerIrql(old);
        return status == STATUS_TIMEOUT ? STATUS_SUCCESS : STATUS_UNSUCCESSFUL;
    }
    if (Is(c, L"paged_code")) {
        KeRaiseIrql(DISPATCH_LEVEL, &old);
        PAGED_CODE();
        KeLowerIrql(old);
        return STATUS_SUCCESS;
    }
    if (Is(c, L"paged_code_ok")) {
        PAGED_CODE();
        return STATUS_SUCCESS;
    }
    if (Is(c, L"spinlock_irql")) {
        KeAcquireSpinLock(&g_lock, &old);
        KeLowerIrql(PASSIVE_LEVEL);   /* the bug: the release below then runs at PASSIVE_LEVEL */
        KeReleaseSpinLock(&g_lock, old);
        return STATUS_SUCCESS;
    }
    if (Is(c, L"spinlock_thread")) {
        PIO_WORKITEM wi;
        status = IoCreateDevice(DriverObject, 0, NULL, FILE_DEVICE_UNKNOWN, 0, FALSE, &g_device);
        if (!NT_SUCCESS(status))
            return status;
        wi = IoAllocateWorkItem(g_device);
        if (!wi)
            return STATUS_INSUFFICIENT_RESOURCES;
        KeRaiseIrql(DISPATCH_LEVEL, &old);
        KeAcquireSpinLockAtDpcLevel(&g_lock);
        KeLowerIrql(old);
        IoQueueWorkItem(wi, VfReleaseElsewhere, DelayedWorkQueue, wi);
        KeWaitForSingleObject(&g_done, Executive, KernelMode, FALSE, NULL);
        IoDeleteDevice(g_device);
        return STATUS_SUCCESS;
    }
    if (Is(c, L"spinlock_ok")) {
        KLOCK_QUEUE_HANDLE h;
        KeAcquireSpinLock(&g_lock, &old);
        if (KeGetCurrentIrql() != DISPATCH_LEVEL)
            return STATUS_UNSUCCESSFUL;
        KeReleaseSpinLock(&g_lock, old);
        KeAcquireInStackQueuedSpinLock(&g_lock, &h);
        KeReleaseInStackQueuedSpinLock(&h);
        KeRaiseIrql(DISPATCH_LEVEL, &old);
        KeAcquireSpinLockAtDpcLevel(&g_lock);
        KeReleaseSpinLockFromDpcLevel(&g_lock);
        KeLowerIrql(old);
        return KeGetCurrentIrql() == PASSIVE_LEVEL ? STATUS_SUCCESS : STATUS_UNSUCCESSFUL;
    }
    if (Is(c, L"pool_leak") || Is(c, L"pool_ok")) {
        PVOID p = ExAllocatePool2(POOL_FLAG_NON_PAGED, 100, TAG_LEAK);
        PVOID q = ExAllocatePoolWithTag(NonPagedPoolNx, 28, TAG_LEAK);
        if (!p || !q)
            return STATUS_INSUFFICIENT_RESOURCES;
        if (Is(c, L"pool_ok")) {
            ExFreePoolWithTag(p, TAG_LEAK);
            ExFreePool(q);
        }
        return STATUS_SUCCESS;
    }
    if (Is(c, L"pool_wrong_tag")) {
        PVOID p = ExAllocatePool2(POOL_FLAG_NON_PAGED, 16, TAG_TEST);
        if (!p)
            return STATUS_INSUFFICIENT_RESOURCES;
        ExFreePoolWithTag(p, TAG_LEAK);
        return STATUS_SUCCESS;
    }
    if (Is(c, L"mdl_leak") || Is(c, L"mdl_ok")) {
        PVOID buf = ExAllocatePool2(POOL_FLAG_NON_PAGED, 8192, TAG_TEST);
        PMDL mdl = buf ? IoAllocateMdl(buf, 8192, FALSE, FALSE, NULL) : NULL;
        if (!mdl)
            return STATUS_INSUFFICIENT_RESOURCES;
        MmBuildMdlForNonPagedPool(mdl);
        if (Is(c, L"mdl_ok"))
            IoFreeMdl(mdl);
        ExFreePoolWithTag(buf, TAG_TEST);
        return STATUS_SUCCESS;
    }
    if (Is(c, L"workitem_leak") || Is(c, L"workitem_ok")) {
        PIO_WORKITEM wi;
        status = IoCreateDevice(DriverObject, 0, NULL, FILE_DEVICE_UNKNOWN, 0, FALSE, &g_device);
        if (!NT_SUCCESS(status))
            return status;
        wi = IoAllocateWorkItem(g_device);
        if (!wi)
            return STATUS_INSUFFICIENT_RESOURCES;
        if (Is(c, L"workitem_ok"))
            IoFreeWorkItem(wi);
        IoDeleteDevice(g_device);
        return STATUS_SUCCESS;
    }
    if (Is(c, L"lookaside_leak") || Is(c, L"lookaside_entry_leak") || Is(c, L"lookaside_ok")) {
        static LOOKASIDE_LIST_EX la;
        PVOID e;
        status = ExInitializeLookasideListEx(&la, NULL, NULL, NonPagedPoolNx, 0, 48, 'kooL', 0);
        if (!NT_SUCCESS(status))
            return status;
        e = ExAllocateFromLookasideListEx(&la);
        if (!e)
            return STATUS_INSUFFICIENT_RESOURCES;
        if (Is(c, L"lookaside_ok"))
            ExFreeToLookasideListEx(&la, e);
        if (!Is(c, L"lookaside_leak"))
            ExDeleteLookasideListEx(&la);
        return STATUS_SUCCESS;
    }
    if (Is(c, L"rundown_held") || Is(c, L"rundown_ok")) {
        ExInitializeRundownProtection(&g_rundown);
        if (!ExAcquireRundownProtection(&g_rundown))
            return STATUS_UNSUCCESSFUL;
        if (Is(c, L"rundown_ok")) {
            ExReleaseRundownProtection(&g_rundown);
            ExWaitForRundownProtectionRelease(&g_rundown);
            if (ExAcquireRundownProtection(&g_rundown))
                return STATUS_UNSUCCESSFUL;
            ExRundownCompleted(&g_rundown);
        }
        return STATUS_SUCCESS;
    }
    if (Is(c, L"rundown_unacquired")) {
        ExInitializeRundownProtection(&g_rundown);
        ExReleaseRundownProtection(&g_rundown);
        return STATUS_SUCCESS;
    }
    if (Is(c, L"timer_still_set")) {
        LARGE_INTEGER due;
        KeInitializeTimer(&g_timer);
        due.QuadPart = -10LL * 1000 * 1000 * 60;   /* a minute: still set when the driver unloads */
        KeSetTimer(&g_timer, due, NULL);
        return STATUS_SUCCESS;
    }
    if (Is(c, L"device_not_deleted")) {
        return IoCreateDevice(DriverObject, 16, NULL, FILE_DEVICE_UNKNOWN, 0, FALSE, &g_device);
    }
    if (Is(c, L"entry_fails")) {
        return STATUS_DEVICE_NOT_READY;
    }
    DbgPrint("unknown case\n");
    return STATUS_INVALID_PARAMETER;
}
