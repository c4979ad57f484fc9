/*
 * sysinfo.c - what the driver learns about "the system" ("RtlGetVersion function (wdm.h)"):
 * the kit answers as Windows 10 / Server 2022 (10.0.20348), the NDK 2.x era it emulates.
 */
#include "wdk_internal.h"

#define KIT_MAJOR 10
#define KIT_MINOR 0
#define KIT_BUILD 20348

NTSTATUS RtlGetVersion(PRTL_OSVERSIONINFOW lpVersionInformation)
{
    ULONG size = lpVersionInformation->dwOSVersionInfoSize;
    if (size != sizeof(RTL_OSVERSIONINFOW) && size != sizeof(RTL_OSVERSIONINFOEXW))
        return STATUS_INVALID_PARAMETER;
    memset((char *)lpVersionInformation + sizeof(ULONG), 0, size - sizeof(ULONG));
    lpVersionInformation->dwMajorVersion = KIT_MAJOR;
    lpVersionInformation->dwMinorVersion = KIT_MINOR;
    lpVersionInformation->dwBuildNumber = KIT_BUILD;
    lpVersionInformation->dwPlatformId = 2;   /* VER_PLATFORM_WIN32_NT */
    if (size == sizeof(RTL_OSVERSIONINFOEXW))
        ((PRTL_OSVERSIONINFOEXW)lpVersionInformation)->wProductType = 3;   /* VER_NT_SERVER */
    return STATUS_SUCCESS;
}

BOOLEAN PsGetVersion(PULONG MajorVersion, PULONG MinorVersion, PULONG BuildNumber, PUNICODE_STRING CSDVersion)
{
    if (MajorVersion)
        *MajorVersion = KIT_MAJOR;
    if (MinorVersion)
        *MinorVersion = KIT_MINOR;
    if (BuildNumber)
        *BuildNumber = KIT_BUILD;
    if (CSDVersion)
        CSDVersion->Length = 0;
    return FALSE;   /* a free build */
}
