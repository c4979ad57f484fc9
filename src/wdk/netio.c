/*
 * netio.c - interface identifier conversions ("ConvertInterfaceIndexToLuid function
 * (netioapi.h)" and siblings) over the Linux interfaces of the process's network namespace.
 * The kit's LUID: NetLuidIndex = Linux ifindex, IfType = IF_TYPE_SOFTWARE_LOOPBACK (24) for a
 * loopback device, IF_TYPE_ETHERNET_CSMACD (6) for Ethernet (veth, bridges, NICs), IF_TYPE_OTHER
 * (1) otherwise; it is stable while the interface exists. The alias is the Linux name ("eth0");
 * the name is "<type>_<index>" ("ethernet_3", "loopback_1", "other_7"); the GUID is derived from
 * the LUID. A buffer too small for the answer gets STATUS_BUFFER_TOO_SMALL (the documentation
 * names a status that does not exist; this is the kit's choice). PASSIVE_LEVEL.
 */
#include <errno.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include "wdk_internal.h"
#include <netioapi.h>

/* IANA type of a Linux interface; -1 if it does not exist. */
static int if_type(unsigned index, char name[IF_NAMESIZE])
{
    if (!if_indextoname(index, name))
        return -1;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return IF_TYPE_OTHER;
    int rc = ioctl(fd, SIOCGIFHWADDR, &ifr);
    close(fd);
    if (rc)
        return IF_TYPE_OTHER;
    switch (ifr.ifr_hwaddr.sa_family) {
    case ARPHRD_LOOPBACK: return IF_TYPE_SOFTWARE_LOOPBACK;
    case ARPHRD_ETHER: return IF_TYPE_ETHERNET_CSMACD;
    case ARPHRD_INFINIBAND: return IF_TYPE_INFINIBAND;
    default: return IF_TYPE_OTHER;
    }
}

static const char *type_name(unsigned t)
{
    switch (t) {
    case IF_TYPE_SOFTWARE_LOOPBACK: return "loopback";
    case IF_TYPE_ETHERNET_CSMACD: return "ethernet";
    case IF_TYPE_INFINIBAND: return "infiniband";
    default: return "other";
    }
}

