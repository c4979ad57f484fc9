/*
 * wsk.h - Winsock Kernel as the OpenNDK kernel-API kit provides it: registration, the provider
 * NPI and the client control call, with the WDK's names, layouts and values.
 *
 * What is implemented: WskRegister, WskDeregister, WskCaptureProviderNPI, WskReleaseProviderNPI,
 * WskQueryProviderCharacteristics, and WskControlClient with WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH
 * (<wskndk.h>), whose WskOpenNdkAdapter opens an NDK adapter through the OpenNDK runtime. The
 * socket half of WSK (WskSocket, WskSocketConnect, WskGetAddressInfo, WskGetNameInfo and the
 * other client control codes) is declared so that drivers compile, and answers
 * STATUS_NOT_SUPPORTED with a one-line message: the kit implements WSK only for its NDK extension
 * (docs/porting.md). Shapes follow Microsoft's pages "WskRegister function (wsk.h)",
 * "WSK_PROVIDER_DISPATCH structure (wsk.h)", "PFN_WSK_SOCKET callback function (wsk.h)" and their
 * siblings.
 */
#ifndef _WSK_
#define _WSK_

#include "wdm.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef WSKAPI
#define WSKAPI NTAPI
#endif

/* A WSK version: major in the high byte, minor in the low byte (1.0 = 0x0100). */
#define MAKE_WSK_VERSION(Mj, Mn) ((USHORT)((Mj) << 8) | (USHORT)((Mn) & 0xff))
#define WSK_MAJOR_VERSION(V) ((UCHAR)((V) >> 8))
#define WSK_MINOR_VERSION(V) ((UCHAR)(V))

/* WskCaptureProviderNPI's WaitTimeout, in milliseconds. */
#define WSK_NO_WAIT       0
#define WSK_INFINITE_WAIT 0xffffffff

/* Socket categories (WskSocket's Flags) and per-call flags. */
#define WSK_FLAG_BASIC_SOCKET      0x00000000
#define WSK_FLAG_LISTEN_SOCKET     0x00000001
#define WSK_FLAG_CONNECTION_SOCKET 0x00000002
#define WSK_FLAG_DATAGRAM_SOCKET   0x00000004
#define WSK_FLAG_STREAM_SOCKET     0x00000008
#define WSK_FLAG_ABORTIVE          0x00000001
#define WSK_FLAG_RELEASE_ASAP      0x00000002
#define WSK_FLAG_ENTIRE_MESSAGE    0x00000004
#define WSK_FLAG_AT_DISPATCH_LEVEL 0x00000008

/* Client-level control codes for WskControlClient ("WSK Client Control Operations"). The kit
 * answers WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH (<wskndk.h>) and refuses these. */
#define WSK_TRANSPORT_LIST_QUERY       2
#define WSK_TRANSPORT_LIST_CHANGE      3
#define WSK_CACHE_SD                   4
#define WSK_RELEASE_SD                 5
#define WSK_TDI_DEVICENAME_MAPPING     6
#define WSK_SET_STATIC_EVENT_CALLBACKS 7
#define WSK_TDI_BEHAVIOR               8

/* The client handle the provider NPI carries; <wskndk.h> declares the same type. */
#ifndef OPENNDK_PWSK_CLIENT_DEFINED
#define OPENNDK_PWSK_CLIENT_DEFINED
typedef PVOID PWSK_CLIENT;
#endif

/* ---- sockets (declared for compilation only; the kit creates none) ---- */
typedef struct _WSK_SOCKET {
    const VOID *Dispatch;
} WSK_SOCKET, *PWSK_SOCKET;

typedef struct _WSK_BUF {
    PMDL   Mdl;
    ULONG  Offset;
    SIZE_T Length;
} WSK_BUF, *PWSK_BUF;

typedef struct _WSK_DATA_INDICATION {
    struct _WSK_DATA_INDICATION *Next;
    WSK_BUF                      Buffer;
} WSK_DATA_INDICATION, *PWSK_DATA_INDICATION;

