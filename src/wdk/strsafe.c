/*
 * strsafe.c - ntstrsafe ("RtlStringCchCopyW function (ntstrsafe.h)" and its family), which the
 * WDK defines inline. Every result is NUL-terminated when the destination holds at least one
 * character; what does not fit is truncated and reported as STATUS_BUFFER_OVERFLOW; a size of 0
 * or above NTSTRSAFE_MAX_CCH, or a NULL destination, is STATUS_INVALID_PARAMETER.
 */
#include <stdlib.h>
#include "wdk_internal.h"
#include <ntstrsafe.h>

/* Generic over the character width: n units at d (char or WCHAR). */
static size_t slen(const void *s, int wide, size_t max)
{
    size_t n = 0;
    if (wide)
        while (n < max && ((const WCHAR *)s)[n])
            n++;
    else
        while (n < max && ((const char *)s)[n])
            n++;
    return n;
}

static void put(void *d, int wide, size_t i, unsigned v)
{
    if (wide)
        ((WCHAR *)d)[i] = (WCHAR)v;
    else
        ((char *)d)[i] = (char)v;
}

static unsigned get(const void *s, int wide, size_t i)
{
    return wide ? ((const WCHAR *)s)[i] : (unsigned char)((const char *)s)[i];
}

/* Copies at most max units of src to dst+at (cap units in all, terminator included). */
static NTSTATUS copy_at(void *dst, size_t cap, size_t at, const void *src, size_t max, int wide, size_t *end)
{
    size_t i = 0;
    NTSTATUS st = STATUS_SUCCESS;
    while (i < max && get(src, wide, i)) {
        if (at + i + 1 >= cap) {
            st = STATUS_BUFFER_OVERFLOW;
            break;
        }
        put(dst, wide, at + i, get(src, wide, i));
        i++;
    }
    put(dst, wide, at + i, 0);
    if (end)
        *end = at + i;
    return st;
}

static NTSTATUS cch_copy(void *d, size_t cch, const void *s, size_t max, int wide)
{
    if (!d || cch == 0 || cch > NTSTRSAFE_MAX_CCH)
        return STATUS_INVALID_PARAMETER;
    if (!s) {
        put(d, wide, 0, 0);
        return STATUS_INVALID_PARAMETER;
    }
    return copy_at(d, cch, 0, s, max, wide, NULL);
}

static NTSTATUS cch_cat(void *d, size_t cch, const void *s, size_t max, int wide)
{
    if (!d || cch == 0 || cch > NTSTRSAFE_MAX_CCH)
        return STATUS_INVALID_PARAMETER;
    size_t at = slen(d, wide, cch);
    if (at == cch)
        return STATUS_INVALID_PARAMETER;   /* the destination is not terminated within its size */
    if (!s)
        return STATUS_INVALID_PARAMETER;
    return copy_at(d, cch, at, s, max, wide, NULL);
}

NTSTATUS RtlStringCchCopyA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszSrc)
{
    return cch_copy(pszDest, cchDest, pszSrc, SIZE_MAX, 0);
}
NTSTATUS RtlStringCchCopyW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszSrc)
{
    return cch_copy(pszDest, cchDest, pszSrc, SIZE_MAX, 1);
}
NTSTATUS RtlStringCbCopyA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszSrc)
{
    return cch_copy(pszDest, cbDest, pszSrc, SIZE_MAX, 0);
}
NTSTATUS RtlStringCbCopyW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszSrc)
{
    return cch_copy(pszDest, cbDest / sizeof(WCHAR), pszSrc, SIZE_MAX, 1);
}
NTSTATUS RtlStringCchCopyNA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszSrc, size_t cchToCopy)
{
    return cch_copy(pszDest, cchDest, pszSrc, cchToCopy, 0);
}
NTSTATUS RtlStringCchCopyNW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszSrc, size_t cchToCopy)
{
    return cch_copy(pszDest, cchDest, pszSrc, cchToCopy, 1);
}
NTSTATUS RtlStringCbCopyNA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszSrc, size_t cbToCopy)
{
    return cch_copy(pszDest, cbDest, pszSrc, cbToCopy, 0);
}
NTSTATUS RtlStringCbCopyNW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszSrc, size_t cbToCopy)
{
    return cch_copy(pszDest, cbDest / sizeof(WCHAR), pszSrc, cbToCopy / sizeof(WCHAR), 1);
}
NTSTATUS RtlStringCchCatA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszSrc)
{
    return cch_cat(pszDest, cchDest, pszSrc, SIZE_MAX, 0);
}
NTSTATUS RtlStringCchCatW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszSrc)
{
    return cch_cat(pszDest, cchDest, pszSrc, SIZE_MAX, 1);
}
NTSTATUS RtlStringCbCatA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszSrc)
{
    return cch_cat(pszDest, cbDest, pszSrc, SIZE_MAX, 0);
}
NTSTATUS RtlStringCbCatW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszSrc)
{
    return cch_cat(pszDest, cbDest / sizeof(WCHAR), pszSrc, SIZE_MAX, 1);
}
NTSTATUS RtlStringCchCatNA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszSrc, size_t cchToAppend)
{
    return cch_cat(pszDest, cchDest, pszSrc, cchToAppend, 0);
}
NTSTATUS RtlStringCchCatNW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszSrc, size_t cchToAppend)
{
    return cch_cat(pszDest, cchDest, pszSrc, cchToAppend, 1);
}
NTSTATUS RtlStringCbCatNA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszSrc, size_t cbToAppend)
{
    return cch_cat(pszDest, cbDest, pszSrc, cbToAppend, 0);
}
NTSTATUS RtlStringCbCatNW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszSrc, size_t cbToAppend)
{
    return cch_cat(pszDest, cbDest / sizeof(WCHAR), pszSrc, cbToAppend / sizeof(WCHAR), 1);
}

