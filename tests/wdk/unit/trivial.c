/* A driver that does nothing but load and unload: the host's smallest round trip. */
#include <ntddk.h>

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD TrivialUnload;

_Use_decl_annotations_
static VOID TrivialUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
    PAGED_CODE();
    DbgPrint("trivial: unload\n");
}

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    PAGED_CODE();
    DbgPrint("trivial: DriverEntry %wZ\n", RegistryPath);
    DriverObject->DriverUnload = TrivialUnload;
    return STATUS_SUCCESS;
}
