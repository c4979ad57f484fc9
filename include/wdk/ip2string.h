/*
 * ip2string.h - IPv4/IPv6 address <-> string conversions ("RtlIpv4StringToAddressExW function
 * (ip2string.h)" and siblings). Addresses and ports are in network byte order. The address
 * parameters are declared void * so that both Linux's struct in_addr/in6_addr and the IN_ADDR /
 * IN6_ADDR types of <ndk/nt.h> are accepted without a cast.
 */
#ifndef OPENNDK_WDK_IP2STRING_H
#define OPENNDK_WDK_IP2STRING_H

#include "ws2ipdef.h"

#ifdef __cplusplus
extern "C" {
#endif

PSTR RtlIpv4AddressToStringA(const void *Addr, PSTR S);
PWSTR RtlIpv4AddressToStringW(const void *Addr, PWSTR S);
NTSTATUS RtlIpv4AddressToStringExA(const void *Address, USHORT Port, PSTR AddressString, PULONG AddressStringLength);
NTSTATUS RtlIpv4AddressToStringExW(const void *Address, USHORT Port, PWSTR AddressString, PULONG AddressStringLength);
NTSTATUS RtlIpv4StringToAddressA(PCSTR S, BOOLEAN Strict, PCSTR *Terminator, void *Addr);
NTSTATUS RtlIpv4StringToAddressW(PCWSTR S, BOOLEAN Strict, PCWSTR *Terminator, void *Addr);
NTSTATUS RtlIpv4StringToAddressExA(PCSTR AddressString, BOOLEAN Strict, void *Address, PUSHORT Port);
NTSTATUS RtlIpv4StringToAddressExW(PCWSTR AddressString, BOOLEAN Strict, void *Address, PUSHORT Port);
PSTR RtlIpv6AddressToStringA(const void *Addr, PSTR S);
PWSTR RtlIpv6AddressToStringW(const void *Addr, PWSTR S);
NTSTATUS RtlIpv6AddressToStringExA(const void *Address, ULONG ScopeId, USHORT Port, PSTR AddressString,
                                   PULONG AddressStringLength);
NTSTATUS RtlIpv6AddressToStringExW(const void *Address, ULONG ScopeId, USHORT Port, PWSTR AddressString,
                                   PULONG AddressStringLength);
NTSTATUS RtlIpv6StringToAddressA(PCSTR S, PCSTR *Terminator, void *Addr);
NTSTATUS RtlIpv6StringToAddressW(PCWSTR S, PCWSTR *Terminator, void *Addr);
NTSTATUS RtlIpv6StringToAddressExA(PCSTR AddressString, void *Address, PULONG ScopeId, PUSHORT Port);
NTSTATUS RtlIpv6StringToAddressExW(PCWSTR AddressString, void *Address, PULONG ScopeId, PUSHORT Port);

#ifdef UNICODE
#define RtlIpv4AddressToString RtlIpv4AddressToStringW
#define RtlIpv4AddressToStringEx RtlIpv4AddressToStringExW
#define RtlIpv4StringToAddress RtlIpv4StringToAddressW
#define RtlIpv4StringToAddressEx RtlIpv4StringToAddressExW
#define RtlIpv6AddressToString RtlIpv6AddressToStringW
#define RtlIpv6AddressToStringEx RtlIpv6AddressToStringExW
#define RtlIpv6StringToAddress RtlIpv6StringToAddressW
#define RtlIpv6StringToAddressEx RtlIpv6StringToAddressExW
#else
#define RtlIpv4AddressToString RtlIpv4AddressToStringA
#define RtlIpv4AddressToStringEx RtlIpv4AddressToStringExA
#define RtlIpv4StringToAddress RtlIpv4StringToAddressA
#define RtlIpv4StringToAddressEx RtlIpv4StringToAddressExA
#define RtlIpv6AddressToString RtlIpv6AddressToStringA
#define RtlIpv6AddressToStringEx RtlIpv6AddressToStringExA
#define RtlIpv6StringToAddress RtlIpv6StringToAddressA
#define RtlIpv6StringToAddressEx RtlIpv6StringToAddressExA
#endif

#ifdef __cplusplus
}
#endif

#endif
