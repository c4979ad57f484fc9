/*
 * rtl_string.c - counted strings ("RtlInitUnicodeString function (wdm.h)" and siblings) and the
 * kit's UTF-16 helpers. Lengths are bytes and exclude any terminator. Strings an Rtl routine
 * allocates come from pool with the tag 'UsSt'/'AsSt', so RtlFreeUnicodeString/RtlFreeAnsiString
 * must free them and a forgotten one is reported at unload. The "ANSI code page" is UTF-8.
 * libc's wcs* functions are never used: WCHAR is 16 bits here, wchar_t is not in libc.
 */
#include <stdio.h>
#include <stdlib.h>
#include "wdk_internal.h"

#define TAG_USTR 0x74537355u   /* 'tSsU' -> "UsSt" */
#define TAG_ASTR 0x74537341u   /* "AsSt" */

size_t wdk_wcslen(const WCHAR *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

size_t wdk_utf16_to_utf8(const WCHAR *s, size_t n, char *buf, size_t cap)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = s[i];
        if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < n && s[i + 1] >= 0xDC00 && s[i + 1] < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (s[i + 1] - 0xDC00);
            i++;
        }
        char b[4];
        int k;
        if (cp < 0x80) {
            b[0] = (char)cp;
            k = 1;
        } else if (cp < 0x800) {
            b[0] = (char)(0xC0 | (cp >> 6));
            b[1] = (char)(0x80 | (cp & 0x3F));
            k = 2;
        } else if (cp < 0x10000) {
            b[0] = (char)(0xE0 | (cp >> 12));
            b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
            b[2] = (char)(0x80 | (cp & 0x3F));
            k = 3;
        } else {
            b[0] = (char)(0xF0 | (cp >> 18));
            b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
            b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
            b[3] = (char)(0x80 | (cp & 0x3F));
            k = 4;
        }
        for (int j = 0; j < k; j++, out++)
            if (out + 1 < cap)
                buf[out] = b[j];
    }
    if (cap)
        buf[out < cap ? out : cap - 1] = 0;
    return out;
}

size_t wdk_utf8_to_utf16(const char *s, size_t n, WCHAR *buf, size_t cap)
{
    const unsigned char *b = (const unsigned char *)s;
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c = b[i++];
        int more = c >= 0xF0 && c < 0xF8 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
        if (c >= 0x80 && more && i + (size_t)more <= n) {
            uint32_t v = c & (0x3F >> more);
            int k;
            for (k = 0; k < more && (b[i + (size_t)k] & 0xC0) == 0x80; k++)
                v = (v << 6) | (b[i + (size_t)k] & 0x3F);
            if (k == more) {
                i += (size_t)more;
                c = v;
            }
        }
        if (c >= 0x10000) {
            if (out + 1 < cap)
                buf[out] = (WCHAR)(0xD800 + ((c - 0x10000) >> 10));
            out++;
            c = 0xDC00 + ((c - 0x10000) & 0x3FF);
        }
        if (out + 1 < cap)
            buf[out] = (WCHAR)c;
        out++;
    }
    if (cap)
        buf[out < cap ? out : cap - 1] = 0;
    return out;
}

/* Sources longer than a USHORT length can hold are clamped, as RtlInitUnicodeString does. */
VOID RtlInitUnicodeString(PUNICODE_STRING DestinationString, PCWSTR SourceString)
{
    DestinationString->Buffer = (PWCH)SourceString;
    if (!SourceString) {
        DestinationString->Length = DestinationString->MaximumLength = 0;
        return;
    }
    size_t n = wdk_wcslen(SourceString) * sizeof(WCHAR);
    if (n > UNICODE_STRING_MAX_BYTES - sizeof(WCHAR))
        n = UNICODE_STRING_MAX_BYTES - sizeof(WCHAR);
    DestinationString->Length = (USHORT)n;
    DestinationString->MaximumLength = (USHORT)(n + sizeof(WCHAR));
}

NTSTATUS RtlInitUnicodeStringEx(PUNICODE_STRING DestinationString, PCWSTR SourceString)
{
    if (SourceString && wdk_wcslen(SourceString) * sizeof(WCHAR) > UNICODE_STRING_MAX_BYTES - sizeof(WCHAR))
        return STATUS_NAME_TOO_LONG;
    RtlInitUnicodeString(DestinationString, SourceString);
    return STATUS_SUCCESS;
}

