/*
 * ndisndk.h - the NDIS side of NDK: provider characteristics (open/close adapter handlers),
 * adapter NDK attributes and capabilities, the four OID_NDK_* requests and their structures,
 * and the NDK PnP events (Microsoft's "ndisndk.h header" and ntddndis.h pages).
 */
#ifndef NDISNDK_H
#define NDISNDK_H

#include "ndkpi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _NDIS_OBJECT_HEADER {
    UCHAR  Type;
    UCHAR  Revision;
    USHORT Size;
} NDIS_OBJECT_HEADER, *PNDIS_OBJECT_HEADER;

#define NDIS_OBJECT_TYPE_DEFAULT                          0x80
#define NDIS_OBJECT_TYPE_RSS_PROCESSOR_INFO               0xB1
#define NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS     0xB2
#define NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES  0xB3

/* ---- open / close adapter ---- */
typedef struct _NDIS_OPEN_NDK_ADAPTER_PARAMETERS {
    NDK_VERSION              Version;
    NDIS_NIC_SWITCH_ID       SwitchId;
    NDIS_NIC_SWITCH_VPORT_ID VPortId;
} NDIS_OPEN_NDK_ADAPTER_PARAMETERS, *PNDIS_OPEN_NDK_ADAPTER_PARAMETERS;

typedef NDIS_STATUS (*OPEN_NDK_ADAPTER_HANDLER)(
    NDIS_HANDLE MiniportAdapterContext, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS Parameters,
    NDK_ADAPTER **ppNdkAdapter);

typedef VOID (*CLOSE_NDK_ADAPTER_HANDLER)(NDIS_HANDLE MiniportAdapterContext, NDK_ADAPTER *pNdkAdapter);

#define NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 1

typedef struct _NDIS_NDK_PROVIDER_CHARACTERISTICS {
    NDIS_OBJECT_HEADER        Header;
    ULONG                     Flags;
    OPEN_NDK_ADAPTER_HANDLER  OpenNDKAdapterHandler;
    CLOSE_NDK_ADAPTER_HANDLER CloseNDKAdapterHandler;
} NDIS_NDK_PROVIDER_CHARACTERISTICS, *PNDIS_NDK_PROVIDER_CHARACTERISTICS;

#define NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 \
    RTL_SIZEOF_THROUGH_FIELD(NDIS_NDK_PROVIDER_CHARACTERISTICS, CloseNDKAdapterHandler)

/* ---- adapter attributes and capabilities ---- */
#define NDIS_NDK_CAPABILITIES_REVISION_1 1

typedef struct _NDIS_NDK_CAPABILITIES {
    NDIS_OBJECT_HEADER Header;
    ULONG              Flags;
    ULONG              MaxQpCount;
    ULONG              MaxCqCount;
    ULONG              MaxMrCount;
    ULONG              MaxPdCount;
    ULONG              MaxInboundReadLimit;
    ULONG              MaxOutboundReadLimit;
    ULONG              MaxMwCount;
    ULONG              MaxSrqCount;
    ULONG64            MissingCounterMask;
    NDK_ADAPTER_INFO  *NdkInfo;
} NDIS_NDK_CAPABILITIES, *PNDIS_NDK_CAPABILITIES;

#define NDIS_SIZEOF_NDK_CAPABILITIES_REVISION_1 RTL_SIZEOF_THROUGH_FIELD(NDIS_NDK_CAPABILITIES, NdkInfo)

#define NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1 1

typedef struct _NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES {
    NDIS_OBJECT_HEADER     Header;
    BOOLEAN                Enabled;
    PNDIS_NDK_CAPABILITIES NdkCapabilities;
} NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES, *PNDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES;

#define NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1 \
    RTL_SIZEOF_THROUGH_FIELD(NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES, NdkCapabilities)

/* ---- OIDs ---- */
#define OID_NDK_SET_STATE       0xFC040201
#define OID_NDK_STATISTICS      0xFC040202
#define OID_NDK_CONNECTIONS     0xFC040203
#define OID_NDK_LOCAL_ENDPOINTS 0xFC040204

/* PnP events a miniport raises on NDK state transitions (NET_PNP_EVENT_CODE values). */
#define NetEventNDKEnable  13
#define NetEventNDKDisable 14

