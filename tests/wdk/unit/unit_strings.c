/*
 * unit_strings - ntstrsafe (copy, cat, printf with the Windows conversions, truncation to
 * STATUS_BUFFER_OVERFLOW), counted strings, GUID strings and ip2string in both directions.
 */
#include "kunit.h"
#include <ntstrsafe.h>
#include <mstcpip.h>

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD StrUnload;

_Use_decl_annotations_
static VOID StrUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
}

static BOOLEAN WEq(PCWSTR a, PCWSTR b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

static NTSTATUS StrSafe(void)
{
    char a[8];
    WCHAR w[8];
    size_t n;
    CHECK(RtlStringCchCopyA(a, sizeof(a), "hello") == STATUS_SUCCESS && !strcmp(a, "hello"));
    CHECK(RtlStringCchCatA(a, sizeof(a), "world") == STATUS_BUFFER_OVERFLOW && !strcmp(a, "hellowo"));
    CHECK(RtlStringCchCopyA(a, 0, "x") == STATUS_INVALID_PARAMETER);
    CHECK(RtlStringCchCopyW(w, RTL_NUMBER_OF(w), L"abcdefghij") == STATUS_BUFFER_OVERFLOW && WEq(w, L"abcdefg"));
    CHECK(RtlStringCbCopyW(w, sizeof(w), L"ab") == STATUS_SUCCESS && WEq(w, L"ab"));
    CHECK(RtlStringCchCatW(w, RTL_NUMBER_OF(w), L"cd") == STATUS_SUCCESS && WEq(w, L"abcd"));
    CHECK(RtlStringCchCopyNW(w, RTL_NUMBER_OF(w), L"xyz123", 3) == STATUS_SUCCESS && WEq(w, L"xyz"));
    CHECK(RtlStringCchLengthW(w, RTL_NUMBER_OF(w), &n) == STATUS_SUCCESS && n == 3);
    CHECK(RtlStringCbLengthA("abc", 4, &n) == STATUS_SUCCESS && n == 3);
    CHECK(RtlStringCbLengthA("abc", 3, &n) == STATUS_INVALID_PARAMETER);

    char buf[128];
    WCHAR wbuf[64];
    UNICODE_STRING u;
    ANSI_STRING as;
    ULONG big = 0xFFFFFFFFu;
    RtlInitUnicodeString(&u, L"uni");
    RtlInitAnsiString(&as, "ansi");
    CHECK(RtlStringCbPrintfA(buf, sizeof(buf), "%d|%lu|%lx|%I64x|%llu|%ws|%S|%wZ|%Z|%c|%5s|%-3d|%%", -7, big, 0xABCDu,
                             0x1122334455ULL, 18446744073709551615ULL, L"wide", L"S", &u, &as, 'c', "r", 4) ==
          STATUS_SUCCESS);
    if (strcmp(buf, "-7|4294967295|abcd|1122334455|18446744073709551615|wide|S|uni|ansi|c|    r|4  |%")) {
        DbgPrint("got '%s'\n", buf);
        CHECK(FALSE);
    }
    CHECK(RtlStringCchPrintfW(wbuf, RTL_NUMBER_OF(wbuf), L"%s-%hs-%d-%wZ", L"w", "n", 42, &u) == STATUS_SUCCESS);
    CHECK(WEq(wbuf, L"w-n-42-uni"));
    CHECK(RtlStringCchPrintfA(a, sizeof(a), "%s", "0123456789") == STATUS_BUFFER_OVERFLOW && !strcmp(a, "0123456"));
    CHECK(RtlStringCbCopyUnicodeString(wbuf, sizeof(wbuf), &u) == STATUS_SUCCESS && WEq(wbuf, L"uni"));
    return STATUS_SUCCESS;
}

static NTSTATUS Unicode(void)
{
    UNICODE_STRING a, b, c;
    ANSI_STRING an;
    WCHAR store[16];
    DECLARE_CONST_UNICODE_STRING(k, L"Const");
    UNICODE_STRING r = RTL_CONSTANT_STRING(L"Const");
    CHECK(RtlEqualUnicodeString(&k, &r, FALSE) && r.Length == 10 && r.MaximumLength == 12);
    RtlInitUnicodeString(&a, L"Hello");
    RtlInitUnicodeString(&b, L"hELLO");
    CHECK(a.Length == 10 && a.MaximumLength == 12);
    CHECK(RtlEqualUnicodeString(&a, &b, TRUE) && !RtlEqualUnicodeString(&a, &b, FALSE));
    RtlInitUnicodeString(&c, NULL);
    CHECK(c.Length == 0 && c.Buffer == NULL);
    c.Buffer = store;
    c.Length = 0;
    c.MaximumLength = sizeof(store);
    RtlCopyUnicodeString(&c, &a);
    CHECK(RtlEqualUnicodeString(&c, &a, FALSE));
    CHECK(RtlAppendUnicodeToString(&c, L"!") == STATUS_SUCCESS && c.Length == 12);
    CHECK(NT_SUCCESS(RtlUnicodeStringToAnsiString(&an, &c, TRUE)));
    CHECK(an.Length == 6 && !memcmp(an.Buffer, "Hello!", 6));
    RtlFreeAnsiString(&an);
    ULONG v = 0;
    RtlInitUnicodeString(&a, L"0x1F");
    CHECK(RtlUnicodeStringToInteger(&a, 0, &v) == STATUS_SUCCESS && v == 31);
    GUID g = { 0x12345678, 0x9abc, 0xdef0, { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef } }, back;
    CHECK(RtlStringFromGUID(&g, &a) == STATUS_SUCCESS);
    RtlInitUnicodeString(&b, L"{12345678-9ABC-DEF0-0123-456789ABCDEF}");
    CHECK(RtlEqualUnicodeString(&a, &b, FALSE));
    CHECK(RtlGUIDFromString(&a, &back) == STATUS_SUCCESS && IsEqualGUID(&g, &back));
    RtlFreeUnicodeString(&a);
    return STATUS_SUCCESS;
}

static NTSTATUS IpStrings(void)
{
    IN_ADDR v4;
    IN6_ADDR v6;
    USHORT port;
    ULONG scope, len;
    PCSTR term;
    char s[INET6_ADDRSTRLEN];
    WCHAR w[INET6_ADDRSTRLEN];
    CHECK(RtlIpv4StringToAddressExW(L"192.168.1.20:4791", TRUE, &v4, &port) == STATUS_SUCCESS);
    CHECK(v4.S_un.S_un_b.s_b1 == 192 && v4.S_un.S_un_b.s_b4 == 20 && port == RtlUshortByteSwap(4791));
    CHECK(RtlIpv4StringToAddressExA("10.1", TRUE, &v4, &port) == STATUS_INVALID_PARAMETER);
    CHECK(RtlIpv4StringToAddressExA("10.1", FALSE, &v4, &port) == STATUS_SUCCESS && v4.S_un.S_addr ==
          RtlUlongByteSwap(0x0A000001));
    CHECK(RtlIpv4StringToAddressExA("0x7f.1", FALSE, &v4, &port) == STATUS_SUCCESS &&
          v4.S_un.S_un_b.s_b1 == 127 && v4.S_un.S_un_b.s_b4 == 1);
    CHECK(RtlIpv4StringToAddressA("1.2.3.4 rest", TRUE, &term, &v4) == STATUS_SUCCESS && *term == ' ');
    CHECK(RtlIpv4StringToAddressExA("256.1.1.1", TRUE, &v4, &port) == STATUS_INVALID_PARAMETER);
    CHECK(RtlIpv6StringToAddressExW(L"[fe80::1%3]:8000", &v6, &scope, &port) == STATUS_SUCCESS);
    CHECK(v6.u.Byte[0] == 0xfe && v6.u.Byte[15] == 1 && scope == 3 && port == RtlUshortByteSwap(8000));
    CHECK(RtlIpv6StringToAddressExA("::1", &v6, &scope, &port) == STATUS_SUCCESS && scope == 0 && port == 0);
    CHECK(RtlIpv6StringToAddressExA("::ffff:1.2.3.4", &v6, &scope, &port) == STATUS_SUCCESS && v6.u.Byte[15] == 4);
    CHECK(RtlIpv6StringToAddressExA("1::2::3", &v6, &scope, &port) == STATUS_INVALID_PARAMETER);
    RtlIpv4StringToAddressExA("10.0.0.7", TRUE, &v4, &port);
    CHECK(RtlIpv4AddressToStringA(&v4, s) == s + 8 && !strcmp(s, "10.0.0.7"));
    len = RTL_NUMBER_OF(s);
    CHECK(RtlIpv4AddressToStringExA(&v4, RtlUshortByteSwap(80), s, &len) == STATUS_SUCCESS &&
          !strcmp(s, "10.0.0.7:80") && len == 12);
    len = 4;
    CHECK(RtlIpv4AddressToStringExA(&v4, 0, s, &len) == STATUS_INVALID_PARAMETER && len == 9);
    RtlIpv6StringToAddressExA("fe80::1", &v6, &scope, &port);
    len = RTL_NUMBER_OF(w);
    CHECK(RtlIpv6AddressToStringExW(&v6, 2, RtlUshortByteSwap(443), w, &len) == STATUS_SUCCESS);
    CHECK(WEq(w, L"[fe80::1%2]:443"));
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    UNREFERENCED_PARAMETER(RegistryPath);
    DriverObject->DriverUnload = StrUnload;
    RUN(StrSafe);
    RUN(Unicode);
    RUN(IpStrings);
    return STATUS_SUCCESS;
}