VOID RtlInitAnsiString(PANSI_STRING DestinationString, PCSZ SourceString)
{
    DestinationString->Buffer = (PCHAR)SourceString;
    if (!SourceString) {
        DestinationString->Length = DestinationString->MaximumLength = 0;
        return;
    }
    size_t n = strlen(SourceString);
    if (n > 65534)
        n = 65534;
    DestinationString->Length = (USHORT)n;
    DestinationString->MaximumLength = (USHORT)(n + 1);
}

VOID RtlInitString(PSTRING DestinationString, PCSZ SourceString)
{
    RtlInitAnsiString(DestinationString, SourceString);
}

VOID RtlFreeUnicodeString(PUNICODE_STRING UnicodeString)
{
    if (UnicodeString->Buffer)
        wdk_pool_free_at(UnicodeString->Buffer, TAG_USTR, TRUE, WDK_CALLER);
    UnicodeString->Buffer = NULL;
    UnicodeString->Length = UnicodeString->MaximumLength = 0;
}

VOID RtlFreeAnsiString(PANSI_STRING AnsiString)
{
    if (AnsiString->Buffer)
        wdk_pool_free_at(AnsiString->Buffer, TAG_ASTR, TRUE, WDK_CALLER);
    AnsiString->Buffer = NULL;
    AnsiString->Length = AnsiString->MaximumLength = 0;
}

VOID RtlCopyUnicodeString(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString)
{
    if (!SourceString) {
        DestinationString->Length = 0;
        return;
    }
    USHORT n = SourceString->Length < DestinationString->MaximumLength ? SourceString->Length
                                                                       : DestinationString->MaximumLength;
    memmove(DestinationString->Buffer, SourceString->Buffer, n);
    DestinationString->Length = n;
    if (n + sizeof(WCHAR) <= DestinationString->MaximumLength)
        DestinationString->Buffer[n / sizeof(WCHAR)] = 0;
}

VOID RtlCopyString(PSTRING DestinationString, const STRING *SourceString)
{
    if (!SourceString) {
        DestinationString->Length = 0;
        return;
    }
    USHORT n = SourceString->Length < DestinationString->MaximumLength ? SourceString->Length
                                                                       : DestinationString->MaximumLength;
    memmove(DestinationString->Buffer, SourceString->Buffer, n);
    DestinationString->Length = n;
    if (n < DestinationString->MaximumLength)
        DestinationString->Buffer[n] = 0;
}

NTSTATUS RtlAppendUnicodeStringToString(PUNICODE_STRING Destination, PCUNICODE_STRING Source)
{
    if (!Source || !Source->Length)
        return STATUS_SUCCESS;
    if ((size_t)Destination->Length + Source->Length > Destination->MaximumLength)
        return STATUS_BUFFER_TOO_SMALL;
    memmove((char *)Destination->Buffer + Destination->Length, Source->Buffer, Source->Length);
    Destination->Length = (USHORT)(Destination->Length + Source->Length);
    if (Destination->Length + sizeof(WCHAR) <= Destination->MaximumLength)
        Destination->Buffer[Destination->Length / sizeof(WCHAR)] = 0;
    return STATUS_SUCCESS;
}

NTSTATUS RtlAppendUnicodeToString(PUNICODE_STRING Destination, PCWSTR Source)
{
    UNICODE_STRING s;
    RtlInitUnicodeString(&s, Source);
    return RtlAppendUnicodeStringToString(Destination, &s);
}

WCHAR RtlUpcaseUnicodeChar(WCHAR SourceCharacter)
{
    return (SourceCharacter >= 'a' && SourceCharacter <= 'z') ? (WCHAR)(SourceCharacter - 32) : SourceCharacter;
}

WCHAR RtlDowncaseUnicodeChar(WCHAR SourceCharacter)
{
    return (SourceCharacter >= 'A' && SourceCharacter <= 'Z') ? (WCHAR)(SourceCharacter + 32) : SourceCharacter;
}

/* Case folding covers ASCII only (documented in openndk-wdk(7)). */
LONG RtlCompareUnicodeString(PCUNICODE_STRING String1, PCUNICODE_STRING String2, BOOLEAN CaseInSensitive)
{
    size_t n1 = String1->Length / 2, n2 = String2->Length / 2;
    for (size_t i = 0; i < n1 && i < n2; i++) {
        WCHAR a = String1->Buffer[i], b = String2->Buffer[i];
        if (CaseInSensitive) {
            a = RtlUpcaseUnicodeChar(a);
            b = RtlUpcaseUnicodeChar(b);
        }
        if (a != b)
            return (LONG)a - (LONG)b;
    }
    return (LONG)n1 - (LONG)n2;
}

