/*
 * ndk/provider.h - the contract between the OpenNDK runtime (our NDIS + PnP manager) and a
 * provider module (our NDK-capable miniport).
 *
 * A provider is a shared object in the provider directory that exports one function,
 * NdkProviderEntry: the analogue of DriverEntry calling NdisMRegisterMiniportDriver and, from
 * MiniportSetOptions, NdisSetOptionalHandlers with NDIS_NDK_PROVIDER_CHARACTERISTICS
 * (NDKPI reference §6.2). From then on the runtime drives it like NDIS drives a miniport:
 *
 *   NdkProviderEntry            once, at load; fills NDK_MINIPORT_CHARACTERISTICS
 *   InitializeHandler           once per network interface the runtime offers (MiniportInitializeEx);
 *                               the provider binds (returns its adapter context and NDK attributes)
 *                               or declines with NDIS_STATUS_NOT_SUPPORTED
 *   InterfaceChangeHandler      the interface's addresses, MTU or flags changed
 *   OidRequestHandler           OID_NDK_SET_STATE / STATISTICS / CONNECTIONS / LOCAL_ENDPOINTS
 *   NdkCharacteristics.Open/CloseNDKAdapterHandler   consumers open and close NDK_ADAPTER instances
 *   HaltHandler                 the interface went away (or the runtime closes); every NDK_ADAPTER
 *                               instance on it has been closed before this is called
 *   UnloadHandler               once, before dlclose
 *
 * Every handler may block (PASSIVE_LEVEL) unless stated otherwise. The runtime never calls two
 * handlers for the same adapter concurrently, except the open/close adapter handlers, which
 * consumers may call from any thread.
 */
#ifndef NDK_PROVIDER_H
#define NDK_PROVIDER_H

#include "../ndisndk.h"
#include "sysview.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NDK_PROVIDER_ABI_VERSION  1
#define NDK_PROVIDER_ENTRY_SYMBOL "NdkProviderEntry"
#define NDK_PROVIDER_NAME_MAX     32
#define NDK_PROVIDER_IFNAME_MAX   16

/* Log levels for NDK_RUNTIME_SERVICES.Log. */
#define NDK_LOG_ERROR   0
#define NDK_LOG_WARNING 1
#define NDK_LOG_INFO    2
#define NDK_LOG_DEBUG   3

/* One network interface as the runtime offers it to a provider. Addresses carry port 0. */
typedef struct _NDK_PROVIDER_INTERFACE {
    ULONG                IfIndex;
    char                 IfName[NDK_PROVIDER_IFNAME_MAX];
    ULONG                Mtu;
    BOOLEAN              IsLoopback;
    BOOLEAN              IsUp;
    ULONG                AddressCount;
    CONST SOCKADDR_INET *Addresses;   /* valid only during the handler call */
} NDK_PROVIDER_INTERFACE;

/* NDIS OID request, reduced to what the NDK OIDs use. */
typedef struct _NDK_OID_REQUEST {
    NDIS_OID Oid;
    BOOLEAN  IsSet;                   /* TRUE: set request; FALSE: query */
    PVOID    InformationBuffer;
    ULONG    InformationBufferLength;
    ULONG    BytesWritten;            /* out (query) */
    ULONG    BytesRead;               /* out (set) */
    ULONG    BytesNeeded;             /* out, with NDIS_STATUS_BUFFER_TOO_SHORT */
} NDK_OID_REQUEST;

/* What the runtime offers providers (the NDIS functions a miniport calls). All are thread-safe. */
typedef struct _NDK_RUNTIME_SERVICES {
    ULONG Size;
    ULONG AbiVersion;
    /* NdisMNetPnPEvent: announce NetEventNDKEnable / NetEventNDKDisable on an adapter. As on
     * Windows, never call it from inside OidRequestHandler; call it from a provider thread. It
     * returns at once; the runtime tells consumers on its own thread. */
    VOID (*NetPnPEvent)(NDIS_HANDLE MiniportAdapterHandle, ULONG NetEvent);
    /* TRUE when Address (port ignored) is now assigned to the adapter's interface. Never blocks. */
    BOOLEAN (*AdapterHasAddress)(NDIS_HANDLE MiniportAdapterHandle, const struct sockaddr *Address);
    /* Logs a line through the runtime's logger. Never blocks for long. */
    VOID (*Log)(NDIS_HANDLE DriverHandle, int Level, const char *Format, ...)
        __attribute__((format(printf, 3, 4)));
    /* Reads a configuration value for this provider ("iwarp.crc" in the config file, or the
     * environment variable NDK_IWARP_CRC); NULL when unset. The string lives until unload. */
    const char *(*GetConfig)(NDIS_HANDLE DriverHandle, const char *Key);
    /* The system view (ndk/sysview.h, ndk-sysview(7)); present when Size reaches them.
     * SysviewAlloc: a zeroed record of Type (enum ndk_sv_type) for one object of the adapter,
     * with id, adapter and created_ns set. When the registry is off or full the record is
     * private memory no reader sees, so callers need no checks; NULL only when out of memory.
     * Takes a runtime lock briefly: call it where the object is created, never on the data
     * path. Any thread. */
    struct ndk_sv_rec *(*SysviewAlloc)(NDIS_HANDLE MiniportAdapterHandle, uint16_t Type);
    /* Gives the record back when its object is gone (NULL is ignored). Any thread. */
    VOID (*SysviewFree)(NDIS_HANDLE MiniportAdapterHandle, struct ndk_sv_rec *Record);
    /* The adapter's own record (NDK_SV_ADAPTER), which the runtime fills and keeps until
     * HaltHandler returns; a provider that keeps its NDK counters in u.adapter.counters sets
     * NDK_SV_ADAPTER_COUNTERS in u.adapter.flags. Never NULL from InitializeHandler on. */
    struct ndk_sv_rec *(*SysviewAdapter)(NDIS_HANDLE MiniportAdapterHandle);
} NDK_RUNTIME_SERVICES;

