/*
 * unit_system - the driver's registry Parameters (from ndkdrv --param), processors and nodes,
 * interface LUIDs, devices and a self-sent IRP, the version and the clocks. Run with
 * --param Number=42 --param Text=hello --param Multi=multi_sz:a,bc --param Big=qword:0x100000000
 * --param Forced=sz:7.
 */
#include "kunit.h"
#include <wdmsec.h>
#include <netioapi.h>

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD SysUnload;
_Dispatch_type_(IRP_MJ_DEVICE_CONTROL) static DRIVER_DISPATCH SysIoctl;
static IO_COMPLETION_ROUTINE SysCompletion;

#define IOCTL_KIT_ECHO CTL_CODE(FILE_DEVICE_UNKNOWN, 0x801, METHOD_BUFFERED, FILE_ANY_ACCESS)

static PUNICODE_STRING g_path;
static PDEVICE_OBJECT g_dev;

_Use_decl_annotations_
static VOID SysUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
    if (g_dev)
        IoDeleteDevice(g_dev);
}

static NTSTATUS Registry(void)
{
    OBJECT_ATTRIBUTES oa;
    UNICODE_STRING path, name;
    WCHAR pathbuf[256];
    HANDLE key;
    UCHAR buf[128];
    PKEY_VALUE_PARTIAL_INFORMATION pv = (PKEY_VALUE_PARTIAL_INFORMATION)buf;
    PKEY_VALUE_FULL_INFORMATION fv = (PKEY_VALUE_FULL_INFORMATION)buf;
    ULONG len, dword = 0;

    CHECK(NT_SUCCESS(RtlStringCbCopyUnicodeString(pathbuf, sizeof(pathbuf), g_path)));
    CHECK(NT_SUCCESS(RtlStringCbCatW(pathbuf, sizeof(pathbuf), L"\\Parameters")));
    RtlInitUnicodeString(&path, pathbuf);
    InitializeObjectAttributes(&oa, &path, OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE, NULL, NULL);
    CHECK(ZwOpenKey(&key, KEY_READ, &oa) == STATUS_SUCCESS);
    RtlInitUnicodeString(&name, L"number");   /* names compare case-insensitively */
    CHECK(ZwQueryValueKey(key, &name, KeyValuePartialInformation, pv, sizeof(buf), &len) == STATUS_SUCCESS);
    CHECK(pv->Type == REG_DWORD && pv->DataLength == 4 && *(PULONG)pv->Data == 42);
    RtlInitUnicodeString(&name, L"Text");
    CHECK(ZwQueryValueKey(key, &name, KeyValueFullInformation, fv, sizeof(buf), &len) == STATUS_SUCCESS);
    CHECK(fv->Type == REG_SZ && fv->DataLength == 12 && fv->NameLength == 8);
    CHECK(!memcmp((PUCHAR)fv + fv->DataOffset, L"hello", 12));
    CHECK(ZwQueryValueKey(key, &name, KeyValuePartialInformation, pv, 14, &len) == STATUS_BUFFER_OVERFLOW &&
          len == FIELD_OFFSET(KEY_VALUE_PARTIAL_INFORMATION, Data) + 12);
    CHECK(ZwQueryValueKey(key, &name, KeyValuePartialInformation, pv, 4, &len) == STATUS_BUFFER_TOO_SMALL);
    RtlInitUnicodeString(&name, L"Multi");
    CHECK(ZwQueryValueKey(key, &name, KeyValuePartialInformation, pv, sizeof(buf), &len) == STATUS_SUCCESS);
    CHECK(pv->Type == REG_MULTI_SZ && pv->DataLength == 12 && !memcmp(pv->Data, L"a\0bc\0", 12));
    RtlInitUnicodeString(&name, L"Big");
    CHECK(ZwQueryValueKey(key, &name, KeyValuePartialInformation, pv, sizeof(buf), &len) == STATUS_SUCCESS);
    CHECK(pv->Type == REG_QWORD && *(PULONG64)pv->Data == 0x100000000ULL);
    RtlInitUnicodeString(&name, L"Forced");
    CHECK(ZwQueryValueKey(key, &name, KeyValuePartialInformation, pv, sizeof(buf), &len) == STATUS_SUCCESS);
    CHECK(pv->Type == REG_SZ);
    RtlInitUnicodeString(&name, L"Missing");
    CHECK(ZwQueryValueKey(key, &name, KeyValuePartialInformation, pv, sizeof(buf), &len) ==
          STATUS_OBJECT_NAME_NOT_FOUND);
    CHECK(ZwClose(key) == STATUS_SUCCESS);

    RtlInitUnicodeString(&path, L"\\Registry\\Machine\\Software\\Nothing");
    InitializeObjectAttributes(&oa, &path, OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE, NULL, NULL);
    CHECK(ZwOpenKey(&key, KEY_READ, &oa) == STATUS_OBJECT_NAME_NOT_FOUND);

    /* RtlQueryRegistryValues, direct, with a default for a missing value. */
    RTL_QUERY_REGISTRY_TABLE t[3];
    ULONG def = 5, missing = 0;
    RtlZeroMemory(t, sizeof(t));
    t[0].Flags = RTL_QUERY_REGISTRY_DIRECT;
    t[0].Name = L"Number";
    t[0].EntryContext = &dword;
    t[1].Flags = RTL_QUERY_REGISTRY_DIRECT;
    t[1].Name = L"Absent";
    t[1].EntryContext = &missing;
    t[1].DefaultType = REG_DWORD;
    t[1].DefaultData = &def;
    t[1].DefaultLength = sizeof(def);
    CHECK(RtlQueryRegistryValues(RTL_REGISTRY_ABSOLUTE, pathbuf, t, NULL, NULL) == STATUS_SUCCESS);
    CHECK(dword == 42 && missing == 5);
    return STATUS_SUCCESS;
}