typedef NTSTATUS (WSKAPI *PFN_WSK_RECEIVE_EVENT)(PVOID SocketContext, ULONG Flags,
                                                 PWSK_DATA_INDICATION DataIndication, SIZE_T BytesIndicated,
                                                 SIZE_T *BytesAccepted);
typedef NTSTATUS (WSKAPI *PFN_WSK_DISCONNECT_EVENT)(PVOID SocketContext, ULONG Flags);
typedef NTSTATUS (WSKAPI *PFN_WSK_SEND_BACKLOG_EVENT)(PVOID SocketContext, SIZE_T IdealBacklogSize);

typedef struct _WSK_CLIENT_CONNECTION_DISPATCH {
    PFN_WSK_RECEIVE_EVENT      WskReceiveEvent;
    PFN_WSK_DISCONNECT_EVENT   WskDisconnectEvent;
    PFN_WSK_SEND_BACKLOG_EVENT WskSendBacklogEvent;
} WSK_CLIENT_CONNECTION_DISPATCH, *PWSK_CLIENT_CONNECTION_DISPATCH;

/* ws2def.h's ADDRINFOEXW, for WskGetAddressInfo's signature. */
typedef struct addrinfoexW {
    int                 ai_flags;
    int                 ai_family;
    int                 ai_socktype;
    int                 ai_protocol;
    size_t              ai_addrlen;
    WCHAR              *ai_canonname;
    struct sockaddr    *ai_addr;
    void               *ai_blob;
    size_t              ai_bloblen;
    GUID               *ai_provider;
    struct addrinfoexW *ai_next;
} ADDRINFOEXW, *PADDRINFOEXW;

/* ---- the client side of registration ---- */
typedef NTSTATUS (WSKAPI *PFN_WSK_CLIENT_EVENT)(PVOID ClientContext, ULONG EventType, PVOID Information,
                                                SIZE_T InformationLength);

typedef struct _WSK_CLIENT_DISPATCH {
    USHORT               Version;
    USHORT               Reserved;
    PFN_WSK_CLIENT_EVENT WskClientEvent;
} WSK_CLIENT_DISPATCH, *PWSK_CLIENT_DISPATCH;

typedef struct _WSK_CLIENT_NPI {
    PVOID                      ClientContext;
    const WSK_CLIENT_DISPATCH *Dispatch;
} WSK_CLIENT_NPI, *PWSK_CLIENT_NPI;

/* Opaque to the driver, which only provides the storage; the kit keeps a pointer to its own
 * record in ReservedRegistrationContext. Must stay allocated until WskDeregister returns. */
typedef struct _WSK_REGISTRATION {
    ULONGLONG  ReservedRegistrationState;
    PVOID      ReservedRegistrationContext;
    KSPIN_LOCK ReservedRegistrationLock;
} WSK_REGISTRATION, *PWSK_REGISTRATION;

/* ---- the provider side ---- */
typedef NTSTATUS (WSKAPI *PFN_WSK_SOCKET)(PWSK_CLIENT Client, ADDRESS_FAMILY AddressFamily, USHORT SocketType,
                                          ULONG Protocol, ULONG Flags, PVOID SocketContext, const VOID *Dispatch,
                                          PEPROCESS OwningProcess, PETHREAD OwningThread,
                                          PSECURITY_DESCRIPTOR SecurityDescriptor, PIRP Irp);

typedef NTSTATUS (WSKAPI *PFN_WSK_SOCKET_CONNECT)(PWSK_CLIENT Client, USHORT SocketType, ULONG Protocol,
                                                  PSOCKADDR LocalAddress, PSOCKADDR RemoteAddress, ULONG Flags,
                                                  PVOID SocketContext,
                                                  const WSK_CLIENT_CONNECTION_DISPATCH *Dispatch,
                                                  PEPROCESS OwningProcess, PETHREAD OwningThread,
                                                  PSECURITY_DESCRIPTOR SecurityDescriptor, PIRP Irp);