static void check_passive(const char *api)
{
    if (wdk_irql_get() != PASSIVE_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", WDK_CALLER, "%s at IRQL %u (PASSIVE_LEVEL only)", api, wdk_irql_get());
}

NTSTATUS ConvertInterfaceIndexToLuid(NET_IFINDEX InterfaceIndex, PNET_LUID InterfaceLuid)
{
    check_passive("ConvertInterfaceIndexToLuid");
    if (!InterfaceLuid)
        return STATUS_INVALID_PARAMETER;
    InterfaceLuid->Value = 0;
    char name[IF_NAMESIZE];
    int t = if_type(InterfaceIndex, name);
    if (t < 0 || InterfaceIndex == 0)
        return STATUS_INVALID_PARAMETER;
    InterfaceLuid->Info.NetLuidIndex = InterfaceIndex;
    InterfaceLuid->Info.IfType = (USHORT)t;
    return STATUS_SUCCESS;
}

/* The Linux interface of a LUID (its index and name), or 0. */
static unsigned luid_if(const NET_LUID *l, char name[IF_NAMESIZE])
{
    if (!l)
        return 0;
    unsigned index = (unsigned)l->Info.NetLuidIndex;
    int t = if_type(index, name);
    return (t >= 0 && (unsigned)t == l->Info.IfType) ? index : 0;
}

NTSTATUS ConvertInterfaceLuidToIndex(const NET_LUID *InterfaceLuid, PNET_IFINDEX InterfaceIndex)
{
    check_passive("ConvertInterfaceLuidToIndex");
    if (!InterfaceIndex)
        return STATUS_INVALID_PARAMETER;
    char name[IF_NAMESIZE];
    *InterfaceIndex = luid_if(InterfaceLuid, name);
    return *InterfaceIndex ? STATUS_SUCCESS : STATUS_INVALID_PARAMETER;
}

static NTSTATUS put_text(const char *text, void *out, SIZE_T Length, int wide)
{
    size_t n = strlen(text);
    if (!out)
        return STATUS_INVALID_PARAMETER;
    if (Length < n + 1)
        return STATUS_BUFFER_TOO_SMALL;
    if (wide)
        wdk_utf8_to_utf16(text, n, out, n + 1);
    else
        memcpy(out, text, n + 1);
    return STATUS_SUCCESS;
}

NTSTATUS ConvertInterfaceLuidToAlias(const NET_LUID *InterfaceLuid, PWSTR InterfaceAlias, SIZE_T Length)
{
    check_passive("ConvertInterfaceLuidToAlias");
    char name[IF_NAMESIZE];
    if (!luid_if(InterfaceLuid, name))
        return STATUS_INVALID_PARAMETER;
    return put_text(name, InterfaceAlias, Length, 1);
}

static void luid_name(const NET_LUID *l, char *buf, size_t n)
{
    snprintf(buf, n, "%s_%u", type_name((unsigned)l->Info.IfType), (unsigned)l->Info.NetLuidIndex);
}

NTSTATUS ConvertInterfaceLuidToNameA(const NET_LUID *InterfaceLuid, PSTR InterfaceName, SIZE_T Length)
{
    check_passive("ConvertInterfaceLuidToNameA");
    char name[IF_NAMESIZE], text[64];
    if (!luid_if(InterfaceLuid, name))
        return STATUS_INVALID_PARAMETER;
    luid_name(InterfaceLuid, text, sizeof text);
    return put_text(text, InterfaceName, Length, 0);
}

NTSTATUS ConvertInterfaceLuidToNameW(const NET_LUID *InterfaceLuid, PWSTR InterfaceName, SIZE_T Length)
{
    check_passive("ConvertInterfaceLuidToNameW");
    char name[IF_NAMESIZE], text[64];
    if (!luid_if(InterfaceLuid, name))
        return STATUS_INVALID_PARAMETER;
    luid_name(InterfaceLuid, text, sizeof text);
    return put_text(text, InterfaceName, Length, 1);
}

NTSTATUS ConvertInterfaceNameToLuidA(const CHAR *InterfaceName, NET_LUID *InterfaceLuid)
{
    check_passive("ConvertInterfaceNameToLuidA");
    if (!InterfaceName || !InterfaceLuid)
        return STATUS_INVALID_PARAMETER;
    const char *us = strrchr(InterfaceName, '_');
    if (!us)
        return STATUS_INVALID_PARAMETER;
    char *end;
    unsigned long index = strtoul(us + 1, &end, 10);
    if (*end || !index)
        return STATUS_INVALID_PARAMETER;
    NET_LUID l;
    if (ConvertInterfaceIndexToLuid((NET_IFINDEX)index, &l) != STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    const char *tn = type_name((unsigned)l.Info.IfType);
    if (strlen(tn) != (size_t)(us - InterfaceName) || strncasecmp(tn, InterfaceName, strlen(tn)))
        return STATUS_INVALID_PARAMETER;
    *InterfaceLuid = l;
    return STATUS_SUCCESS;
}

NTSTATUS ConvertInterfaceNameToLuidW(const WCHAR *InterfaceName, NET_LUID *InterfaceLuid)
{
    char buf[128];
    if (!InterfaceName)
        return STATUS_INVALID_PARAMETER;
    wdk_utf16_to_utf8(InterfaceName, wdk_wcslen(InterfaceName), buf, sizeof buf);
    return ConvertInterfaceNameToLuidA(buf, InterfaceLuid);
}

NTSTATUS ConvertInterfaceAliasToLuid(const WCHAR *InterfaceAlias, PNET_LUID InterfaceLuid)
{
    check_passive("ConvertInterfaceAliasToLuid");
    char buf[IF_NAMESIZE * 4];
    if (!InterfaceAlias || !InterfaceLuid)
        return STATUS_INVALID_PARAMETER;
    wdk_utf16_to_utf8(InterfaceAlias, wdk_wcslen(InterfaceAlias), buf, sizeof buf);
    unsigned index = if_nametoindex(buf);
    if (!index)
        return STATUS_INVALID_PARAMETER;
    return ConvertInterfaceIndexToLuid(index, InterfaceLuid);
}

/* {4f4e4458-0000-0000-TTTT-IIIIIIIIIIII}: a fixed prefix, the type and the index. */
NTSTATUS ConvertInterfaceLuidToGuid(const NET_LUID *InterfaceLuid, GUID *InterfaceGuid)
{
    char name[IF_NAMESIZE];
    if (!InterfaceGuid || !luid_if(InterfaceLuid, name))
        return STATUS_INVALID_PARAMETER;
    memset(InterfaceGuid, 0, sizeof *InterfaceGuid);
    InterfaceGuid->Data1 = 0x4f4e4458;
    uint64_t idx = InterfaceLuid->Info.NetLuidIndex;
    InterfaceGuid->Data4[0] = (uint8_t)(InterfaceLuid->Info.IfType >> 8);
    InterfaceGuid->Data4[1] = (uint8_t)InterfaceLuid->Info.IfType;
    for (int i = 0; i < 6; i++)
        InterfaceGuid->Data4[7 - i] = (uint8_t)(idx >> (8 * i));
    return STATUS_SUCCESS;
}

NTSTATUS ConvertInterfaceGuidToLuid(const GUID *InterfaceGuid, PNET_LUID InterfaceLuid)
{
    if (!InterfaceGuid || !InterfaceLuid || InterfaceGuid->Data1 != 0x4f4e4458)
        return STATUS_INVALID_PARAMETER;
    uint64_t idx = 0;
    for (int i = 2; i < 8; i++)
        idx = idx << 8 | InterfaceGuid->Data4[i];
    NET_LUID l;
    if (ConvertInterfaceIndexToLuid((NET_IFINDEX)idx, &l) != STATUS_SUCCESS ||
        l.Info.IfType != (USHORT)(InterfaceGuid->Data4[0] << 8 | InterfaceGuid->Data4[1]))
        return STATUS_INVALID_PARAMETER;
    *InterfaceLuid = l;
    return STATUS_SUCCESS;
}
