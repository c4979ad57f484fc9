/*
 * rtl_memory.c - the Rtl memory helpers that are functions rather than macros over the C
 * library ("RtlCompareMemory function (wdm.h)"): RtlCompareMemory returns the number of leading
 * bytes that match, not a memcmp-style sign.
 */
#include "wdk_internal.h"

SIZE_T RtlCompareMemory(const VOID *Source1, const VOID *Source2, SIZE_T Length)
{
    const unsigned char *a = Source1, *b = Source2;
    SIZE_T i = 0;
    while (i < Length && a[i] == b[i])
        i++;
    return i;
}

SIZE_T RtlCompareMemoryUlong(PVOID Source, SIZE_T Length, ULONG Pattern)
{
    const unsigned char *p = Source;
    SIZE_T i = 0;
    for (; i + 4 <= Length; i += 4) {
        ULONG v;
        memcpy(&v, p + i, 4);
        if (v != Pattern)
            break;
    }
    return i;
}

VOID RtlFillMemoryUlong(PVOID Destination, SIZE_T Length, ULONG Pattern)
{
    unsigned char *p = Destination;
    for (SIZE_T i = 0; i + 4 <= Length; i += 4)
        memcpy(p + i, &Pattern, 4);
}

/* Zeroing the compiler may not drop (RtlSecureZeroMemory's promise). */
PVOID wdk_secure_zero(PVOID Destination, SIZE_T Length)
{
    volatile unsigned char *p = Destination;
    while (Length--)
        *p++ = 0;
    return Destination;
}

/* The documented generator: a linear congruential step on *Seed, 31-bit results. */
ULONG RtlRandomEx(PULONG Seed)
{
    *Seed = (*Seed * 0x7fffffedu + 0x7fffffc3u) % 0x7fffffffu;
    return *Seed;
}