BOOLEAN RtlEqualUnicodeString(PCUNICODE_STRING String1, PCUNICODE_STRING String2, BOOLEAN CaseInSensitive)
{
    return (BOOLEAN)(String1->Length == String2->Length &&
                     RtlCompareUnicodeString(String1, String2, CaseInSensitive) == 0);
}

BOOLEAN RtlPrefixUnicodeString(PCUNICODE_STRING String1, PCUNICODE_STRING String2, BOOLEAN CaseInSensitive)
{
    if (String1->Length > String2->Length)
        return FALSE;
    UNICODE_STRING head = *String2;
    head.Length = String1->Length;
    return RtlEqualUnicodeString(String1, &head, CaseInSensitive);
}

BOOLEAN RtlEqualString(const STRING *String1, const STRING *String2, BOOLEAN CaseInSensitive)
{
    if (String1->Length != String2->Length)
        return FALSE;
    for (USHORT i = 0; i < String1->Length; i++) {
        char a = String1->Buffer[i], b = String2->Buffer[i];
        if (CaseInSensitive) {
            a = (char)((a >= 'a' && a <= 'z') ? a - 32 : a);
            b = (char)((b >= 'a' && b <= 'z') ? b - 32 : b);
        }
        if (a != b)
            return FALSE;
    }
    return TRUE;
}

ULONG RtlxUnicodeStringToAnsiSize(PCUNICODE_STRING UnicodeString)
{
    return (ULONG)wdk_utf16_to_utf8(UnicodeString->Buffer, UnicodeString->Length / 2, NULL, 0) + 1;
}

/* A caller buffer that is too small receives the truncated, terminated result and
 * STATUS_BUFFER_OVERFLOW (the documentation leaves the code open; this is the kit's choice). */
NTSTATUS RtlUnicodeStringToAnsiString(PANSI_STRING DestinationString, PCUNICODE_STRING SourceString,
                                      BOOLEAN AllocateDestinationString)
{
    size_t need = wdk_utf16_to_utf8(SourceString->Buffer, SourceString->Length / 2, NULL, 0);
    if (need > 65534)
        return STATUS_INVALID_PARAMETER_2;
    if (AllocateDestinationString) {
        char *b = wdk_pool_alloc_type_at(PagedPool, need + 1, TAG_ASTR, FALSE, "RtlUnicodeStringToAnsiString",
                                         WDK_CALLER);
        if (!b)
            return STATUS_NO_MEMORY;
        DestinationString->Buffer = b;
        DestinationString->MaximumLength = (USHORT)(need + 1);
    }
    size_t cap = DestinationString->MaximumLength;
    if (!cap)
        return STATUS_BUFFER_OVERFLOW;
    wdk_utf16_to_utf8(SourceString->Buffer, SourceString->Length / 2, DestinationString->Buffer, cap);
    DestinationString->Length = (USHORT)strlen(DestinationString->Buffer);
    return need + 1 > cap ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS;
}

NTSTATUS RtlAnsiStringToUnicodeString(PUNICODE_STRING DestinationString, PCANSI_STRING SourceString,
                                      BOOLEAN AllocateDestinationString)
{
    size_t need = wdk_utf8_to_utf16(SourceString->Buffer, SourceString->Length, NULL, 0);
    if ((need + 1) * 2 > UNICODE_STRING_MAX_BYTES)
        return STATUS_INVALID_PARAMETER_2;
    if (AllocateDestinationString) {
        WCHAR *b = wdk_pool_alloc_type_at(PagedPool, (need + 1) * 2, TAG_USTR, FALSE, "RtlAnsiStringToUnicodeString",
                                          WDK_CALLER);
        if (!b)
            return STATUS_NO_MEMORY;
        DestinationString->Buffer = b;
        DestinationString->MaximumLength = (USHORT)((need + 1) * 2);
    }
    size_t cap = DestinationString->MaximumLength / 2;
    if (!cap)
        return STATUS_BUFFER_OVERFLOW;
    size_t n = wdk_utf8_to_utf16(SourceString->Buffer, SourceString->Length, DestinationString->Buffer, cap);
    if (n > cap - 1)
        n = cap - 1;
    DestinationString->Length = (USHORT)(n * 2);
    return need + 1 > cap ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS;
}