typedef struct _NDIS_NDK_PERFORMANCE_COUNTERS {
    ULONG64 Connect;
    ULONG64 Accept;
    ULONG64 ConnectFailure;
    ULONG64 ConnectionError;
    ULONG64 ActiveConnection;
    ULONG64 Reserved01;
    ULONG64 Reserved02;
    ULONG64 Reserved03;
    ULONG64 Reserved04;
    ULONG64 Reserved05;
    ULONG64 Reserved06;
    ULONG64 Reserved07;
    ULONG64 Reserved08;
    ULONG64 Reserved09;
    ULONG64 Reserved10;
    ULONG64 Reserved11;
    ULONG64 Reserved12;
    ULONG64 Reserved13;
    ULONG64 Reserved14;
    ULONG64 Reserved15;
    ULONG64 Reserved16;
    ULONG64 Reserved17;
    ULONG64 Reserved18;
    ULONG64 Reserved19;
    ULONG64 Reserved20;
    ULONG64 CQError;
    ULONG64 RDMAInOctets;
    ULONG64 RDMAOutOctets;
    ULONG64 RDMAInFrames;
    ULONG64 RDMAOutFrames;
} NDIS_NDK_PERFORMANCE_COUNTERS, *PNDIS_NDK_PERFORMANCE_COUNTERS;

#define NDIS_NDK_PERFORMANCE_COUNTER_MASK(CounterFieldName) \
    (((ULONG64)1) << (FIELD_OFFSET(NDIS_NDK_PERFORMANCE_COUNTERS, CounterFieldName) / sizeof(ULONG64)))

#define NDIS_NDK_STATISTICS_INFO_REVISION_1 1

typedef struct _NDIS_NDK_STATISTICS_INFO {
    NDIS_OBJECT_HEADER            Header;
    ULONG                         Flags;
    NDIS_NDK_PERFORMANCE_COUNTERS CounterSet;
} NDIS_NDK_STATISTICS_INFO, *PNDIS_NDK_STATISTICS_INFO;

#define NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1 RTL_SIZEOF_THROUGH_FIELD(NDIS_NDK_STATISTICS_INFO, CounterSet)

#define NDIS_NDK_CONNECTIONS_REVISION_1 1

typedef struct _NDIS_NDK_CONNECTION_ENTRY {
    SOCKADDR_INET Local;
    SOCKADDR_INET Remote;
    BOOLEAN       UserModeOwner;
    ULONG         OwnerPid;
} NDIS_NDK_CONNECTION_ENTRY, *PNDIS_NDK_CONNECTION_ENTRY;

typedef struct _NDIS_NDK_CONNECTIONS {
    NDIS_OBJECT_HEADER        Header;
    ULONG                     Flags;
    ULONG                     Count;
    BOOLEAN                   NDConnectionsMappedtoTCPConnections;
    NDIS_NDK_CONNECTION_ENTRY Connections[1];
} NDIS_NDK_CONNECTIONS, *PNDIS_NDK_CONNECTIONS;

#define NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(n) \
    (offsetof(NDIS_NDK_CONNECTIONS, Connections) + (size_t)(n) * sizeof(NDIS_NDK_CONNECTION_ENTRY))

#define NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1 1

typedef struct _NDIS_NDK_LOCAL_ENDPOINT_ENTRY {
    SOCKADDR_INET Local;
    BOOLEAN       UserModeOwner;
    BOOLEAN       Listener;
    ULONG         OwnerPid;
} NDIS_NDK_LOCAL_ENDPOINT_ENTRY, *PNDIS_NDK_LOCAL_ENDPOINT_ENTRY;

typedef struct _NDIS_NDK_LOCAL_ENDPOINTS {
    NDIS_OBJECT_HEADER            Header;
    ULONG                         Flags;
    ULONG                         Count;
    BOOLEAN                       NDLocalEndpointsMappedtoTCPLocalEndpoints;
    NDIS_NDK_LOCAL_ENDPOINT_ENTRY LocalEndpoints[1];
} NDIS_NDK_LOCAL_ENDPOINTS, *PNDIS_NDK_LOCAL_ENDPOINTS;

#define NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(n) \
    (offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints) + (size_t)(n) * sizeof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY))

