/*
 * wsk_unsupported.c - the socket half of WSK_PROVIDER_DISPATCH. The kit implements Winsock
 * Kernel only as the way to the NDK extension; a driver that asks for a TCP/IP socket, a name
 * lookup or an address conversion gets one clear line on stderr and STATUS_NOT_SUPPORTED (in the
 * IRP too, completed, when it passed one), never a crash or a hang (docs/porting.md, "What is
 * not provided").
 */
#include "wsk_internal.h"

#include "wdk_internal.h"

/* The common answer. Context: <= DISPATCH (the WSK calls allow it); never blocks. */
static NTSTATUS wsk_refuse(const char *function, PIRP Irp)
{
    wdk_unsupported(function, "the kit implements Winsock Kernel only for its NDK extension (WskControlClient with "
                              "WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH); it has no TCP/IP socket layer");
    if (Irp) {
        Irp->IoStatus.Status = STATUS_NOT_SUPPORTED;
        Irp->IoStatus.Information = 0;
        IoCompleteRequest(Irp, IO_NO_INCREMENT);
    }
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS WSKAPI wdk_wsk_socket(PWSK_CLIENT Client, ADDRESS_FAMILY AddressFamily, USHORT SocketType, ULONG Protocol,
                               ULONG Flags, PVOID SocketContext, const VOID *Dispatch, PEPROCESS OwningProcess,
                               PETHREAD OwningThread, PSECURITY_DESCRIPTOR SecurityDescriptor, PIRP Irp)
{
    return wsk_refuse("WskSocket", Irp);
}

NTSTATUS WSKAPI wdk_wsk_socket_connect(PWSK_CLIENT Client, USHORT SocketType, ULONG Protocol, PSOCKADDR LocalAddress,
                                       PSOCKADDR RemoteAddress, ULONG Flags, PVOID SocketContext,
                                       const WSK_CLIENT_CONNECTION_DISPATCH *Dispatch, PEPROCESS OwningProcess,
                                       PETHREAD OwningThread, PSECURITY_DESCRIPTOR SecurityDescriptor, PIRP Irp)
{
    return wsk_refuse("WskSocketConnect", Irp);
}

NTSTATUS WSKAPI wdk_wsk_get_address_info(PWSK_CLIENT Client, PUNICODE_STRING NodeName, PUNICODE_STRING ServiceName,
                                         ULONG NameSpace, GUID *Provider, PADDRINFOEXW Hints, PADDRINFOEXW *Result,
                                         PEPROCESS OwningProcess, PETHREAD OwningThread, PIRP Irp)
{
    if (Result)
        *Result = NULL;
    return wsk_refuse("WskGetAddressInfo", Irp);
}

VOID WSKAPI wdk_wsk_free_address_info(PWSK_CLIENT Client, PADDRINFOEXW AddrInfo)
{
    /* Nothing the kit returned can be freed here: WskGetAddressInfo never succeeds. */
    if (AddrInfo)
        wsk_refuse("WskFreeAddressInfo", NULL);
}

NTSTATUS WSKAPI wdk_wsk_get_name_info(PWSK_CLIENT Client, PSOCKADDR SockAddr, ULONG SockAddrLength,
                                      PUNICODE_STRING NodeName, PUNICODE_STRING ServiceName, ULONG Flags,
                                      PEPROCESS OwningProcess, PETHREAD OwningThread, PIRP Irp)
{
    return wsk_refuse("WskGetNameInfo", Irp);
}
