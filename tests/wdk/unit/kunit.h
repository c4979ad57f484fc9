/* kunit.h - checks for the kit's unit-test drivers: a failed CHECK prints the line and makes
 * the enclosing NTSTATUS function (and so DriverEntry) fail, which ndkdrv turns into exit 1. */
#ifndef KUNIT_H
#define KUNIT_H

#include <ntddk.h>
#include <ntstrsafe.h>

#define CHECK(cond) \
    do { \
        if (!(cond)) { \
            DbgPrint("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            return STATUS_UNSUCCESSFUL; \
        } \
    } while (0)
#define RUN(fn) \
    do { \
        NTSTATUS st_ = fn(); \
        if (!NT_SUCCESS(st_)) \
            return st_; \
        DbgPrint("PASS %s\n", #fn); \
    } while (0)

/* Reads the string parameter Name of the driver's Parameters key into Buffer. */
static inline NTSTATUS KunitReadString(PUNICODE_STRING RegistryPath, PCWSTR Name, PWCHAR Buffer, ULONG Chars)
{
    RTL_QUERY_REGISTRY_TABLE table[2];
    UNICODE_STRING value;
    WCHAR path[256];
    NTSTATUS status;
    RtlZeroMemory(table, sizeof(table));
    RtlZeroMemory(Buffer, Chars * sizeof(WCHAR));
    value.Buffer = Buffer;
    value.Length = 0;
    value.MaximumLength = (USHORT)((Chars - 1) * sizeof(WCHAR));
    table[0].Flags = RTL_QUERY_REGISTRY_DIRECT | RTL_QUERY_REGISTRY_REQUIRED;
    table[0].Name = (PWSTR)Name;
    table[0].EntryContext = &value;
    status = RtlStringCbCopyUnicodeString(path, sizeof(path), RegistryPath);
    if (!NT_SUCCESS(status))
        return status;
    status = RtlStringCbCatW(path, sizeof(path), L"\\Parameters");
    if (!NT_SUCCESS(status))
        return status;
    return RtlQueryRegistryValues(RTL_REGISTRY_ABSOLUTE, path, table, NULL, NULL);
}

#endif