static NTSTATUS change_case(PUNICODE_STRING Dst, PCUNICODE_STRING Src, BOOLEAN Alloc, WCHAR (*fn)(WCHAR))
{
    if (Alloc) {
        WCHAR *b = wdk_pool_alloc_type_at(PagedPool, Src->Length + 2u, TAG_USTR, FALSE, "Rtl*caseUnicodeString",
                                          WDK_CALLER);
        if (!b)
            return STATUS_NO_MEMORY;
        Dst->Buffer = b;
        Dst->MaximumLength = (USHORT)(Src->Length + 2);
    } else if (Dst->MaximumLength < Src->Length) {
        return STATUS_BUFFER_OVERFLOW;
    }
    for (USHORT i = 0; i < Src->Length / 2; i++)
        Dst->Buffer[i] = fn(Src->Buffer[i]);
    Dst->Length = Src->Length;
    return STATUS_SUCCESS;
}

NTSTATUS RtlUpcaseUnicodeString(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString,
                                BOOLEAN AllocateDestinationString)
{
    return change_case(DestinationString, SourceString, AllocateDestinationString, RtlUpcaseUnicodeChar);
}

NTSTATUS RtlDowncaseUnicodeString(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString,
                                  BOOLEAN AllocateDestinationString)
{
    return change_case(DestinationString, SourceString, AllocateDestinationString, RtlDowncaseUnicodeChar);
}

NTSTATUS RtlInt64ToUnicodeString(ULONGLONG Value, ULONG Base, PUNICODE_STRING String)
{
    char tmp[72];
    int n = 0;
    if (Base == 0)
        Base = 10;
    if (Base != 2 && Base != 8 && Base != 10 && Base != 16)
        return STATUS_INVALID_PARAMETER;
    do {
        unsigned d = (unsigned)(Value % Base);
        tmp[n++] = (char)(d < 10 ? '0' + d : 'A' + d - 10);
        Value /= Base;
    } while (Value);
    if ((size_t)n * 2 + 2 > String->MaximumLength)
        return STATUS_BUFFER_OVERFLOW;
    for (int i = 0; i < n; i++)
        String->Buffer[i] = (WCHAR)tmp[n - 1 - i];
    String->Buffer[n] = 0;
    String->Length = (USHORT)(n * 2);
    return STATUS_SUCCESS;
}

NTSTATUS RtlIntegerToUnicodeString(ULONG Value, ULONG Base, PUNICODE_STRING String)
{
    return RtlInt64ToUnicodeString(Value, Base, String);
}

/* Parses [whitespace][+|-][0x|0o|0b]digits, as RtlUnicodeStringToInteger documents. */
static NTSTATUS parse_integer(const WCHAR *w, const char *a, size_t n, ULONG Base, PULONG Value)
{
    size_t i = 0;
#define CH(k) ((uint32_t)(w ? w[k] : (unsigned char)a[k]))
    while (i < n && (CH(i) == ' ' || CH(i) == '\t'))
        i++;
    int neg = 0;
    if (i < n && (CH(i) == '+' || CH(i) == '-'))
        neg = CH(i++) == '-';
    if (Base == 0) {
        Base = 10;
        if (i + 1 < n && CH(i) == '0') {
            uint32_t p = CH(i + 1);
            if (p == 'x' || p == 'X')
                Base = 16, i += 2;
            else if (p == 'o' || p == 'O')
                Base = 8, i += 2;
            else if (p == 'b' || p == 'B')
                Base = 2, i += 2;
        }
    } else if (Base != 2 && Base != 8 && Base != 10 && Base != 16) {
        return STATUS_INVALID_PARAMETER;
    }
    ULONG v = 0;
    for (; i < n; i++) {
        uint32_t c = CH(i);
        uint32_t d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
        if (d >= Base)
            break;
        v = v * Base + d;
    }
#undef CH
    *Value = neg ? (ULONG)(-(LONG)v) : v;
    return STATUS_SUCCESS;
}

NTSTATUS RtlUnicodeStringToInteger(PCUNICODE_STRING String, ULONG Base, PULONG Value)
{
    return parse_integer(String->Buffer, NULL, String->Length / 2, Base, Value);
}

NTSTATUS RtlCharToInteger(PCSZ String, ULONG Base, PULONG Value)
{
    return parse_integer(NULL, String, strlen(String), Base, Value);
}

/* "{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}" in upper case, allocated (free with
 * RtlFreeUnicodeString). */