typedef NTSTATUS (WSKAPI *PFN_WSK_CONTROL_CLIENT)(PWSK_CLIENT Client, ULONG ControlCode, SIZE_T InputSize,
                                                  PVOID InputBuffer, SIZE_T OutputSize, PVOID OutputBuffer,
                                                  SIZE_T *OutputSizeReturned, PIRP Irp);

typedef NTSTATUS (WSKAPI *PFN_WSK_GET_ADDRESS_INFO)(PWSK_CLIENT Client, PUNICODE_STRING NodeName,
                                                    PUNICODE_STRING ServiceName, ULONG NameSpace, GUID *Provider,
                                                    PADDRINFOEXW Hints, PADDRINFOEXW *Result,
                                                    PEPROCESS OwningProcess, PETHREAD OwningThread, PIRP Irp);

typedef VOID (WSKAPI *PFN_WSK_FREE_ADDRESS_INFO)(PWSK_CLIENT Client, PADDRINFOEXW AddrInfo);

typedef NTSTATUS (WSKAPI *PFN_WSK_GET_NAME_INFO)(PWSK_CLIENT Client, PSOCKADDR SockAddr, ULONG SockAddrLength,
                                                 PUNICODE_STRING NodeName, PUNICODE_STRING ServiceName,
                                                 ULONG Flags, PEPROCESS OwningProcess, PETHREAD OwningThread,
                                                 PIRP Irp);

typedef struct _WSK_PROVIDER_DISPATCH {
    USHORT                    Version;
    USHORT                    Reserved;
    PFN_WSK_SOCKET            WskSocket;
    PFN_WSK_SOCKET_CONNECT    WskSocketConnect;
    PFN_WSK_CONTROL_CLIENT    WskControlClient;
    PFN_WSK_GET_ADDRESS_INFO  WskGetAddressInfo;
    PFN_WSK_FREE_ADDRESS_INFO WskFreeAddressInfo;
    PFN_WSK_GET_NAME_INFO     WskGetNameInfo;
} WSK_PROVIDER_DISPATCH, *PWSK_PROVIDER_DISPATCH;

typedef struct _WSK_PROVIDER_NPI {
    PWSK_CLIENT                  Client;
    const WSK_PROVIDER_DISPATCH *Dispatch;
} WSK_PROVIDER_NPI, *PWSK_PROVIDER_NPI;

typedef struct _WSK_PROVIDER_CHARACTERISTICS {
    USHORT HighestVersion;
    USHORT LowestVersion;
} WSK_PROVIDER_CHARACTERISTICS, *PWSK_PROVIDER_CHARACTERISTICS;

/* ---- registration (PASSIVE_LEVEL unless noted) ---- */
NTSTATUS WSKAPI WskRegister(PWSK_CLIENT_NPI WskClientNpi, PWSK_REGISTRATION WskRegistration);
/* PASSIVE_LEVEL, or up to DISPATCH_LEVEL with WSK_NO_WAIT. */
NTSTATUS WSKAPI WskCaptureProviderNPI(PWSK_REGISTRATION WskRegistration, ULONG WaitTimeout,
                                      PWSK_PROVIDER_NPI WskProviderNpi);
/* Up to DISPATCH_LEVEL. */
VOID WSKAPI WskReleaseProviderNPI(PWSK_REGISTRATION WskRegistration);
NTSTATUS WSKAPI WskQueryProviderCharacteristics(PWSK_REGISTRATION WskRegistration,
                                                PWSK_PROVIDER_CHARACTERISTICS WskProviderCharacteristics);
/* Blocks until every capture is released. */
VOID WSKAPI WskDeregister(PWSK_REGISTRATION WskRegistration);

#ifdef __cplusplus
}
#endif

#endif /* _WSK_ */
