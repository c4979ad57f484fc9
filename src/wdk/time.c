/*
 * time.c - clocks ("KeQuerySystemTimePrecise function (wdm.h)", "KeQueryInterruptTime function
 * (wdm.h)", "KeQueryPerformanceCounter function (wdm.h)"). On x64 the WDK reads the shared user
 * data page for some of these; the kit provides them as functions with the same call shapes.
 * System time: 100 ns since 1601-01-01 UTC (CLOCK_REALTIME). Interrupt time: 100 ns since boot
 * including suspend (CLOCK_BOOTTIME); unbiased: CLOCK_MONOTONIC. Performance counter: 10 MHz
 * (100 ns ticks) from CLOCK_MONOTONIC. A tick is 15.625 ms, as on a default Windows system.
 */
#include <time.h>
#include "wdk_internal.h"

#define TIME_INCREMENT 156250   /* 100 ns units per clock tick */

static ULONGLONG clock_100ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (ULONGLONG)ts.tv_sec * 10000000 + (ULONGLONG)ts.tv_nsec / 100;
}

VOID KeQuerySystemTime(PLARGE_INTEGER CurrentTime)
{
    CurrentTime->QuadPart = wdk_system_time();
}

VOID KeQuerySystemTimePrecise(PLARGE_INTEGER CurrentTime)
{
    CurrentTime->QuadPart = wdk_system_time();
}

ULONGLONG KeQueryInterruptTime(VOID)
{
    return clock_100ns(CLOCK_BOOTTIME);
}

ULONG64 KeQueryInterruptTimePrecise(PULONG64 QpcTimeStamp)
{
    if (QpcTimeStamp)
        *QpcTimeStamp = clock_100ns(CLOCK_MONOTONIC);
    return clock_100ns(CLOCK_BOOTTIME);
}

ULONGLONG KeQueryUnbiasedInterruptTime(VOID)
{
    return clock_100ns(CLOCK_MONOTONIC);
}

ULONG KeQueryTimeIncrement(VOID)
{
    return TIME_INCREMENT;
}

VOID KeQueryTickCount(PLARGE_INTEGER CurrentCount)
{
    CurrentCount->QuadPart = (LONGLONG)(clock_100ns(CLOCK_BOOTTIME) / TIME_INCREMENT);
}

LARGE_INTEGER KeQueryPerformanceCounter(PLARGE_INTEGER PerformanceFrequency)
{
    LARGE_INTEGER v;
    if (PerformanceFrequency)
        PerformanceFrequency->QuadPart = 10000000;
    v.QuadPart = (LONGLONG)clock_100ns(CLOCK_MONOTONIC);
    return v;
}

/* Calendar conversion of a system time (UTC), weekday 0 = Sunday. */
VOID RtlTimeToTimeFields(PLARGE_INTEGER Time, PTIME_FIELDS TimeFields)
{
    LONGLONG t = Time->QuadPart;
    time_t secs = (time_t)(t / 10000000 - 11644473600LL);
    struct tm tm;
    gmtime_r(&secs, &tm);
    TimeFields->Year = (SHORT)(tm.tm_year + 1900);
    TimeFields->Month = (SHORT)(tm.tm_mon + 1);
    TimeFields->Day = (SHORT)tm.tm_mday;
    TimeFields->Hour = (SHORT)tm.tm_hour;
    TimeFields->Minute = (SHORT)tm.tm_min;
    TimeFields->Second = (SHORT)tm.tm_sec;
    TimeFields->Milliseconds = (SHORT)((t / 10000) % 1000);
    TimeFields->Weekday = (SHORT)tm.tm_wday;
}

BOOLEAN RtlTimeFieldsToTime(PTIME_FIELDS TimeFields, PLARGE_INTEGER Time)
{
    struct tm tm = { 0 };
    tm.tm_year = TimeFields->Year - 1900;
    tm.tm_mon = TimeFields->Month - 1;
    tm.tm_mday = TimeFields->Day;
    tm.tm_hour = TimeFields->Hour;
    tm.tm_min = TimeFields->Minute;
    tm.tm_sec = TimeFields->Second;
    if (TimeFields->Month < 1 || TimeFields->Month > 12 || TimeFields->Day < 1 || TimeFields->Day > 31 ||
        TimeFields->Year < 1601)
        return FALSE;
    time_t secs = timegm(&tm);
    Time->QuadPart = ((LONGLONG)secs + 11644473600LL) * 10000000 + (LONGLONG)TimeFields->Milliseconds * 10000;
    return TRUE;
}

/* The kit's local time zone is UTC (a test bench has no reason to differ per machine). */
VOID ExSystemTimeToLocalTime(PLARGE_INTEGER SystemTime, PLARGE_INTEGER LocalTime)
{
    LocalTime->QuadPart = SystemTime->QuadPart;
}

VOID ExLocalTimeToSystemTime(PLARGE_INTEGER LocalTime, PLARGE_INTEGER SystemTime)
{
    SystemTime->QuadPart = LocalTime->QuadPart;
}
