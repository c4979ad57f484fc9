/*
 * netioapi.h - the kernel's interface-identifier conversions ("ConvertInterfaceIndexToLuid
 * function (netioapi.h)" and siblings), answered from the Linux interfaces of the process's
 * network namespace: NetLuidIndex is the Linux ifindex, IfType 24 for loopback, 6 for Ethernet
 * (1 otherwise); the alias is the Linux interface name and the name is "<type>_<index>", e.g.
 * "ethernet_3" (openndk-wdk(7)). All are PASSIVE_LEVEL calls.
 */
#ifndef OPENNDK_WDK_NETIOAPI_H
#define OPENNDK_WDK_NETIOAPI_H

#include "ifdef.h"
#include "ws2ipdef.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef NTSTATUS NETIO_STATUS;
#define NETIOAPI_API_ NETIO_STATUS NTAPI
#define NETIO_SUCCESS(x) NT_SUCCESS(x)

NTSTATUS ConvertInterfaceIndexToLuid(NET_IFINDEX InterfaceIndex, PNET_LUID InterfaceLuid);
NTSTATUS ConvertInterfaceLuidToIndex(const NET_LUID *InterfaceLuid, PNET_IFINDEX InterfaceIndex);
NTSTATUS ConvertInterfaceLuidToAlias(const NET_LUID *InterfaceLuid, PWSTR InterfaceAlias, SIZE_T Length);
NTSTATUS ConvertInterfaceAliasToLuid(const WCHAR *InterfaceAlias, PNET_LUID InterfaceLuid);
NTSTATUS ConvertInterfaceLuidToNameW(const NET_LUID *InterfaceLuid, PWSTR InterfaceName, SIZE_T Length);
NTSTATUS ConvertInterfaceLuidToNameA(const NET_LUID *InterfaceLuid, PSTR InterfaceName, SIZE_T Length);
NTSTATUS ConvertInterfaceNameToLuidW(const WCHAR *InterfaceName, NET_LUID *InterfaceLuid);
NTSTATUS ConvertInterfaceNameToLuidA(const CHAR *InterfaceName, NET_LUID *InterfaceLuid);
NTSTATUS ConvertInterfaceLuidToGuid(const NET_LUID *InterfaceLuid, GUID *InterfaceGuid);
NTSTATUS ConvertInterfaceGuidToLuid(const GUID *InterfaceGuid, PNET_LUID InterfaceLuid);

#ifdef __cplusplus
}
#endif

#endif
