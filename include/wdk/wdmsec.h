/*
 * wdmsec.h - IoCreateDeviceSecure and the SDDL presets ("WdmlibIoCreateDeviceSecure function
 * (wdmsec.h)"). The kit has no security model: the SDDL string and class GUID are accepted and
 * ignored, and the device is created as IoCreateDevice does.
 */
#ifndef OPENNDK_WDK_WDMSEC_H
#define OPENNDK_WDK_WDMSEC_H

#include "wdm.h"

#ifdef __cplusplus
extern "C" {
#endif

NTSTATUS WdmlibIoCreateDeviceSecure(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize,
                                    PUNICODE_STRING DeviceName, DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics,
                                    BOOLEAN Exclusive, PCUNICODE_STRING DefaultSDDLString, LPCGUID DeviceClassGuid,
                                    PDEVICE_OBJECT *DeviceObject);
#define IoCreateDeviceSecure WdmlibIoCreateDeviceSecure
NTSTATUS WdmlibRtlInitUnicodeStringEx(PUNICODE_STRING DestinationString, PCWSTR SourceString, ULONG Flags);
#define RtlInitUnicodeStringEx_Wdmlib WdmlibRtlInitUnicodeStringEx

extern const UNICODE_STRING SDDL_DEVOBJ_KERNEL_ONLY;
extern const UNICODE_STRING SDDL_DEVOBJ_INF_SUPPLIED;
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL;
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_ALL;
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RX;
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_R;
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_RW_RES_R;
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_RWX_RES_RWX;
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_ALL_WORLD_ALL_RES_ALL;

#ifdef __cplusplus
}
#endif

#endif