static NTSTATUS vprintf_cch(void *d, size_t cch, const void *fmt, int wide, va_list ap)
{
    if (!d || cch == 0 || cch > NTSTRSAFE_MAX_CCH)
        return STATUS_INVALID_PARAMETER;
    if (!fmt) {
        put(d, wide, 0, 0);
        return STATUS_INVALID_PARAMETER;
    }
    size_t need = wdk_vformat(d, cch, wide, fmt, wide, ap);
    return need >= cch ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS;
}

NTSTATUS RtlStringCchVPrintfA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszFormat, va_list argList)
{
    return vprintf_cch(pszDest, cchDest, pszFormat, 0, argList);
}
NTSTATUS RtlStringCchVPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszFormat, va_list argList)
{
    return vprintf_cch(pszDest, cchDest, pszFormat, 1, argList);
}
NTSTATUS RtlStringCbVPrintfA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszFormat, va_list argList)
{
    return vprintf_cch(pszDest, cbDest, pszFormat, 0, argList);
}
NTSTATUS RtlStringCbVPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszFormat, va_list argList)
{
    return vprintf_cch(pszDest, cbDest / sizeof(WCHAR), pszFormat, 1, argList);
}

#define PRINTF_BODY(call) \
    va_list ap; \
    va_start(ap, pszFormat); \
    NTSTATUS st = call; \
    va_end(ap); \
    return st

NTSTATUS RtlStringCchPrintfA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszFormat, ...)
{
    PRINTF_BODY(vprintf_cch(pszDest, cchDest, pszFormat, 0, ap));
}
NTSTATUS RtlStringCchPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszFormat, ...)
{
    PRINTF_BODY(vprintf_cch(pszDest, cchDest, pszFormat, 1, ap));
}
NTSTATUS RtlStringCbPrintfA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszFormat, ...)
{
    PRINTF_BODY(vprintf_cch(pszDest, cbDest, pszFormat, 0, ap));
}
NTSTATUS RtlStringCbPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszFormat, ...)
{
    PRINTF_BODY(vprintf_cch(pszDest, cbDest / sizeof(WCHAR), pszFormat, 1, ap));
}

static NTSTATUS cch_length(const void *s, size_t cchMax, size_t *out, int wide)
{
    if (!s || cchMax == 0 || cchMax > NTSTRSAFE_MAX_CCH) {
        if (out)
            *out = 0;
        return STATUS_INVALID_PARAMETER;
    }
    size_t n = slen(s, wide, cchMax);
    if (n == cchMax) {
        if (out)
            *out = 0;
        return STATUS_INVALID_PARAMETER;
    }
    if (out)
        *out = n;
    return STATUS_SUCCESS;
}

NTSTATUS RtlStringCchLengthA(NTSTRSAFE_PCSTR psz, size_t cchMax, size_t *pcchLength)
{
    return cch_length(psz, cchMax, pcchLength, 0);
}
NTSTATUS RtlStringCchLengthW(NTSTRSAFE_PCWSTR psz, size_t cchMax, size_t *pcchLength)
{
    return cch_length(psz, cchMax, pcchLength, 1);
}
NTSTATUS RtlStringCbLengthA(NTSTRSAFE_PCSTR psz, size_t cbMax, size_t *pcbLength)
{
    return cch_length(psz, cbMax, pcbLength, 0);
}
NTSTATUS RtlStringCbLengthW(NTSTRSAFE_PCWSTR psz, size_t cbMax, size_t *pcbLength)
{
    NTSTATUS st = cch_length(psz, cbMax / sizeof(WCHAR), pcbLength, 1);
    if (pcbLength)
        *pcbLength *= sizeof(WCHAR);
    return st;
}

