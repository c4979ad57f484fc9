/*
 * ipaddr.c - ip2string ("RtlIpv4StringToAddressExW function (ip2string.h)" and siblings).
 * Addresses and ports are in network byte order. IPv4 parsing: Strict takes exactly four
 * decimal parts; otherwise 1-4 parts, each decimal, octal (leading 0) or hex (0x), the last part
 * filling the remaining bytes (RFC 3493's inet_aton forms). IPv6 parsing splits "[addr%scope]:port"
 * or "addr%scope" and lets inet_pton judge the address (RFC 4291 text forms, embedded IPv4
 * included); the scope id comes back in host order (the documentation says network order; the
 * kit follows what code passes to sin6_scope_id). Output uses inet_ntop (RFC 5952 forms);
 * the Ex forms write "a.b.c.d:port" and "[addr%scope]:port" when the port (or scope) is
 * non-zero. W forms convert from/to UTF-16 and accept ASCII only.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include "wdk_internal.h"
#include <ip2string.h>

/* ASCII copy of a wide string into buf; returns units consumed (stops at NUL, a non-ASCII unit
 * or cap - 1). */
static size_t narrow(const WCHAR *w, char *buf, size_t cap)
{
    size_t i = 0;
    for (; w[i] && i + 1 < cap; i++) {
        if (w[i] >= 0x80)
            break;
        buf[i] = (char)w[i];
    }
    buf[i] = 0;
    return i;
}

static void widen(const char *s, WCHAR *w)
{
    size_t i = 0;
    for (; s[i]; i++)
        w[i] = (WCHAR)(unsigned char)s[i];
    w[i] = 0;
}

/* Parses an IPv4 address at s; *end is set past it. 0 or -1. */
static int parse_v4(const char *s, BOOLEAN strict, const char **end, uint32_t *out)
{
    unsigned long parts[4];
    int n = 0;
    const char *p = s;
    for (;;) {
        if (!(*p >= '0' && *p <= '9'))
            return -1;
        int base = 10;
        if (!strict && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
            base = 16;
            p += 2;
            if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
                return -1;
        } else if (!strict && p[0] == '0' && p[1] >= '0' && p[1] <= '9') {
            base = 8;
        }
        unsigned long v = 0;
        int digits = 0;
        for (;; p++, digits++) {
            int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                  : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : 99;
            if (d >= base)
                break;
            v = v * (unsigned long)base + (unsigned long)d;
            if (v > 0xffffffffUL)
                return -1;
        }
        if (!digits && base != 8)
            return -1;
        parts[n++] = v;
        if (*p != '.' || n == 4)
            break;
        p++;
    }
    if (strict && n != 4)
        return -1;
    uint32_t a;
    switch (n) {
    case 1:
        a = (uint32_t)parts[0];
        break;
    case 2:
        if (parts[0] > 255 || parts[1] > 0xffffff)
            return -1;
        a = (uint32_t)(parts[0] << 24 | parts[1]);
        break;
    case 3:
        if (parts[0] > 255 || parts[1] > 255 || parts[2] > 0xffff)
            return -1;
        a = (uint32_t)(parts[0] << 24 | parts[1] << 16 | parts[2]);
        break;
    default:
        for (int i = 0; i < 4; i++)
            if (parts[i] > 255)
                return -1;
        a = (uint32_t)(parts[0] << 24 | parts[1] << 16 | parts[2] << 8 | parts[3]);
        break;
    }
    *out = htonl(a);
    *end = p;
    return 0;
}

NTSTATUS RtlIpv4StringToAddressA(PCSTR S, BOOLEAN Strict, PCSTR *Terminator, void *Addr)
{
    uint32_t a;
    const char *end = S;
    if (!S || !Addr || parse_v4(S, Strict, &end, &a)) {
        if (Terminator)
            *Terminator = end;
        return STATUS_INVALID_PARAMETER;
    }
    memcpy(Addr, &a, 4);
    if (Terminator)
        *Terminator = end;
    return STATUS_SUCCESS;
}

NTSTATUS RtlIpv4StringToAddressW(PCWSTR S, BOOLEAN Strict, PCWSTR *Terminator, void *Addr)
{
    char buf[64];
    if (!S)
        return STATUS_INVALID_PARAMETER;
    narrow(S, buf, sizeof buf);
    PCSTR t = buf;
    NTSTATUS st = RtlIpv4StringToAddressA(buf, Strict, &t, Addr);
    if (Terminator)
        *Terminator = S + (t - buf);
    return st;
}