/* ---- WMI views and vPort parameters ---- */
typedef struct _NDK_WMI_ADAPTER_INFO {
    NDK_VERSION         Version;
    UINT32              VendorId;
    UINT32              DeviceId;
    ULONGLONG           MaxRegistrationSize;
    ULONGLONG           MaxWindowSize;
    ULONG               FRMRPageCount;
    ULONG               MaxInitiatorRequestSge;
    ULONG               MaxReceiveRequestSge;
    ULONG               MaxReadRequestSge;
    ULONG               MaxTransferLength;
    ULONG               MaxInlineDataSize;
    ULONG               MaxInboundReadLimit;
    ULONG               MaxOutboundReadLimit;
    ULONG               MaxReceiveQueueDepth;
    ULONG               MaxInitiatorQueueDepth;
    ULONG               MaxSrqDepth;
    ULONG               MaxCqDepth;
    ULONG               LargeRequestThreshold;
    ULONG               MaxCallerData;
    ULONG               MaxCalleeData;
    ULONG               AdapterFlags;
} NDK_WMI_ADAPTER_INFO, *PNDK_WMI_ADAPTER_INFO;   /* no RdmaTechnology: ntddndis.h has none (96 bytes) */

typedef struct _NDIS_WMI_NDK_CAPABILITIES {
    ULONG                MaxQpCount;
    ULONG                MaxCqCount;
    ULONG                MaxMrCount;
    ULONG                MaxPdCount;
    ULONG                MaxInboundReadLimit;
    ULONG                MaxOutboundReadLimit;
    ULONG                MaxMwCount;
    ULONG                MaxSrqCount;
    ULONG64              MissingCounterMask;
    NDK_WMI_ADAPTER_INFO NdkInfo;
} NDIS_WMI_NDK_CAPABILITIES, *PNDIS_WMI_NDK_CAPABILITIES;

#define NDIS_MAX_PHYS_ADDRESS_LENGTH 32

typedef struct _NDIS_NDK_REQUEST_PARAMETERS {
    BOOLEAN               RdmaRequested;
    NDIS_SWITCH_PORT_ID   SwitchPortId;
    NET_IFINDEX           IfIndex;
    UCHAR                 MacAddress[NDIS_MAX_PHYS_ADDRESS_LENGTH];
    UINT                  VlanId;
    NDIS_NDK_CAPABILITIES NdkReserved;
} NDIS_NDK_REQUEST_PARAMETERS, *PNDIS_NDK_REQUEST_PARAMETERS;

typedef struct _NDIS_NDK_RESPONSE_PARAMETERS {
    BOOLEAN               CapabilitiesAvailable;
    NDIS_NDK_CAPABILITIES ReceivedCapabilities;
} NDIS_NDK_RESPONSE_PARAMETERS, *PNDIS_NDK_RESPONSE_PARAMETERS;

typedef struct _NDIS_NDK_PARAMETERS {
    NDIS_NDK_REQUEST_PARAMETERS  NdkRequest;
    NDIS_NDK_RESPONSE_PARAMETERS NdkResponse;
} NDIS_NDK_PARAMETERS, *PNDIS_NDK_PARAMETERS;

#define NDIS_NIC_SWITCH_VPORT_PARAMS_NDK_PARAMS_CHANGED 0x00200000

/* WMI GUIDs, where Windows has them (ntddndis.h): GUID_NDIS_NDK_CAPABILITIES
 * {7969ba4d-dd80-4bc7-b3e6-68043997e519} and GUID_NDIS_NDK_STATE {530c69c9-2f51-49de-a1af-088d54ffa474}.
 * The _INIT forms are constant initializers for code that needs its own copy. */
#define GUID_NDIS_NDK_CAPABILITIES_INIT \
    { 0x7969ba4d, 0xdd80, 0x4bc7, { 0xb3, 0xe6, 0x68, 0x04, 0x39, 0x97, 0xe5, 0x19 } }
#define GUID_NDIS_NDK_STATE_INIT \
    { 0x530c69c9, 0x2f51, 0x49de, { 0xa1, 0xaf, 0x08, 0x8d, 0x54, 0xff, 0xa4, 0x74 } }
DEFINE_GUID(GUID_NDIS_NDK_CAPABILITIES, 0x7969ba4d, 0xdd80, 0x4bc7, 0xb3, 0xe6, 0x68, 0x04, 0x39, 0x97, 0xe5, 0x19);
DEFINE_GUID(GUID_NDIS_NDK_STATE, 0x530c69c9, 0x2f51, 0x49de, 0xa1, 0xaf, 0x08, 0x8d, 0x54, 0xff, 0xa4, 0x74);