/* The Ex forms: the end pointer and remaining count, and the common flags (fill behind the
 * terminator, NULL or truncate on failure, NULL sources as empty). */
static NTSTATUS copy_ex(void *d, size_t cch, const void *s, void **end, size_t *remaining, ULONG flags, int wide)
{
    static const WCHAR empty[1] = { 0 };
    if (!s && (flags & STRSAFE_IGNORE_NULLS))
        s = empty;
    NTSTATUS st = cch_copy(d, cch, s, SIZE_MAX, wide);
    if (st == STATUS_INVALID_PARAMETER && (!d || !cch))
        return st;
    size_t n = slen(d, wide, cch);
    if (!NT_SUCCESS(st) && (flags & (STRSAFE_NULL_ON_FAILURE | STRSAFE_NO_TRUNCATION))) {
        put(d, wide, 0, 0);
        n = 0;
    }
    if (flags & STRSAFE_FILL_BEHIND_NULL)
        for (size_t i = n + 1; i < cch; i++)
            put(d, wide, i, (unsigned)(flags & 0xFF) * (wide ? 0x0101u : 1u));
    if (end)
        *end = wide ? (void *)((WCHAR *)d + n) : (void *)((char *)d + n);
    if (remaining)
        *remaining = cch - n;
    return st;
}

NTSTATUS RtlStringCchCopyExA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszSrc,
                             NTSTRSAFE_PSTR *ppszDestEnd, size_t *pcchRemaining, ULONG dwFlags)
{
    return copy_ex(pszDest, cchDest, pszSrc, (void **)ppszDestEnd, pcchRemaining, dwFlags, 0);
}

NTSTATUS RtlStringCchCopyExW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszSrc,
                             NTSTRSAFE_PWSTR *ppszDestEnd, size_t *pcchRemaining, ULONG dwFlags)
{
    return copy_ex(pszDest, cchDest, pszSrc, (void **)ppszDestEnd, pcchRemaining, dwFlags, 1);
}

NTSTATUS RtlStringCchPrintfExA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PSTR *ppszDestEnd,
                               size_t *pcchRemaining, ULONG dwFlags, NTSTRSAFE_PCSTR pszFormat, ...)
{
    va_list ap;
    va_start(ap, pszFormat);
    NTSTATUS st = vprintf_cch(pszDest, cchDest, pszFormat, 0, ap);
    va_end(ap);
    if (st == STATUS_INVALID_PARAMETER && (!pszDest || !cchDest))
        return st;
    size_t n = strlen(pszDest);
    if (!NT_SUCCESS(st) && (dwFlags & (STRSAFE_NULL_ON_FAILURE | STRSAFE_NO_TRUNCATION)))
        pszDest[n = 0] = 0;
    if (ppszDestEnd)
        *ppszDestEnd = pszDest + n;
    if (pcchRemaining)
        *pcchRemaining = cchDest - n;
    return st;
}

NTSTATUS RtlStringCchPrintfExW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PWSTR *ppszDestEnd,
                               size_t *pcchRemaining, ULONG dwFlags, NTSTRSAFE_PCWSTR pszFormat, ...)
{
    va_list ap;
    va_start(ap, pszFormat);
    NTSTATUS st = vprintf_cch(pszDest, cchDest, pszFormat, 1, ap);
    va_end(ap);
    if (st == STATUS_INVALID_PARAMETER && (!pszDest || !cchDest))
        return st;
    size_t n = wdk_wcslen(pszDest);
    if (!NT_SUCCESS(st) && (dwFlags & (STRSAFE_NULL_ON_FAILURE | STRSAFE_NO_TRUNCATION)))
        pszDest[n = 0] = 0;
    if (ppszDestEnd)
        *ppszDestEnd = pszDest + n;
    if (pcchRemaining)
        *pcchRemaining = cchDest - n;
    return st;
}

/* ---- UNICODE_STRING forms: counted, never terminated by the functions ---- */
NTSTATUS RtlStringCchCopyUnicodeString(NTSTRSAFE_PWSTR pszDest, size_t cchDest, PCUNICODE_STRING SourceString)
{
    if (!SourceString || (SourceString->Length & 1) || SourceString->Length > SourceString->MaximumLength ||
        (SourceString->Length && !SourceString->Buffer)) {
        if (pszDest && cchDest)
            pszDest[0] = 0;
        return STATUS_INVALID_PARAMETER;
    }
    return cch_copy(pszDest, cchDest, SourceString->Buffer ? (const void *)SourceString->Buffer : (const void *)L"",
                    SourceString->Length / sizeof(WCHAR), 1);
}

