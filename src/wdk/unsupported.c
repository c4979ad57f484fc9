/*
 * unsupported.c - WDK calls a consumer driver might make that the kit does not provide. Each
 * is declared in the kit's headers so the driver compiles and links; at run time it prints
 * "not supported by the OpenNDK kit: <name>: <what to do>" once and fails the way the WDK lets
 * the call fail (STATUS_NOT_SUPPORTED, or NULL where the call returns a pointer). openndk-wdk(7)
 * lists them.
 */
#include "wdk_internal.h"

#define NO_PNP "the kit hosts one legacy (non-PnP) driver with no device stack; open adapters with " \
               "WskOpenNdkAdapter by interface index instead"

NTSTATUS IoRegisterPlugPlayNotification(IO_NOTIFICATION_EVENT_CATEGORY EventCategory, ULONG EventCategoryFlags,
                                        PVOID EventCategoryData, PDRIVER_OBJECT DriverObject,
                                        PDRIVER_NOTIFICATION_CALLBACK_ROUTINE CallbackRoutine, PVOID Context,
                                        PVOID *NotificationEntry)
{
    wdk_unsupported("IoRegisterPlugPlayNotification", NO_PNP);
    if (NotificationEntry)
        *NotificationEntry = NULL;
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS IoUnregisterPlugPlayNotification(PVOID NotificationEntry)
{
    wdk_unsupported("IoUnregisterPlugPlayNotification", NO_PNP);
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS IoUnregisterPlugPlayNotificationEx(PVOID NotificationEntry)
{
    wdk_unsupported("IoUnregisterPlugPlayNotificationEx", NO_PNP);
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS IoGetDeviceObjectPointer(PUNICODE_STRING ObjectName, ACCESS_MASK DesiredAccess, PFILE_OBJECT *FileObject,
                                  PDEVICE_OBJECT *DeviceObject)
{
    wdk_unsupported("IoGetDeviceObjectPointer",
                    "no other driver's devices exist in the kit; call your own devices' dispatch routines");
    if (FileObject)
        *FileObject = NULL;
    if (DeviceObject)
        *DeviceObject = NULL;
    return STATUS_NOT_SUPPORTED;
}

PDEVICE_OBJECT IoAttachDeviceToDeviceStack(PDEVICE_OBJECT SourceDevice, PDEVICE_OBJECT TargetDevice)
{
    wdk_unsupported("IoAttachDeviceToDeviceStack", "the kit has no device stacks to attach to (no filter drivers)");
    return NULL;
}

VOID IoDetachDevice(PDEVICE_OBJECT TargetDevice)
{
    wdk_unsupported("IoDetachDevice", "the kit has no device stacks");
}

NTSTATUS IoRegisterShutdownNotification(PDEVICE_OBJECT DeviceObject)
{
    wdk_unsupported("IoRegisterShutdownNotification", "there is no system shutdown; clean up in DriverUnload");
    return STATUS_NOT_SUPPORTED;
}

VOID IoUnregisterShutdownNotification(PDEVICE_OBJECT DeviceObject)
{
    wdk_unsupported("IoUnregisterShutdownNotification", "there is no system shutdown; clean up in DriverUnload");
}

NTSTATUS IoWMIRegistrationControl(PDEVICE_OBJECT DeviceObject, ULONG Action)
{
    wdk_unsupported("IoWMIRegistrationControl", "there is no WMI; report through DbgPrint or the NDK OIDs");
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS IoRegisterDeviceInterface(PDEVICE_OBJECT PhysicalDeviceObject, const GUID *InterfaceClassGuid,
                                   PUNICODE_STRING ReferenceString, PUNICODE_STRING SymbolicLinkName)
{
    wdk_unsupported("IoRegisterDeviceInterface", NO_PNP);
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS IoSetDeviceInterfaceState(PUNICODE_STRING SymbolicLinkName, BOOLEAN Enable)
{
    wdk_unsupported("IoSetDeviceInterfaceState", NO_PNP);
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS ZwCreateFile(PHANDLE FileHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                      PIO_STATUS_BLOCK IoStatusBlock, PLARGE_INTEGER AllocationSize, ULONG FileAttributes,
                      ULONG ShareAccess, ULONG CreateDisposition, ULONG CreateOptions, PVOID EaBuffer, ULONG EaLength)
{
    wdk_unsupported("ZwCreateFile", "the kit gives drivers no file system; pass settings with ndkdrv --param");
    if (FileHandle)
        *FileHandle = NULL;
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS ZwDeviceIoControlFile(HANDLE FileHandle, HANDLE Event, PVOID ApcRoutine, PVOID ApcContext,
                               PIO_STATUS_BLOCK IoStatusBlock, ULONG IoControlCode, PVOID InputBuffer,
                               ULONG InputBufferLength, PVOID OutputBuffer, ULONG OutputBufferLength)
{
    wdk_unsupported("ZwDeviceIoControlFile", "there are no other devices to open; build an IRP for your own device");
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS PsSetCreateProcessNotifyRoutine(PVOID NotifyRoutine, BOOLEAN Remove)
{
    wdk_unsupported("PsSetCreateProcessNotifyRoutine", "the kit runs no processes for the driver to watch");
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS PsSetCreateThreadNotifyRoutine(PVOID NotifyRoutine)
{
    wdk_unsupported("PsSetCreateThreadNotifyRoutine", "the kit runs no processes for the driver to watch");
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS PsLookupProcessByProcessId(HANDLE ProcessId, PEPROCESS *Process)
{
    wdk_unsupported("PsLookupProcessByProcessId", "there is one process, the host (PsGetCurrentProcess)");
    if (Process)
        *Process = NULL;
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS ObRegisterCallbacks(PVOID CallbackRegistration, PVOID *RegistrationHandle)
{
    wdk_unsupported("ObRegisterCallbacks", "the kit has no object manager callbacks");
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS CmRegisterCallbackEx(PVOID Function, PCUNICODE_STRING Altitude, PVOID Driver, PVOID Context,
                              PLARGE_INTEGER Cookie, PVOID Reserved)
{
    wdk_unsupported("CmRegisterCallbackEx", "the kit's registry is the driver's Parameters key only");
    return STATUS_NOT_SUPPORTED;
}

PVOID MmGetSystemRoutineAddress(PUNICODE_STRING SystemRoutineName)
{
    wdk_unsupported("MmGetSystemRoutineAddress",
                    "call the routine directly; the kit's headers declare everything it provides");
    return NULL;
}

PVOID MmAllocateNonCachedMemory(SIZE_T NumberOfBytes)
{
    wdk_unsupported("MmAllocateNonCachedMemory", "use ExAllocatePool2 (the kit's memory is all cached)");
    return NULL;
}

VOID MmFreeNonCachedMemory(PVOID BaseAddress, SIZE_T NumberOfBytes)
{
    wdk_unsupported("MmFreeNonCachedMemory", "use ExAllocatePool2 (the kit's memory is all cached)");
}

PVOID MmMapIoSpace(PHYSICAL_ADDRESS PhysicalAddress, SIZE_T NumberOfBytes, MEMORY_CACHING_TYPE CacheType)
{
    wdk_unsupported("MmMapIoSpace", "there is no device memory to map; the RNIC is behind the NDK provider");
    return NULL;
}

VOID MmUnmapIoSpace(PVOID BaseAddress, SIZE_T NumberOfBytes)
{
    wdk_unsupported("MmUnmapIoSpace", "there is no device memory to map");
}

PMDL MmAllocatePagesForMdl(PHYSICAL_ADDRESS LowAddress, PHYSICAL_ADDRESS HighAddress, PHYSICAL_ADDRESS SkipBytes,
                           SIZE_T TotalBytes)
{
    wdk_unsupported("MmAllocatePagesForMdl",
                    "allocate pool with ExAllocatePool2 and describe it with IoAllocateMdl + MmBuildMdlForNonPagedPool");
    return NULL;
}

PVOID IoGetDmaAdapter(PDEVICE_OBJECT PhysicalDeviceObject, PVOID DeviceDescription, PULONG NumberOfMapRegisters)
{
    wdk_unsupported("IoGetDmaAdapter", "there is no DMA hardware; the NDK provider registers memory itself");
    return NULL;
}

NTSTATUS IoConnectInterruptEx(PVOID Parameters)
{
    wdk_unsupported("IoConnectInterruptEx", "there are no interrupts; use NDK CQ notifications, DPCs or timers");
    return STATUS_NOT_SUPPORTED;
}