static NTSTATUS Processors(void)
{
    PROCESSOR_NUMBER pn;
    GROUP_AFFINITY a, prev, none;
    USHORT count;
    ULONG n = KeQueryActiveProcessorCountEx(ALL_PROCESSOR_GROUPS);
    CHECK(n >= 1 && KeQueryActiveProcessorCountEx(0) >= 1);
    CHECK(KeQueryActiveProcessorCountEx(KeQueryActiveGroupCount()) == 0);
    ULONG idx = KeGetCurrentProcessorNumberEx(&pn);
    CHECK(idx < n && idx == (ULONG)pn.Group * 64 + pn.Number);
    CHECK(KeGetCurrentNodeNumber() <= KeQueryHighestNodeNumber());
    KeQueryNodeActiveAffinity(0, &a, &count);
    CHECK(count >= 1 && a.Mask != 0);
    /* Pin to the first processor and back. */
    RtlZeroMemory(&a, sizeof(a));
    a.Mask = 1;
    KeSetSystemGroupAffinityThread(&a, &prev);
    CHECK(KeGetCurrentProcessorNumberEx(NULL) == 0);
    KeRevertToUserGroupAffinityThread(&prev);
    /* An invalid request is ignored and zeroes the previous affinity. */
    RtlZeroMemory(&a, sizeof(a));
    a.Group = 999;
    a.Mask = 1;
    KeSetSystemGroupAffinityThread(&a, &none);
    CHECK(none.Mask == 0 && none.Group == 0);
    return STATUS_SUCCESS;
}