/* ---- INF keywords ----
 * ndis.h gives the keyword names as NDIS strings, for NdisReadConfiguration; the _NAME forms
 * are the same text as plain C strings, for code that reads the registry another way. An NDIS
 * string is a UNICODE_STRING; the constant's literal is UTF-16 (L"" when wchar_t is 16 bits, as
 * with -fshort-wchar, else u"", which has the same type as WCHAR there). */
typedef UNICODE_STRING NDIS_STRING, *PNDIS_STRING;
#ifndef NDIS_STRING_CONST
#if defined(__SIZEOF_WCHAR_T__) && __SIZEOF_WCHAR_T__ == 2
#define NDIS_STRING_CONST(x) { (USHORT)(sizeof(L##x) - sizeof(WCHAR)), (USHORT)sizeof(L##x), (PWCH)(L##x) }
#else
#define NDIS_STRING_CONST(x) { (USHORT)(sizeof(u##x) - sizeof(WCHAR)), (USHORT)sizeof(u##x), (PWCH)(u##x) }
#endif
#endif
#define NETWORK_DIRECT_KEYWORD                  NDIS_STRING_CONST("*NetworkDirect")
#define NETWORK_DIRECT_GLOBAL_FLAGS_KEYWORD     NDIS_STRING_CONST("*NetworkDirectGlobalFlags")
#define NETWORK_DIRECT_KEYWORD_NAME             "*NetworkDirect"
#define NETWORK_DIRECT_TECHNOLOGY_KEYWORD_NAME  "*NetworkDirectTechnology"
#define NETWORK_DIRECT_GLOBAL_FLAGS_KEYWORD_NAME "*NetworkDirectGlobalFlags"
#define NETWORK_DIRECT_GLOBAL_FLAGS_ALLOW_REMOTE_IP_SUBNET 0x00000001

/* ---- RSS processor information (ntddndis.h), which the NDK RSS extension returns ---- */
typedef struct _NDIS_RSS_PROCESSOR {
    PROCESSOR_NUMBER ProcNum;
    USHORT           PreferenceIndex;
    USHORT           Reserved;
} NDIS_RSS_PROCESSOR, *PNDIS_RSS_PROCESSOR;

typedef enum _NDIS_RSS_PROFILE {
    NdisRssProfileClosest = 1,
    NdisRssProfileClosestStatic,
    NdisRssProfileNuma,
    NdisRssProfileNumaStatic,
    NdisRssProfileConservative,
    NdisRssProfileMaximum
} NDIS_RSS_PROFILE, *PNDIS_RSS_PROFILE;

#define NDIS_RSS_PROCESSOR_INFO_REVISION_1 1
#define NDIS_RSS_PROCESSOR_INFO_REVISION_2 2

/* A header, then RssProcessorCount entries of RssProcessorEntrySize bytes each, starting
 * RssProcessorArrayOffset bytes from the start of this structure. */
typedef struct _NDIS_RSS_PROCESSOR_INFO {
    NDIS_OBJECT_HEADER Header;
    ULONG              Flags;
    PROCESSOR_NUMBER   RssBaseProcessor;
    ULONG              MaxNumRssProcessors;
    USHORT             PreferredNumaNode;
    ULONG              RssProcessorArrayOffset;
    ULONG              RssProcessorCount;
    ULONG              RssProcessorEntrySize;
    PROCESSOR_NUMBER   RssMaxProcessor;     /* revision 2 */
    NDIS_RSS_PROFILE   RssProfile;          /* revision 2 */
} NDIS_RSS_PROCESSOR_INFO, *PNDIS_RSS_PROCESSOR_INFO;

#define NDIS_SIZEOF_RSS_PROCESSOR_REVISION_1 RTL_SIZEOF_THROUGH_FIELD(NDIS_RSS_PROCESSOR, PreferenceIndex)
#define NDIS_SIZEOF_RSS_PROCESSOR_INFO_REVISION_1 \
    RTL_SIZEOF_THROUGH_FIELD(NDIS_RSS_PROCESSOR_INFO, RssProcessorEntrySize)
#define NDIS_SIZEOF_RSS_PROCESSOR_INFO_REVISION_2 \
    RTL_SIZEOF_THROUGH_FIELD(NDIS_RSS_PROCESSOR_INFO, RssProfile)

#ifdef __cplusplus
}
#endif

#endif /* NDISNDK_H */