NTSTATUS RtlStringFromGUID(REFGUID Guid, PUNICODE_STRING GuidString)
{
    char tmp[40];
    snprintf(tmp, sizeof tmp, "{%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X}", Guid->Data1, Guid->Data2,
             Guid->Data3, Guid->Data4[0], Guid->Data4[1], Guid->Data4[2], Guid->Data4[3], Guid->Data4[4],
             Guid->Data4[5], Guid->Data4[6], Guid->Data4[7]);
    WCHAR *b = wdk_pool_alloc_type_at(PagedPool, 39 * sizeof(WCHAR), TAG_USTR, FALSE, "RtlStringFromGUID", WDK_CALLER);
    if (!b)
        return STATUS_NO_MEMORY;
    for (int i = 0; i < 39; i++)
        b[i] = (WCHAR)tmp[i];
    GuidString->Buffer = b;
    GuidString->Length = 38 * sizeof(WCHAR);
    GuidString->MaximumLength = 39 * sizeof(WCHAR);
    return STATUS_SUCCESS;
}

static int hexval(WCHAR c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                                                                        : -1;
}

NTSTATUS RtlGUIDFromString(PCUNICODE_STRING GuidString, GUID *Guid)
{
    static const char shape[] = "{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}";
    if (GuidString->Length != 38 * sizeof(WCHAR))
        return STATUS_INVALID_PARAMETER;
    uint8_t bytes[16];
    int nb = 0, hi = -1;
    for (int i = 0; i < 38; i++) {
        WCHAR c = GuidString->Buffer[i];
        if (shape[i] != 'X') {
            if (c != (WCHAR)shape[i])
                return STATUS_INVALID_PARAMETER;
            continue;
        }
        int v = hexval(c);
        if (v < 0)
            return STATUS_INVALID_PARAMETER;
        if (hi < 0) {
            hi = v;
        } else {
            bytes[nb++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    Guid->Data1 = (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 | bytes[3];
    Guid->Data2 = (uint16_t)(bytes[4] << 8 | bytes[5]);
    Guid->Data3 = (uint16_t)(bytes[6] << 8 | bytes[7]);
    memcpy(Guid->Data4, bytes + 8, 8);
    return STATUS_SUCCESS;
}

NTSTATUS RtlUTF8ToUnicodeN(PWSTR UnicodeStringDestination, ULONG UnicodeStringMaxByteCount,
                           PULONG UnicodeStringActualByteCount, PCCH UTF8StringSource, ULONG UTF8StringByteCount)
{
    if (!UTF8StringSource || !UnicodeStringActualByteCount)
        return STATUS_INVALID_PARAMETER;
    size_t need = wdk_utf8_to_utf16(UTF8StringSource, UTF8StringByteCount, NULL, 0);
    if (!UnicodeStringDestination) {
        *UnicodeStringActualByteCount = (ULONG)(need * 2);
        return STATUS_SUCCESS;
    }
    size_t cap = UnicodeStringMaxByteCount / 2;
    WCHAR *tmp = malloc((need + 1) * sizeof(WCHAR));
    if (!tmp)
        return STATUS_NO_MEMORY;
    wdk_utf8_to_utf16(UTF8StringSource, UTF8StringByteCount, tmp, need + 1);
    size_t n = need < cap ? need : cap;
    memcpy(UnicodeStringDestination, tmp, n * 2);
    free(tmp);
    *UnicodeStringActualByteCount = (ULONG)(n * 2);
    return n < need ? STATUS_BUFFER_TOO_SMALL : STATUS_SUCCESS;
}

NTSTATUS RtlUnicodeToUTF8N(PCHAR UTF8StringDestination, ULONG UTF8StringMaxByteCount,
                           PULONG UTF8StringActualByteCount, PCWCH UnicodeStringSource, ULONG UnicodeStringByteCount)
{
    if (!UnicodeStringSource || !UTF8StringActualByteCount)
        return STATUS_INVALID_PARAMETER;
    size_t need = wdk_utf16_to_utf8(UnicodeStringSource, UnicodeStringByteCount / 2, NULL, 0);
    if (!UTF8StringDestination) {
        *UTF8StringActualByteCount = (ULONG)need;
        return STATUS_SUCCESS;
    }
    char *tmp = malloc(need + 1);
    if (!tmp)
        return STATUS_NO_MEMORY;
    wdk_utf16_to_utf8(UnicodeStringSource, UnicodeStringByteCount / 2, tmp, need + 1);
    size_t n = need < UTF8StringMaxByteCount ? need : UTF8StringMaxByteCount;
    memcpy(UTF8StringDestination, tmp, n);
    free(tmp);
    *UTF8StringActualByteCount = (ULONG)n;
    return n < need ? STATUS_BUFFER_TOO_SMALL : STATUS_SUCCESS;
}