NTSTATUS RtlStringCbCopyUnicodeString(NTSTRSAFE_PWSTR pszDest, size_t cbDest, PCUNICODE_STRING SourceString)
{
    return RtlStringCchCopyUnicodeString(pszDest, cbDest / sizeof(WCHAR), SourceString);
}

NTSTATUS RtlUnicodeStringValidate(PCUNICODE_STRING SourceString)
{
    if (!SourceString || (SourceString->Length & 1) || (SourceString->MaximumLength & 1) ||
        SourceString->Length > SourceString->MaximumLength ||
        ((SourceString->Length || SourceString->MaximumLength) && !SourceString->Buffer))
        return STATUS_INVALID_PARAMETER;
    return STATUS_SUCCESS;
}

NTSTATUS RtlUnicodeStringInit(PUNICODE_STRING DestinationString, NTSTRSAFE_PCWSTR pszSrc)
{
    if (!DestinationString)
        return STATUS_INVALID_PARAMETER;
    size_t n = pszSrc ? wdk_wcslen(pszSrc) : 0;
    if (n > NTSTRSAFE_UNICODE_STRING_MAX_CCH) {
        DestinationString->Buffer = NULL;
        DestinationString->Length = DestinationString->MaximumLength = 0;
        return STATUS_INVALID_PARAMETER;
    }
    DestinationString->Buffer = (PWCH)pszSrc;
    DestinationString->Length = (USHORT)(n * sizeof(WCHAR));
    DestinationString->MaximumLength = pszSrc ? (USHORT)((n + 1 > NTSTRSAFE_UNICODE_STRING_MAX_CCH ? n : n + 1) *
                                                         sizeof(WCHAR))
                                              : 0;
    return STATUS_SUCCESS;
}

static NTSTATUS ustr_put(PUNICODE_STRING d, size_t at, const WCHAR *s, size_t n)
{
    if (RtlUnicodeStringValidate(d) != STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    size_t cap = d->MaximumLength / sizeof(WCHAR);
    size_t take = at + n <= cap ? n : (cap > at ? cap - at : 0);
    memmove(d->Buffer + at, s, take * sizeof(WCHAR));
    d->Length = (USHORT)((at + take) * sizeof(WCHAR));
    return take < n ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS;
}

NTSTATUS RtlUnicodeStringCopy(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString)
{
    if (RtlUnicodeStringValidate(SourceString) != STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    return ustr_put(DestinationString, 0, SourceString->Buffer, SourceString->Length / sizeof(WCHAR));
}

NTSTATUS RtlUnicodeStringCopyString(PUNICODE_STRING DestinationString, NTSTRSAFE_PCWSTR pszSrc)
{
    return ustr_put(DestinationString, 0, pszSrc, pszSrc ? wdk_wcslen(pszSrc) : 0);
}

NTSTATUS RtlUnicodeStringCat(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString)
{
    if (RtlUnicodeStringValidate(SourceString) != STATUS_SUCCESS)
        return STATUS_INVALID_PARAMETER;
    return ustr_put(DestinationString, DestinationString->Length / sizeof(WCHAR), SourceString->Buffer,
                    SourceString->Length / sizeof(WCHAR));
}

NTSTATUS RtlUnicodeStringCatString(PUNICODE_STRING DestinationString, NTSTRSAFE_PCWSTR pszSrc)
{
    return ustr_put(DestinationString, DestinationString->Length / sizeof(WCHAR), pszSrc,
                    pszSrc ? wdk_wcslen(pszSrc) : 0);
}

NTSTATUS RtlUnicodeStringVPrintf(PUNICODE_STRING DestinationString, NTSTRSAFE_PCWSTR pszFormat, va_list argList)
{
    if (RtlUnicodeStringValidate(DestinationString) != STATUS_SUCCESS || !pszFormat)
        return STATUS_INVALID_PARAMETER;
    size_t cap = DestinationString->MaximumLength / sizeof(WCHAR);
    WCHAR *buf = malloc((cap + 1) * sizeof(WCHAR));
    if (!buf)
        return STATUS_NO_MEMORY;
    size_t need = wdk_vformat(buf, cap + 1, 1, pszFormat, 1, argList);
    size_t n = need < cap ? need : cap;
    memcpy(DestinationString->Buffer, buf, n * sizeof(WCHAR));
    free(buf);
    DestinationString->Length = (USHORT)(n * sizeof(WCHAR));
    return need > cap ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS;
}

NTSTATUS RtlUnicodeStringPrintf(PUNICODE_STRING DestinationString, NTSTRSAFE_PCWSTR pszFormat, ...)
{
    PRINTF_BODY(RtlUnicodeStringVPrintf(DestinationString, pszFormat, ap));
}
