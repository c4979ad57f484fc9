/*
 * unsupported_drv - calls the WDK API named by the Api parameter, one the kit declares but does
 * not provide, and succeeds only if the call fails the documented way (STATUS_NOT_SUPPORTED or
 * NULL). The host must also print the kit's "not supported" line (checked by the test).
 */
#include "kunit.h"

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD UnsUnload;

_Use_decl_annotations_
static VOID UnsUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
}

static BOOLEAN Is(PCWSTR A, PCWSTR B)
{
    UNICODE_STRING a, b;
    RtlInitUnicodeString(&a, A);
    RtlInitUnicodeString(&b, B);
    return RtlEqualUnicodeString(&a, &b, FALSE);
}

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    WCHAR api[64];
    NTSTATUS st = STATUS_SUCCESS;
    PVOID p = (PVOID)1;
    PHYSICAL_ADDRESS pa;
    UNICODE_STRING name;
    HANDLE h;
    OBJECT_ATTRIBUTES oa;
    IO_STATUS_BLOCK iosb;
    PDEVICE_OBJECT dev = NULL;

    DriverObject->DriverUnload = UnsUnload;
    CHECK(NT_SUCCESS(KunitReadString(RegistryPath, L"Api", api, RTL_NUMBER_OF(api))));
    pa.QuadPart = 0x1000;
    RtlInitUnicodeString(&name, L"\\Device\\Other");
    if (Is(api, L"IoRegisterPlugPlayNotification"))
        st = IoRegisterPlugPlayNotification(EventCategoryDeviceInterfaceChange, 0, NULL, DriverObject, NULL, NULL, &p);
    else if (Is(api, L"IoGetDeviceObjectPointer")) {
        PFILE_OBJECT fo;
        st = IoGetDeviceObjectPointer(&name, FILE_READ_DATA, &fo, &dev);
    } else if (Is(api, L"IoAttachDeviceToDeviceStack"))
        p = IoAttachDeviceToDeviceStack(NULL, NULL);
    else if (Is(api, L"IoRegisterShutdownNotification"))
        st = IoRegisterShutdownNotification(NULL);
    else if (Is(api, L"IoWMIRegistrationControl"))
        st = IoWMIRegistrationControl(NULL, 1);
    else if (Is(api, L"IoRegisterDeviceInterface"))
        st = IoRegisterDeviceInterface(NULL, NULL, NULL, &name);
    else if (Is(api, L"ZwCreateFile")) {
        InitializeObjectAttributes(&oa, &name, OBJ_KERNEL_HANDLE, NULL, NULL);
        st = ZwCreateFile(&h, GENERIC_READ, &oa, &iosb, NULL, 0, 0, 1, 0, NULL, 0);
    } else if (Is(api, L"ZwCreateKey")) {
        RtlInitUnicodeString(&name, L"\\Registry\\Machine\\Software\\Other");
        InitializeObjectAttributes(&oa, &name, OBJ_KERNEL_HANDLE, NULL, NULL);
        st = ZwCreateKey(&h, KEY_ALL_ACCESS, &oa, 0, NULL, 0, NULL);
        if (st == STATUS_OBJECT_NAME_NOT_FOUND)
            st = STATUS_NOT_SUPPORTED;
    } else if (Is(api, L"IoOpenDriverRegistryKey"))
        st = IoOpenDriverRegistryKey(DriverObject, DriverRegKeyPersistentState, KEY_READ, 0, &h);
    else if (Is(api, L"PsSetCreateProcessNotifyRoutine"))
        st = PsSetCreateProcessNotifyRoutine(NULL, FALSE);
    else if (Is(api, L"ObRegisterCallbacks"))
        st = ObRegisterCallbacks(NULL, &p);
    else if (Is(api, L"CmRegisterCallbackEx"))
        st = CmRegisterCallbackEx(NULL, NULL, DriverObject, NULL, NULL, NULL);
    else if (Is(api, L"MmGetSystemRoutineAddress"))
        p = MmGetSystemRoutineAddress(&name);
    else if (Is(api, L"MmMapIoSpace"))
        p = MmMapIoSpace(pa, 4096, MmNonCached);
    else if (Is(api, L"MmAllocatePagesForMdl"))
        p = MmAllocatePagesForMdl(pa, pa, pa, 4096);
    else if (Is(api, L"IoGetDmaAdapter"))
        p = IoGetDmaAdapter(NULL, NULL, NULL);
    else if (Is(api, L"IoConnectInterruptEx"))
        st = IoConnectInterruptEx(NULL);
    else if (Is(api, L"MmMapLockedPagesSpecifyCache")) {
        static UCHAR buffer[4096];
        PMDL mdl = IoAllocateMdl(buffer, sizeof(buffer), FALSE, FALSE, NULL);
        CHECK(mdl != NULL);
        MmBuildMdlForNonPagedPool(mdl);
        p = MmMapLockedPagesSpecifyCache(mdl, UserMode, MmCached, NULL, FALSE, NormalPagePriority);
        IoFreeMdl(mdl);
    } else if (Is(api, L"KeBugCheckEx")) {
        KeBugCheckEx(0xE2, 1, 2, 3, 4);
    } else if (Is(api, L"ExRaiseStatus")) {
        ExRaiseStatus(STATUS_ACCESS_VIOLATION);
    } else {
        DbgPrint("unknown Api %ws\n", api);
        return STATUS_INVALID_PARAMETER;
    }
    CHECK(st == STATUS_NOT_SUPPORTED || p == NULL);
    DbgPrint("failed as documented: %ws\n", api);
    return STATUS_SUCCESS;
}