static int parse_port(const char *p, USHORT *port)
{
    if (!*p)
        return -1;
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (*end || v > 65535 || *p == '-' || *p == '+')
        return -1;
    *port = htons((USHORT)v);
    return 0;
}

NTSTATUS RtlIpv4StringToAddressExA(PCSTR AddressString, BOOLEAN Strict, void *Address, PUSHORT Port)
{
    if (!AddressString || !Address || !Port)
        return STATUS_INVALID_PARAMETER;
    uint32_t a;
    const char *end;
    if (parse_v4(AddressString, Strict, &end, &a))
        return STATUS_INVALID_PARAMETER;
    USHORT port = 0;
    if (*end == ':') {
        if (parse_port(end + 1, &port))
            return STATUS_INVALID_PARAMETER;
    } else if (*end) {
        return STATUS_INVALID_PARAMETER;
    }
    memcpy(Address, &a, 4);
    *Port = port;
    return STATUS_SUCCESS;
}

NTSTATUS RtlIpv4StringToAddressExW(PCWSTR AddressString, BOOLEAN Strict, void *Address, PUSHORT Port)
{
    char buf[64];
    if (!AddressString)
        return STATUS_INVALID_PARAMETER;
    size_t n = narrow(AddressString, buf, sizeof buf);
    if (AddressString[n])
        return STATUS_INVALID_PARAMETER;
    return RtlIpv4StringToAddressExA(buf, Strict, Address, Port);
}

/* The longest prefix of s that inet_pton accepts as IPv6 (for the Terminator forms). */
static int parse_v6_prefix(const char *s, const char **end, struct in6_addr *out)
{
    char buf[64];
    size_t n = strspn(s, "0123456789abcdefABCDEF:.");
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    for (; n > 1; n--) {
        memcpy(buf, s, n);
        buf[n] = 0;
        if (inet_pton(AF_INET6, buf, out) == 1) {
            *end = s + n;
            return 0;
        }
    }
    return -1;
}

NTSTATUS RtlIpv6StringToAddressA(PCSTR S, PCSTR *Terminator, void *Addr)
{
    struct in6_addr a;
    const char *end = S;
    if (!S || !Addr || parse_v6_prefix(S, &end, &a)) {
        if (Terminator)
            *Terminator = end;
        return STATUS_INVALID_PARAMETER;
    }
    memcpy(Addr, &a, 16);
    if (Terminator)
        *Terminator = end;
    return STATUS_SUCCESS;
}

NTSTATUS RtlIpv6StringToAddressW(PCWSTR S, PCWSTR *Terminator, void *Addr)
{
    char buf[96];
    if (!S)
        return STATUS_INVALID_PARAMETER;
    narrow(S, buf, sizeof buf);
    PCSTR t = buf;
    NTSTATUS st = RtlIpv6StringToAddressA(buf, &t, Addr);
    if (Terminator)
        *Terminator = S + (t - buf);
    return st;
}

NTSTATUS RtlIpv6StringToAddressExA(PCSTR AddressString, void *Address, PULONG ScopeId, PUSHORT Port)
{
    if (!AddressString || !Address || !ScopeId || !Port)
        return STATUS_INVALID_PARAMETER;
    char buf[96];
    const char *s = AddressString;
    USHORT port = 0;
    size_t len;
    if (*s == '[') {
        const char *close = strchr(s, ']');
        if (!close)
            return STATUS_INVALID_PARAMETER;
        len = (size_t)(close - s - 1);
        if (close[1] == ':') {
            if (parse_port(close + 2, &port))
                return STATUS_INVALID_PARAMETER;
        } else if (close[1]) {
            return STATUS_INVALID_PARAMETER;
        }
        s++;
    } else {
        len = strlen(s);
    }
    if (len >= sizeof buf)
        return STATUS_INVALID_PARAMETER;
    memcpy(buf, s, len);
    buf[len] = 0;
    ULONG scope = 0;
    char *pct = strchr(buf, '%');
    if (pct) {
        *pct = 0;
        char *end;
        unsigned long v = strtoul(pct + 1, &end, 10);
        if (!pct[1] || *end || v > 0xffffffffUL)
            return STATUS_INVALID_PARAMETER;
        scope = (ULONG)v;
    }
    struct in6_addr a;
    if (inet_pton(AF_INET6, buf, &a) != 1)
        return STATUS_INVALID_PARAMETER;
    memcpy(Address, &a, 16);
    *ScopeId = scope;
    *Port = port;
    return STATUS_SUCCESS;
}