typedef NDIS_STATUS (*NDK_MINIPORT_INITIALIZE_HANDLER)(
    NDIS_HANDLE DriverContext, NDIS_HANDLE MiniportAdapterHandle, CONST NDK_PROVIDER_INTERFACE *Interface,
    NDIS_HANDLE *MiniportAdapterContext, NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES *NdkAttributes);
typedef VOID (*NDK_MINIPORT_INTERFACE_CHANGE_HANDLER)(
    NDIS_HANDLE MiniportAdapterContext, CONST NDK_PROVIDER_INTERFACE *Interface);
typedef VOID (*NDK_MINIPORT_HALT_HANDLER)(NDIS_HANDLE MiniportAdapterContext);
typedef NDIS_STATUS (*NDK_MINIPORT_OID_REQUEST_HANDLER)(NDIS_HANDLE MiniportAdapterContext, NDK_OID_REQUEST *Request);
typedef VOID (*NDK_MINIPORT_UNLOAD_HANDLER)(NDIS_HANDLE DriverContext);

typedef struct _NDK_MINIPORT_CHARACTERISTICS {
    ULONG       Size;                 /* sizeof(NDK_MINIPORT_CHARACTERISTICS), set by the runtime */
    ULONG       AbiVersion;           /* set by the provider to NDK_PROVIDER_ABI_VERSION */
    char        Name[NDK_PROVIDER_NAME_MAX];
    char        Description[96];
    NDK_MINIPORT_INITIALIZE_HANDLER       InitializeHandler;
    NDK_MINIPORT_INTERFACE_CHANGE_HANDLER InterfaceChangeHandler;  /* optional */
    NDK_MINIPORT_HALT_HANDLER             HaltHandler;
    NDK_MINIPORT_OID_REQUEST_HANDLER      OidRequestHandler;
    NDK_MINIPORT_UNLOAD_HANDLER           UnloadHandler;          /* optional */
    /* The NDK optional handlers (Header Type 0xB2, Revision 1, Size as the macro says). */
    NDIS_NDK_PROVIDER_CHARACTERISTICS     NdkCharacteristics;
    /* NDK_PROVIDER_FLAG_*; zeroed by the runtime before the entry point runs. */
    ULONG                                 ProviderFlags;
} NDK_MINIPORT_CHARACTERISTICS;

/* The provider is an RNIC in software over the host's network stack (the iwarp provider); a
 * provider without the flag drives RDMA devices (verbs). Where both serve one interface, an
 * adapter lookup by address, interface name or index returns the device-backed adapter first
 * (NDK_PREFER_SOFTWARE=1 in the environment reverses that); see libndk(3). */
#define NDK_PROVIDER_FLAG_SOFTWARE 0x00000001u

/* OpenNDK's own query OID (vendor range), answered by providers that drive an RDMA device
 * (verbs): which device port serves the adapter. Through ndk_rt_query_oid(); providers without
 * a device answer NDIS_STATUS_INVALID_OID. */
#define OID_OPENNDK_RDMA_DEVICE 0xFF4E0001u
typedef struct _NDK_RDMA_DEVICE_INFO {
    ULONG Size;                       /* sizeof(NDK_RDMA_DEVICE_INFO) */
    char  Device[64];                 /* rdma-core device name, e.g. "rxe0", "mlx5_0" */
    ULONG Port;                       /* port number (1-based) */
    ULONG GidIndex;                   /* the GID table entry below */
    UCHAR Gid[16];                    /* the GID rdma_cm uses for the interface's address */
    char  LinkLayer[16];              /* "Ethernet", "InfiniBand" */
    char  Transport[16];              /* "IB" (IB and RoCE), "iWARP" */
} NDK_RDMA_DEVICE_INFO;

/* The exported entry point. Fill *Characteristics and *DriverContext; return STATUS_SUCCESS,
 * or a failure status, after which the runtime unloads the module and reports it. */
typedef NTSTATUS (*NDK_PROVIDER_ENTRY_FN)(
    CONST NDK_RUNTIME_SERVICES *Services, NDIS_HANDLE DriverHandle,
    NDK_MINIPORT_CHARACTERISTICS *Characteristics, NDIS_HANDLE *DriverContext);

NTSTATUS NdkProviderEntry(CONST NDK_RUNTIME_SERVICES *Services, NDIS_HANDLE DriverHandle,
                          NDK_MINIPORT_CHARACTERISTICS *Characteristics, NDIS_HANDLE *DriverContext);

#ifdef __cplusplus
}
#endif

#endif /* NDK_PROVIDER_H */
