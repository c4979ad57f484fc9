/*
 * rdmapair_params.c - the drivers' parameters, read as a Windows driver reads them in
 * DriverEntry: the service key's Parameters subkey, opened with ZwOpenKey and read with
 * ZwQueryValueKey ("ZwQueryValueKey function (wdm.h)"). Numbers may be REG_DWORD or decimal
 * REG_SZ; addresses are REG_SZ in the usual IPv4 or IPv6 notation. PASSIVE_LEVEL throughout.
 */
#include "rdmapair.h"

#include <ip2string.h>
#include <ntstrsafe.h>

#define PAIR_VALUE_MAX 128   /* bytes of value data we accept */

typedef struct _PAIR_VALUE {
    KEY_VALUE_PARTIAL_INFORMATION Info;
    UCHAR                         Room[PAIR_VALUE_MAX];
} PAIR_VALUE;

static NTSTATUS PairQueryValue(HANDLE Key, PCWSTR Name, PAIR_VALUE *Value)
{
    UNICODE_STRING valueName;
    ULONG resultLength = 0;
    PAGED_CODE();
    RtlInitUnicodeString(&valueName, Name);
    return ZwQueryValueKey(Key, &valueName, KeyValuePartialInformation, &Value->Info, sizeof(*Value), &resultLength);
}

/* A REG_SZ value's characters, NUL-terminated, into Out (Cch characters). */
static NTSTATUS PairValueString(PKEY_VALUE_PARTIAL_INFORMATION Info, PWCHAR Out, size_t Cch)
{
    if (Info->Type != REG_SZ && Info->Type != REG_EXPAND_SZ)
        return STATUS_OBJECT_TYPE_MISMATCH;
    PCWCH chars = (PCWCH)Info->Data;
    size_t count = Info->DataLength / sizeof(WCHAR);
    while (count > 0 && chars[count - 1] == L'\0')   /* the stored terminator is not text */
        count--;
    return RtlStringCchCopyNW(Out, Cch, chars, count);
}

NTSTATUS PairOpenParameters(PUNICODE_STRING RegistryPath, PHANDLE Key)
{
    OBJECT_ATTRIBUTES attributes;
    UNICODE_STRING path;
    NTSTATUS status;

    PAGED_CODE();
    *Key = NULL;
    path.Length = 0;
    path.MaximumLength = (USHORT)(RegistryPath->Length + sizeof(L"\\Parameters"));
    path.Buffer = (PWCH)ExAllocatePool2(POOL_FLAG_PAGED, path.MaximumLength, PAIR_TAG);
    if (!path.Buffer)
        return STATUS_INSUFFICIENT_RESOURCES;
    RtlCopyUnicodeString(&path, RegistryPath);
    status = RtlAppendUnicodeToString(&path, L"\\Parameters");
    if (NT_SUCCESS(status)) {
        InitializeObjectAttributes(&attributes, &path, OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE, NULL, NULL);
        status = ZwOpenKey(Key, KEY_READ, &attributes);
        if (!NT_SUCCESS(status))
            DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "rdmapair: cannot open %wZ (0x%08X)\n", &path,
                       status);
    }
    ExFreePoolWithTag(path.Buffer, PAIR_TAG);
    return status;
}

NTSTATUS PairQueryUlong(HANDLE Key, PCWSTR Name, PULONG Out)
{
    PAIR_VALUE value;
    WCHAR text[16];
    NTSTATUS status = PairQueryValue(Key, Name, &value);
    if (!NT_SUCCESS(status))
        return status;
    if (value.Info.Type == REG_DWORD && value.Info.DataLength == sizeof(ULONG)) {
        RtlCopyMemory(Out, value.Info.Data, sizeof(ULONG));
        return STATUS_SUCCESS;
    }
    status = PairValueString(&value.Info, text, RTL_NUMBER_OF(text));
    if (!NT_SUCCESS(status))
        return status;
    ULONG number = 0;
    if (text[0] == L'\0')
        return STATUS_INVALID_PARAMETER;
    for (PWCHAR p = text; *p; p++) {
        if (*p < L'0' || *p > L'9' || number > 0x0FFFFFFF)
            return STATUS_INVALID_PARAMETER;
        number = number * 10 + (ULONG)(*p - L'0');
    }
    *Out = number;
    return STATUS_SUCCESS;
}

NTSTATUS PairQueryAddress(HANDLE Key, PCWSTR Name, USHORT Port, SOCKADDR_INET *Address)
{
    PAIR_VALUE value;
    WCHAR text[64];
    USHORT parsedPort = 0;
    ULONG scope = 0;
    NTSTATUS status = PairQueryValue(Key, Name, &value);
    if (NT_SUCCESS(status))
        status = PairValueString(&value.Info, text, RTL_NUMBER_OF(text));
    if (!NT_SUCCESS(status))
        return status;
    RtlZeroMemory(Address, sizeof(*Address));
    status = RtlIpv4StringToAddressExW(text, TRUE, &Address->Ipv4.sin_addr, &parsedPort);
    if (NT_SUCCESS(status)) {
        Address->Ipv4.sin_family = AF_INET;
        Address->Ipv4.sin_port = RtlUshortByteSwap(Port);
        return STATUS_SUCCESS;
    }
    status = RtlIpv6StringToAddressExW(text, &Address->Ipv6.sin6_addr, &scope, &parsedPort);
    if (!NT_SUCCESS(status))
        return status;
    Address->Ipv6.sin6_family = AF_INET6;
    Address->Ipv6.sin6_port = RtlUshortByteSwap(Port);
    Address->Ipv6.sin6_scope_id = scope;
    return STATUS_SUCCESS;
}

NTSTATUS PairReadParameters(PUNICODE_STRING RegistryPath, PPAIR_CONTEXT Ctx, BOOLEAN Client)
{
    HANDLE key;
    ULONG port = 0;
    NTSTATUS status;

    PAGED_CODE();
    status = PairOpenParameters(RegistryPath, &key);
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "pass --param IfIndex=.. --param Address=.. --param Port=..");
        return status;
    }
    status = PairQueryUlong(key, L"IfIndex", &Ctx->IfIndex);
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "parameter IfIndex missing or not a number (0x%08X)", status);
        goto out;
    }
    status = PairQueryUlong(key, L"Port", &port);
    if (NT_SUCCESS(status) && (port == 0 || port > 65535))
        status = STATUS_INVALID_PARAMETER;
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "parameter Port missing or out of range (0x%08X)", status);
        goto out;
    }
    status = PairQueryAddress(key, L"Address", (USHORT)port, &Ctx->Address);
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "parameter Address missing or not an IPv4/IPv6 address (0x%08X)", status);
        goto out;
    }
    if (Client) {
        /* The source address: LocalAddress, else the destination's (loopback). */
        status = PairQueryAddress(key, L"LocalAddress", 0, &Ctx->LocalAddress);
        if (status == STATUS_OBJECT_NAME_NOT_FOUND) {
            Ctx->LocalAddress = Ctx->Address;
            Ctx->LocalAddress.Ipv4.sin_port = 0;   /* the same offset in both families */
            status = STATUS_SUCCESS;
        }
        if (!NT_SUCCESS(status))
            PairLog(Ctx, "parameter LocalAddress is not an IPv4/IPv6 address (0x%08X)", status);
    }
out:
    ZwClose(key);
    return status;
}