NTSTATUS RtlIpv6StringToAddressExW(PCWSTR AddressString, void *Address, PULONG ScopeId, PUSHORT Port)
{
    char buf[128];
    if (!AddressString)
        return STATUS_INVALID_PARAMETER;
    size_t n = narrow(AddressString, buf, sizeof buf);
    if (AddressString[n])
        return STATUS_INVALID_PARAMETER;
    return RtlIpv6StringToAddressExA(buf, Address, ScopeId, Port);
}

PSTR RtlIpv4AddressToStringA(const void *Addr, PSTR S)
{
    inet_ntop(AF_INET, Addr, S, 16);
    return S + strlen(S);
}

PWSTR RtlIpv4AddressToStringW(const void *Addr, PWSTR S)
{
    char buf[16];
    inet_ntop(AF_INET, Addr, buf, sizeof buf);
    widen(buf, S);
    return S + strlen(buf);
}

PSTR RtlIpv6AddressToStringA(const void *Addr, PSTR S)
{
    inet_ntop(AF_INET6, Addr, S, 46);
    return S + strlen(S);
}

PWSTR RtlIpv6AddressToStringW(const void *Addr, PWSTR S)
{
    char buf[46];
    inet_ntop(AF_INET6, Addr, buf, sizeof buf);
    widen(buf, S);
    return S + strlen(buf);
}

/* Ex output: *Length in = buffer characters with the NUL; out = characters written with the
 * NUL, or the size needed when the buffer is too small (STATUS_INVALID_PARAMETER). */
static NTSTATUS ex_result(const char *text, void *out, int wide, PULONG Length)
{
    ULONG need = (ULONG)strlen(text) + 1;
    if (!out || !Length || *Length < need) {
        if (Length)
            *Length = need;
        return STATUS_INVALID_PARAMETER;
    }
    if (wide)
        widen(text, out);
    else
        memcpy(out, text, need);
    *Length = need;
    return STATUS_SUCCESS;
}

static void v4_text(const void *Address, USHORT Port, char *buf, size_t n)
{
    char a[16];
    inet_ntop(AF_INET, Address, a, sizeof a);
    if (Port)
        snprintf(buf, n, "%s:%u", a, ntohs(Port));
    else
        snprintf(buf, n, "%s", a);
}

static void v6_text(const void *Address, ULONG ScopeId, USHORT Port, char *buf, size_t n)
{
    char a[46], scope[16] = "";
    inet_ntop(AF_INET6, Address, a, sizeof a);
    if (ScopeId)
        snprintf(scope, sizeof scope, "%%%u", ScopeId);
    if (Port)
        snprintf(buf, n, "[%s%s]:%u", a, scope, ntohs(Port));
    else
        snprintf(buf, n, "%s%s", a, scope);
}

NTSTATUS RtlIpv4AddressToStringExA(const void *Address, USHORT Port, PSTR AddressString, PULONG AddressStringLength)
{
    char buf[32];
    if (!Address)
        return STATUS_INVALID_PARAMETER;
    v4_text(Address, Port, buf, sizeof buf);
    return ex_result(buf, AddressString, 0, AddressStringLength);
}

NTSTATUS RtlIpv4AddressToStringExW(const void *Address, USHORT Port, PWSTR AddressString, PULONG AddressStringLength)
{
    char buf[32];
    if (!Address)
        return STATUS_INVALID_PARAMETER;
    v4_text(Address, Port, buf, sizeof buf);
    return ex_result(buf, AddressString, 1, AddressStringLength);
}

NTSTATUS RtlIpv6AddressToStringExA(const void *Address, ULONG ScopeId, USHORT Port, PSTR AddressString,
                                   PULONG AddressStringLength)
{
    char buf[80];
    if (!Address)
        return STATUS_INVALID_PARAMETER;
    v6_text(Address, ScopeId, Port, buf, sizeof buf);
    return ex_result(buf, AddressString, 0, AddressStringLength);
}

NTSTATUS RtlIpv6AddressToStringExW(const void *Address, ULONG ScopeId, USHORT Port, PWSTR AddressString,
                                   PULONG AddressStringLength)
{
    char buf[80];
    if (!Address)
        return STATUS_INVALID_PARAMETER;
    v6_text(Address, ScopeId, Port, buf, sizeof buf);
    return ex_result(buf, AddressString, 1, AddressStringLength);
}
