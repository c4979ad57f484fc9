/*
 * dbgprint.c - DbgPrint, DbgPrintEx, vDbgPrintEx, KdPrint ("DbgPrintEx function (wdm.h)"): one
 * line on standard error per call, "<driver>: <message>", flushed at once (scripts wait for a
 * driver's lines). Windows shows only DPFLTR_ERROR_LEVEL by default; the kit is a test bench and
 * shows every level up to NDK_WDK_DBGPRINT_LEVEL (default 31, everything). The Windows
 * conversions (%wZ, %ws, %I64x ...) are understood (format.c); at most 512 bytes per call, as on
 * Windows.
 */
#include <stdio.h>
#include <stdlib.h>
#include "wdk_internal.h"

char wdk_driver_name[64] = "driver";

static unsigned max_level(void)
{
    const char *v = getenv("NDK_WDK_DBGPRINT_LEVEL");
    return v && *v ? (unsigned)strtoul(v, NULL, 0) : 31;
}

/* Level 0-31 is one bit, as DbgPrintEx's filter reads it; a larger value is a mask. */
static int level_shown(ULONG Level)
{
    unsigned max = max_level();
    if (Level > 31)
        return (Level & ((max >= 31) ? 0xffffffffu : ((1u << (max + 1)) - 1))) != 0;
    return Level <= max;
}

static ULONG emit(PCCH Prefix, PCCH Format, va_list ap)
{
    char msg[513];
    wdk_vformat(msg, sizeof msg, 0, Format, 0, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = 0;
    flockfile(stderr);
    fprintf(stderr, "%s: %s%s\n", wdk_driver_name, Prefix ? Prefix : "", msg);
    fflush(stderr);
    funlockfile(stderr);
    return STATUS_SUCCESS;
}

ULONG DbgPrint(PCSTR Format, ...)
{
    va_list ap;
    va_start(ap, Format);
    ULONG r = emit(NULL, Format, ap);
    va_end(ap);
    return r;
}

ULONG DbgPrintEx(ULONG ComponentId, ULONG Level, PCSTR Format, ...)
{
    if (!level_shown(Level))
        return STATUS_SUCCESS;
    va_list ap;
    va_start(ap, Format);
    ULONG r = emit(NULL, Format, ap);
    va_end(ap);
    return r;
}

ULONG vDbgPrintEx(ULONG ComponentId, ULONG Level, PCCH Format, va_list arglist)
{
    if (!level_shown(Level))
        return STATUS_SUCCESS;
    return emit(NULL, Format, arglist);
}

ULONG vDbgPrintExWithPrefix(PCCH Prefix, ULONG ComponentId, ULONG Level, PCCH Format, va_list arglist)
{
    if (!level_shown(Level))
        return STATUS_SUCCESS;
    return emit(Prefix, Format, arglist);
}