static NTSTATUS Interfaces(void)
{
    NET_LUID luid, back;
    NET_IFINDEX index;
    WCHAR alias[IF_MAX_STRING_SIZE + 1];
    char name[IF_MAX_STRING_SIZE + 1];
    CHECK(ConvertInterfaceIndexToLuid(1, &luid) == STATUS_SUCCESS);   /* Linux's loopback is index 1 */
    CHECK(luid.Info.IfType == IF_TYPE_SOFTWARE_LOOPBACK && luid.Info.NetLuidIndex == 1);
    CHECK(ConvertInterfaceLuidToIndex(&luid, &index) == STATUS_SUCCESS && index == 1);
    CHECK(ConvertInterfaceLuidToAlias(&luid, alias, RTL_NUMBER_OF(alias)) == STATUS_SUCCESS);
    CHECK(alias[0] == L'l' && alias[1] == L'o' && alias[2] == 0);
    CHECK(ConvertInterfaceLuidToAlias(&luid, alias, 2) == STATUS_BUFFER_TOO_SMALL);
    CHECK(ConvertInterfaceLuidToNameA(&luid, name, sizeof(name)) == STATUS_SUCCESS && !strcmp(name, "loopback_1"));
    CHECK(ConvertInterfaceNameToLuidA(name, &back) == STATUS_SUCCESS && back.Value == luid.Value);
    CHECK(ConvertInterfaceIndexToLuid(0x7fffffff, &luid) == STATUS_INVALID_PARAMETER && luid.Value == 0);
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
static NTSTATUS SysIoctl(PDEVICE_OBJECT DeviceObject, PIRP Irp)
{
    PIO_STACK_LOCATION sl = IoGetCurrentIrpStackLocation(Irp);
    UNREFERENCED_PARAMETER(DeviceObject);
    NTSTATUS st = STATUS_INVALID_DEVICE_REQUEST;
    if (sl->Parameters.DeviceIoControl.IoControlCode == IOCTL_KIT_ECHO) {
        *(PULONG)Irp->AssociatedIrp.SystemBuffer += 1;
        Irp->IoStatus.Information = sizeof(ULONG);
        st = STATUS_SUCCESS;
    }
    Irp->IoStatus.Status = st;
    IoCompleteRequest(Irp, IO_NO_INCREMENT);
    return st;
}

static volatile LONG g_completions;

_Use_decl_annotations_
static NTSTATUS SysCompletion(PDEVICE_OBJECT DeviceObject, PIRP Irp, PVOID Context)
{
    UNREFERENCED_PARAMETER(DeviceObject);
    UNREFERENCED_PARAMETER(Irp);
    InterlockedIncrement(&g_completions);
    KeSetEvent((PKEVENT)Context, IO_NO_INCREMENT, FALSE);
    return STATUS_MORE_PROCESSING_REQUIRED;   /* the IRP is ours again */
}

static NTSTATUS DevicesAndIrps(PDRIVER_OBJECT Driver)
{
    UNICODE_STRING dn;
    PDEVICE_OBJECT other;
    RtlInitUnicodeString(&dn, L"\\Device\\KitUnit");
    CHECK(IoCreateDeviceSecure(Driver, 32, &dn, FILE_DEVICE_UNKNOWN, FILE_DEVICE_SECURE_OPEN, FALSE,
                               &SDDL_DEVOBJ_SYS_ALL_ADM_ALL, NULL, &g_dev) == STATUS_SUCCESS);
    CHECK(IoCreateDevice(Driver, 0, &dn, FILE_DEVICE_UNKNOWN, 0, FALSE, &other) == STATUS_OBJECT_NAME_COLLISION);
    CHECK(g_dev->DeviceExtension != NULL && ((PUCHAR)g_dev->DeviceExtension)[31] == 0);
    CHECK(Driver->DeviceObject == g_dev && g_dev->DriverObject == Driver);
    g_dev->Flags &= ~DO_DEVICE_INITIALIZING;
    Driver->MajorFunction[IRP_MJ_DEVICE_CONTROL] = SysIoctl;

    /* An IRP the driver builds for its own device, completed through a completion routine. */
    KEVENT done;
    ULONG value = 41;
    KeInitializeEvent(&done, NotificationEvent, FALSE);
    PIRP irp = IoAllocateIrp(g_dev->StackSize, FALSE);
    CHECK(irp != NULL);
    PIO_STACK_LOCATION sl = IoGetNextIrpStackLocation(irp);
    sl->MajorFunction = IRP_MJ_DEVICE_CONTROL;
    sl->Parameters.DeviceIoControl.IoControlCode = IOCTL_KIT_ECHO;
    irp->AssociatedIrp.SystemBuffer = &value;
    IoSetCompletionRoutine(irp, SysCompletion, &done, TRUE, TRUE, TRUE);
    CHECK(IoCallDriver(g_dev, irp) == STATUS_SUCCESS);
    CHECK(KeWaitForSingleObject(&done, Executive, KernelMode, FALSE, NULL) == STATUS_SUCCESS);
    CHECK(value == 42 && irp->IoStatus.Information == sizeof(ULONG) && g_completions == 1);
    IoFreeIrp(irp);

    /* An unset MajorFunction entry fails the request. */
    IO_STATUS_BLOCK iosb;
    KeClearEvent(&done);
    irp = IoBuildDeviceIoControlRequest(IOCTL_KIT_ECHO, g_dev, &value, sizeof(value), &value, sizeof(value), TRUE,
                                        &done, &iosb);
    CHECK(irp != NULL);
    CHECK(IoCallDriver(g_dev, irp) == STATUS_INVALID_DEVICE_REQUEST);
    CHECK(iosb.Status == STATUS_INVALID_DEVICE_REQUEST && KeReadStateEvent(&done));
    return STATUS_SUCCESS;
}

static NTSTATUS VersionAndTime(void)
{
    RTL_OSVERSIONINFOW v;
    LARGE_INTEGER t1, t2, f;
    TIME_FIELDS tf;
    v.dwOSVersionInfoSize = sizeof(v);
    CHECK(RtlGetVersion(&v) == STATUS_SUCCESS && v.dwMajorVersion == 10);
    KeQuerySystemTimePrecise(&t1);
    RtlTimeToTimeFields(&t1, &tf);
    CHECK(tf.Year >= 2024 && tf.Month >= 1 && tf.Month <= 12);
    CHECK(RtlTimeFieldsToTime(&tf, &t2) && t2.QuadPart / 10000 == t1.QuadPart / 10000);
    t1 = KeQueryPerformanceCounter(&f);
    t2 = KeQueryPerformanceCounter(NULL);
    CHECK(f.QuadPart == 10000000 && t2.QuadPart >= t1.QuadPart);
    ULONGLONG i1 = KeQueryInterruptTime();
    KeQueryTickCount(&t1);
    LONGLONG ticks = (LONGLONG)(KeQueryInterruptTime() / KeQueryTimeIncrement());
    CHECK(i1 > 0 && (t1.QuadPart == ticks || t1.QuadPart + 1 == ticks));
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    DriverObject->DriverUnload = SysUnload;
    g_path = RegistryPath;
    RUN(Registry);
    RUN(Processors);
    RUN(Interfaces);
    NTSTATUS st = DevicesAndIrps(DriverObject);
    if (!NT_SUCCESS(st))
        return st;
    DbgPrint("PASS DevicesAndIrps\n");
    RUN(VersionAndTime);
    return STATUS_SUCCESS;
}
