/*
 * wdmsec.c - IoCreateDeviceSecure ("WdmlibIoCreateDeviceSecure function (wdmsec.h)") and the
 * SDDL presets. The kit has no security model: the descriptor and class GUID are ignored and
 * the device is created as IoCreateDevice does.
 */
#include "wdk_internal.h"
#include <wdmsec.h>

#undef IoCreateDevice

#define SDDL(name, text) \
    static const WCHAR name##_text[] = text; \
    const UNICODE_STRING name = { sizeof(name##_text) - sizeof(WCHAR), sizeof(name##_text), (PWCH)name##_text }

SDDL(SDDL_DEVOBJ_KERNEL_ONLY, L"D:P");
SDDL(SDDL_DEVOBJ_INF_SUPPLIED, L"D:P");
SDDL(SDDL_DEVOBJ_SYS_ALL, L"D:P(A;;GA;;;SY)");
SDDL(SDDL_DEVOBJ_SYS_ALL_ADM_ALL, L"D:P(A;;GA;;;SY)(A;;GA;;;BA)");
SDDL(SDDL_DEVOBJ_SYS_ALL_ADM_RX, L"D:P(A;;GA;;;SY)(A;;GRGX;;;BA)");
SDDL(SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_R, L"D:P(A;;GA;;;SY)(A;;GRGWGX;;;BA)(A;;GR;;;WD)");
SDDL(SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_RW_RES_R, L"D:P(A;;GA;;;SY)(A;;GRGWGX;;;BA)(A;;GRGW;;;WD)(A;;GR;;;RC)");
SDDL(SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_RWX_RES_RWX,
     L"D:P(A;;GA;;;SY)(A;;GRGWGX;;;BA)(A;;GRGWGX;;;WD)(A;;GRGWGX;;;RC)");
SDDL(SDDL_DEVOBJ_SYS_ALL_ADM_ALL_WORLD_ALL_RES_ALL, L"D:P(A;;GA;;;SY)(A;;GA;;;BA)(A;;GA;;;WD)(A;;GA;;;RC)");

NTSTATUS WdmlibIoCreateDeviceSecure(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize,
                                    PUNICODE_STRING DeviceName, DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics,
                                    BOOLEAN Exclusive, PCUNICODE_STRING DefaultSDDLString, LPCGUID DeviceClassGuid,
                                    PDEVICE_OBJECT *DeviceObject)
{
    if (!DefaultSDDLString)
        return STATUS_INVALID_PARAMETER;
    if (wdk_irql_get() != PASSIVE_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", WDK_CALLER, "IoCreateDeviceSecure at IRQL %u (PASSIVE_LEVEL only)",
                          wdk_irql_get());
    return wdk_IoCreateDevice_at(DriverObject, DeviceExtensionSize, DeviceName, DeviceType, DeviceCharacteristics,
                                 Exclusive, DeviceObject, WDK_CALLER);
}

NTSTATUS WdmlibRtlInitUnicodeStringEx(PUNICODE_STRING DestinationString, PCWSTR SourceString, ULONG Flags)
{
    return RtlInitUnicodeStringEx(DestinationString, SourceString);
}
