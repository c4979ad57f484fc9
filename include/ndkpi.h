/*
 * ndkpi.h - the Network Direct Kernel Provider Interface (NDKPI 2.1), source-compatible with the
 * names, prototypes, layouts and constants of Windows' ndkpi.h (Microsoft's "ndkpi.h header"
 * pages; docs/ndkpi.md).
 *
 * A consumer writes `#include <ndkpi.h>` as on Windows. Layouts match x64 Windows: ULONG is
 * 32 bits and pointers 64 bits; static assertions in tests/headers pin every size and offset.
 */
#ifndef NDKPI_H
#define NDKPI_H

#include "ndk/nt.h"
#include "ndkinfo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- object model ---- */
typedef enum _NDK_OBJECT_TYPE {
    NdkObjectTypeUndefined      = 0,
    NdkObjectTypeAdapter        = 1,
    NdkObjectTypeQp             = 2,
    NdkObjectTypeCq             = 3,
    NdkObjectTypeMr             = 4,
    NdkObjectTypeMw             = 5,
    NdkObjectTypePd             = 6,
    NdkObjectTypeSharedEndpoint = 7,
    NdkObjectTypeConnector      = 8,
    NdkObjectTypeListener       = 9,
    NdkObjectTypeSrq            = 10,
    NdkObjectTypeMax            = 11
} NDK_OBJECT_TYPE;

typedef struct _NDK_OBJECT_HEADER_RESERVED_BLOCK {
    PVOID rf[4];
} NDK_OBJECT_HEADER_RESERVED_BLOCK;

typedef struct _NDK_OBJECT_HEADER {
    NDK_VERSION                      Version;
    NDK_OBJECT_TYPE                  ObjectType;
    NDK_OBJECT_HEADER_RESERVED_BLOCK NdkReserved;
} NDK_OBJECT_HEADER;

typedef struct _NDK_ADAPTER         NDK_ADAPTER;
typedef struct _NDK_PD              NDK_PD;
typedef struct _NDK_CQ              NDK_CQ;
typedef struct _NDK_QP              NDK_QP;
typedef struct _NDK_SRQ             NDK_SRQ;
typedef struct _NDK_MR              NDK_MR;
typedef struct _NDK_MW              NDK_MW;
typedef struct _NDK_CONNECTOR       NDK_CONNECTOR;
typedef struct _NDK_LISTENER        NDK_LISTENER;
typedef struct _NDK_SHARED_ENDPOINT NDK_SHARED_ENDPOINT;

/* ---- constants ---- */
#define NDK_CQ_NOTIFY_ERRORS    0
#define NDK_CQ_NOTIFY_ANY       1
#define NDK_CQ_NOTIFY_SOLICITED 2

#define NDK_MR_FLAG_ALLOW_LOCAL_READ   0x00000000
#define NDK_MR_FLAG_ALLOW_LOCAL_WRITE  0x00000001
#define NDK_MR_FLAG_ALLOW_REMOTE_READ  0x00000002
#define NDK_MR_FLAG_ALLOW_REMOTE_WRITE 0x00000005
#define NDK_MR_FLAG_RDMA_READ_SINK     0x00000008

#define NDK_OP_FLAG_SILENT_SUCCESS             0x00000001
#define NDK_OP_FLAG_READ_FENCE                 0x00000002
#define NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT     0x00000004
#define NDK_OP_FLAG_ALLOW_REMOTE_READ          0x00000008
#define NDK_OP_FLAG_ALLOW_LOCAL_WRITE          0x00000010
#define NDK_OP_FLAG_ALLOW_REMOTE_WRITE         0x00000030
#define NDK_OP_FLAG_INLINE                     0x00000040
#define NDK_OP_FLAG_RDMA_READ_SINK             0x00000080
#define NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE 0x00000100
#define NDK_OP_FLAG_DEFER                      0x00000200

/* ND port space for provider-chosen ports (docs/ndkpi.md, "Connection set-up"). */
#define NDK_EPHEMERAL_PORT_FIRST 49152
#define NDK_EPHEMERAL_PORT_LAST  65535

/* ---- plain structures ---- */
typedef PHYSICAL_ADDRESS NDK_LOGICAL_ADDRESS;

typedef struct _NDK_SGE {
    union {
        PVOID               VirtualAddress;
        NDK_LOGICAL_ADDRESS LogicalAddress;
    };
    ULONG  Length;
    UINT32 MemoryRegionToken;
} NDK_SGE;

typedef struct _NDK_LOGICAL_ADDRESS_MAPPING {
    PVOID               AdapterContext;
    ULONG               AdapterPageCount;
    NDK_LOGICAL_ADDRESS AdapterPageArray[1];
} NDK_LOGICAL_ADDRESS_MAPPING;

typedef struct _NDK_EXTENSION_INTERFACE {
    CONST VOID *Dispatch;
} NDK_EXTENSION_INTERFACE;

typedef enum _NDK_OPERATION_TYPE {
    NdkOperationTypeReceive              = 1,
    NdkOperationTypeReceiveAndInvalidate = 32769,
    NdkOperationTypeSend                 = 2,
    NdkOperationTypeFastRegister         = 4,
    NdkOperationTypeBind                 = 8,
    NdkOperationTypeInvalidate           = 16,
    NdkOperationTypeRead                 = 32,
    NdkOperationTypeWrite                = 64
} NDK_OPERATION_TYPE;

typedef struct _NDK_RESULT {
    NTSTATUS Status;
    ULONG    BytesTransferred;
    PVOID    QPContext;
    PVOID    RequestContext;
} NDK_RESULT;

typedef struct _NDK_RESULT_EX {
    NTSTATUS           Status;
    ULONG              BytesTransferred;
    PVOID              QPContext;
    PVOID              RequestContext;
    NDK_OPERATION_TYPE Type;
    ULONG              ProviderErrorCode;
    ULONG_PTR          TypeSpecificCompletionOutput;
} NDK_RESULT_EX;

/* ---- consumer callbacks ---- */
typedef VOID (*NDK_FN_CLOSE_COMPLETION)(PVOID Context);
typedef VOID (*NDK_FN_CREATE_COMPLETION)(PVOID Context, NTSTATUS Status, NDK_OBJECT_HEADER *pNdkObject);
typedef VOID (*NDK_FN_REQUEST_COMPLETION)(PVOID Context, NTSTATUS Status);
typedef VOID (*NDK_FN_CQ_NOTIFICATION_CALLBACK)(PVOID CqNotificationContext, NTSTATUS CqStatus);
typedef VOID (*NDK_FN_CONNECT_EVENT_CALLBACK)(PVOID ConnectEventContext, NDK_CONNECTOR *pNdkConnector);
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK)(PVOID DisconnectEventContext);
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK_EX)(PVOID DisconnectEventContext, ULONG ProviderDisconnectReason);
typedef VOID (*NDK_FN_SRQ_NOTIFICATION_CALLBACK)(PVOID SrqNotificationContext, NTSTATUS SrqStatus);

/* ---- provider functions ---- */
typedef NTSTATUS (*NDK_FN_CLOSE_OBJECT)(
    NDK_OBJECT_HEADER *pNdkObject, NDK_FN_CLOSE_COMPLETION CloseCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_QUERY_EXTENSION_INTERFACE)(
    NDK_OBJECT_HEADER *pNdkObject, GUID *ExtensionInterfaceID, NDK_VERSION ExtensionInterfaceVersion,
    NDK_EXTENSION_INTERFACE *pExtensionInterface);

/* adapter */
typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO)(
    NDK_ADAPTER *pNdkAdapter, NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize);

typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO_EX)(
    NDK_ADAPTER *pNdkAdapter, NDK_VERSION Version, NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize);

typedef NTSTATUS (*NDK_FN_CREATE_CQ)(
    NDK_ADAPTER *pNdkAdapter, ULONG CqDepth, NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
    PVOID CqNotificationContext, GROUP_AFFINITY *Affinity, NDK_FN_CREATE_COMPLETION CreateCompletion,
    PVOID RequestContext, NDK_CQ **ppNdkCq);

typedef NTSTATUS (*NDK_FN_CREATE_PD)(
    NDK_ADAPTER *pNdkAdapter, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
    NDK_PD **ppNdkPd);

typedef NTSTATUS (*NDK_FN_CREATE_SHARED_ENDPOINT)(
    NDK_ADAPTER *pNdkAdapter, CONST PSOCKADDR pAddress, ULONG AddressLength,
    NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
    NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint);

typedef NTSTATUS (*NDK_FN_CREATE_CONNECTOR)(
    NDK_ADAPTER *pNdkAdapter, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
    NDK_CONNECTOR **ppNdkConnector);

typedef NTSTATUS (*NDK_FN_CREATE_LISTENER)(
    NDK_ADAPTER *pNdkAdapter, NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent, PVOID ConnectEventContext,
    NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_LISTENER **ppNdkListener);

typedef NTSTATUS (*NDK_FN_BUILD_LAM)(
    NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length, NDK_FN_REQUEST_COMPLETION RequestCompletion,
    PVOID RequestContext, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize, ULONG *pFBO);

typedef VOID (*NDK_FN_RELEASE_LAM)(NDK_ADAPTER *pNdkAdapter, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

/* CQ */
typedef NTSTATUS (*NDK_FN_RESIZE_CQ)(
    NDK_CQ *pNdkCq, ULONG CqDepth, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef VOID (*NDK_FN_ARM_CQ)(NDK_CQ *pNdkCq, ULONG Type);

typedef ULONG (*NDK_FN_GET_CQ_RESULTS)(NDK_CQ *pNdkCq, NDK_RESULT Results[], ULONG nResults);

typedef ULONG (*NDK_FN_GET_CQ_RESULTS_EX)(NDK_CQ *pNdkCq, NDK_RESULT_EX Results[], ULONG nResults);

typedef NTSTATUS (*NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION)(
    NDK_CQ *pNdkCq, ULONG ModerationInterval, ULONG ModerationCount);

/* PD */
typedef NTSTATUS (*NDK_FN_CREATE_MR)(
    NDK_PD *pNdkPd, BOOLEAN FastRegister, NDK_FN_CREATE_COMPLETION CreateCompletion,
    PVOID RequestContext, NDK_MR **ppNdkMr);

typedef NTSTATUS (*NDK_FN_CREATE_MW)(
    NDK_PD *pNdkPd, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_MW **ppNdkMw);

typedef NTSTATUS (*NDK_FN_CREATE_SRQ)(
    NDK_PD *pNdkPd, ULONG SrqDepth, ULONG MaxReceiveRequestSge, ULONG NotifyThreshold,
    NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification, PVOID SrqNotificationContext,
    GROUP_AFFINITY *Affinity, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
    NDK_SRQ **ppNdkSrq);

typedef NTSTATUS (*NDK_FN_CREATE_QP)(
    NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, PVOID QPContext, ULONG ReceiveQueueDepth,
    ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge, ULONG MaxInitiatorRequestSge,
    ULONG InlineDataSize, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext,
    NDK_QP **ppNdkQp);

typedef NTSTATUS (*NDK_FN_CREATE_QP_WITH_SRQ)(
    NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq, PVOID QPContext,
    ULONG InitiatorQueueDepth, ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
    NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_QP **ppNdkQp);

typedef VOID (*NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN)(NDK_PD *pNdkPd, UINT32 *pToken);

/* MR */
typedef NTSTATUS (*NDK_FN_REGISTER_MR)(
    NDK_MR *pNdkMr, MDL *Mdl, SIZE_T Length, ULONG Flags, NDK_FN_REQUEST_COMPLETION RequestCompletion,
    PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_DEREGISTER_MR)(
    NDK_MR *pNdkMr, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_INITIALIZE_FAST_REGISTER_MR)(
    NDK_MR *pNdkMr, ULONG AdapterPageCount, BOOLEAN RemoteAccess,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MR)(NDK_MR *pNdkMr);

typedef UINT32 (*NDK_FN_GET_LOCAL_TOKEN_FROM_MR)(NDK_MR *pNdkMr);

/* MW */
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MW)(NDK_MW *pNdkMw);

/* SRQ */
typedef NTSTATUS (*NDK_FN_MODIFY_SRQ)(
    NDK_SRQ *pNdkSrq, ULONG SrqDepth, ULONG NotifyThreshold, NDK_FN_REQUEST_COMPLETION RequestCompletion,
    PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_SRQ_RECEIVE)(
    NDK_SRQ *pNdkSrq, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge);

/* QP */
typedef VOID (*NDK_FN_FLUSH)(NDK_QP *pNdkQp);

typedef NTSTATUS (*NDK_FN_SEND)(
    NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge, ULONG Flags);

typedef NTSTATUS (*NDK_FN_SEND_AND_INVALIDATE)(
    NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge, ULONG Flags,
    UINT32 RemoteToken);

typedef NTSTATUS (*NDK_FN_RECEIVE)(NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge);

typedef NTSTATUS (*NDK_FN_BIND)(
    NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr, NDK_MW *pMw, PVOID VirtualAddress, SIZE_T Length,
    ULONG Flags);

typedef NTSTATUS (*NDK_FN_FAST_REGISTER)(
    NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr, ULONG AdapterPageCount,
    CONST NDK_LOGICAL_ADDRESS *AdapterPageArray, ULONG FBO, SIZE_T Length, PVOID BaseVirtualAddress,
    ULONG Flags);

typedef NTSTATUS (*NDK_FN_INVALIDATE)(
    NDK_QP *pNdkQp, PVOID RequestContext, NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags);

typedef NTSTATUS (*NDK_FN_READ)(
    NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
    UINT32 RemoteToken, ULONG Flags);

typedef NTSTATUS (*NDK_FN_WRITE)(
    NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress,
    UINT32 RemoteToken, ULONG Flags);

/* shared endpoint */
typedef NTSTATUS (*NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS)(
    NDK_SHARED_ENDPOINT *pNdkSharedEndpoint, PSOCKADDR pAddress, ULONG *pAddressLength);

/* connector */
typedef NTSTATUS (*NDK_FN_CONNECT)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, CONST PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
    CONST PSOCKADDR pDestAddress, ULONG DestAddressLength, ULONG InboundReadLimit,
    ULONG OutboundReadLimit, CONST PVOID pPrivateData, ULONG PrivateDataLength,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_CONNECT_WITH_SHARED_ENDPOINT)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
    CONST PSOCKADDR pDestAddress, ULONG DestAddressLength, ULONG InboundReadLimit,
    ULONG OutboundReadLimit, CONST PVOID pPrivateData, ULONG PrivateDataLength,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT)(
    NDK_CONNECTOR *pNdkConnector, NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
    PVOID DisconnectEventContext, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT_EX)(
    NDK_CONNECTOR *pNdkConnector, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
    PVOID DisconnectEventContext, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_ACCEPT)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, ULONG InboundReadLimit, ULONG OutboundReadLimit,
    CONST PVOID pPrivateData, ULONG PrivateDataLength, NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
    PVOID DisconnectEventContext, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_ACCEPT_EX)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, ULONG InboundReadLimit, ULONG OutboundReadLimit,
    CONST PVOID pPrivateData, ULONG PrivateDataLength, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
    PVOID DisconnectEventContext, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_REJECT)(NDK_CONNECTOR *pNdkConnector, CONST PVOID pPrivateData, ULONG PrivateDataLength);

typedef NTSTATUS (*NDK_FN_GET_CONNECTION_DATA)(
    NDK_CONNECTOR *pNdkConnector, ULONG *pInboundReadLimit, ULONG *pOutboundReadLimit, PVOID pPrivateData,
    ULONG *pPrivateDataLength);

typedef NTSTATUS (*NDK_FN_GET_LOCAL_ADDRESS)(NDK_CONNECTOR *pNdkConnector, PSOCKADDR pAddress, ULONG *pAddressLength);

typedef NTSTATUS (*NDK_FN_GET_PEER_ADDRESS)(NDK_CONNECTOR *pNdkConnector, PSOCKADDR pAddress, ULONG *pAddressLength);

typedef NTSTATUS (*NDK_FN_DISCONNECT)(
    NDK_CONNECTOR *pNdkConnector, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_DISCONNECT_EX)(
    NDK_CONNECTOR *pNdkConnector, BOOLEAN Abortive, NDK_FN_REQUEST_COMPLETION RequestCompletion,
    PVOID RequestContext);

/* listener */
typedef NTSTATUS (*NDK_FN_LISTEN)(
    NDK_LISTENER *pNdkListener, CONST PSOCKADDR pAddress, ULONG AddressLength,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);

typedef NTSTATUS (*NDK_FN_GET_LISTENER_LOCAL_ADDRESS)(
    NDK_LISTENER *pNdkListener, PSOCKADDR pAddress, ULONG *pAddressLength);

typedef VOID (*NDK_FN_CONTROL_CONNECT_EVENTS)(NDK_LISTENER *pNdkListener, BOOLEAN Pause);

/* ---- dispatch tables, members in the documented order ---- */
typedef struct _NDK_ADAPTER_DISPATCH {
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_QUERY_ADAPTER_INFO        NdkQueryAdapterInfo;
    NDK_FN_CREATE_CQ                 NdkCreateCq;
    NDK_FN_CREATE_PD                 NdkCreatePd;
    NDK_FN_CREATE_SHARED_ENDPOINT    NdkCreateSharedEndpoint;
    NDK_FN_CREATE_CONNECTOR          NdkCreateConnector;
    NDK_FN_CREATE_LISTENER           NdkCreateListener;
    NDK_FN_BUILD_LAM                 NdkBuildLAM;
    NDK_FN_RELEASE_LAM               NdkReleaseLAM;
} NDK_ADAPTER_DISPATCH;

typedef struct _NDK_CQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT                    NdkCloseCq;
    NDK_FN_QUERY_EXTENSION_INTERFACE       NdkQueryExtension;
    NDK_FN_RESIZE_CQ                       NdkResizeCq;
    NDK_FN_ARM_CQ                          NdkArmCq;
    NDK_FN_GET_CQ_RESULTS                  NdkGetCqResults;
    NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION NdkControlCqInterruptModeration;
    NDK_FN_GET_CQ_RESULTS_EX               NdkGetCqResultsEx;
} NDK_CQ_DISPATCH;

typedef struct _NDK_PD_DISPATCH {
    NDK_FN_CLOSE_OBJECT                       NdkClosePd;
    NDK_FN_QUERY_EXTENSION_INTERFACE          NdkQueryExtension;
    NDK_FN_CREATE_MR                          NdkCreateMr;
    NDK_FN_CREATE_MW                          NdkCreateMw;
    NDK_FN_CREATE_SRQ                         NdkCreateSrq;
    NDK_FN_CREATE_QP                          NdkCreateQp;
    NDK_FN_CREATE_QP_WITH_SRQ                 NdkCreateQpWithSrq;
    NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN NdkGetPrivilegedMemoryRegionToken;
} NDK_PD_DISPATCH;

typedef struct _NDK_MR_DISPATCH {
    NDK_FN_CLOSE_OBJECT                NdkCloseMr;
    NDK_FN_QUERY_EXTENSION_INTERFACE   NdkQueryExtension;
    NDK_FN_REGISTER_MR                 NdkRegisterMr;
    NDK_FN_DEREGISTER_MR               NdkDeregisterMr;
    NDK_FN_INITIALIZE_FAST_REGISTER_MR NdkInitializeFastRegisterMr;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MR    NdkGetRemoteTokenFromMr;
    NDK_FN_GET_LOCAL_TOKEN_FROM_MR     NdkGetLocalTokenFromMr;
} NDK_MR_DISPATCH;

typedef struct _NDK_MW_DISPATCH {
    NDK_FN_CLOSE_OBJECT             NdkCloseMw;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MW NdkGetRemoteTokenFromMw;
} NDK_MW_DISPATCH;

typedef struct _NDK_SRQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT              NdkCloseSrq;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_MODIFY_SRQ                NdkModifySrq;
    NDK_FN_SRQ_RECEIVE               NdkSrqReceive;
} NDK_SRQ_DISPATCH;

typedef struct _NDK_QP_DISPATCH {
    NDK_FN_CLOSE_OBJECT              NdkCloseQp;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_FLUSH                     NdkFlush;
    NDK_FN_SEND                      NdkSend;
    NDK_FN_RECEIVE                   NdkReceive;
    NDK_FN_BIND                      NdkBind;
    NDK_FN_FAST_REGISTER             NdkFastRegister;
    NDK_FN_INVALIDATE                NdkInvalidate;
    NDK_FN_READ                      NdkRead;
    NDK_FN_WRITE                     NdkWrite;
    NDK_FN_SEND_AND_INVALIDATE       NdkSendAndInvalidate;
} NDK_QP_DISPATCH;

typedef struct _NDK_SHARED_ENDPOINT_DISPATCH {
    NDK_FN_CLOSE_OBJECT                      NdkCloseSharedEndpoint;
    NDK_FN_QUERY_EXTENSION_INTERFACE         NdkQueryExtension;
    NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS NdkGetLocalAddress;
} NDK_SHARED_ENDPOINT_DISPATCH;

typedef struct _NDK_CONNECTOR_DISPATCH {
    NDK_FN_CLOSE_OBJECT                 NdkCloseConnector;
    NDK_FN_QUERY_EXTENSION_INTERFACE    NdkQueryExtension;
    NDK_FN_CONNECT                      NdkConnect;
    NDK_FN_CONNECT_WITH_SHARED_ENDPOINT NdkConnectWithSharedEndpoint;
    NDK_FN_COMPLETE_CONNECT             NdkCompleteConnect;
    NDK_FN_ACCEPT                       NdkAccept;
    NDK_FN_REJECT                       NdkReject;
    NDK_FN_GET_CONNECTION_DATA          NdkGetConnectionData;
    NDK_FN_GET_LOCAL_ADDRESS            NdkGetLocalAddress;
    NDK_FN_GET_PEER_ADDRESS             NdkGetPeerAddress;
    NDK_FN_DISCONNECT                   NdkDisconnect;
    NDK_FN_COMPLETE_CONNECT_EX          NdkCompleteConnectEx;
    NDK_FN_ACCEPT_EX                    NdkAcceptEx;
} NDK_CONNECTOR_DISPATCH;

typedef struct _NDK_LISTENER_DISPATCH {
    NDK_FN_CLOSE_OBJECT               NdkCloseListener;
    NDK_FN_QUERY_EXTENSION_INTERFACE  NdkQueryExtension;
    NDK_FN_LISTEN                     NdkListen;
    NDK_FN_GET_LISTENER_LOCAL_ADDRESS NdkGetLocalAddress;
    NDK_FN_CONTROL_CONNECT_EVENTS     NdkControlConnectEvents;
} NDK_LISTENER_DISPATCH;

/* ---- the ten object structures: header, then the dispatch table ---- */
struct _NDK_ADAPTER         { NDK_OBJECT_HEADER Header; CONST NDK_ADAPTER_DISPATCH *Dispatch; };
struct _NDK_PD              { NDK_OBJECT_HEADER Header; CONST NDK_PD_DISPATCH *Dispatch; };
struct _NDK_CQ              { NDK_OBJECT_HEADER Header; CONST NDK_CQ_DISPATCH *Dispatch; };
struct _NDK_QP              { NDK_OBJECT_HEADER Header; CONST NDK_QP_DISPATCH *Dispatch; };
struct _NDK_SRQ             { NDK_OBJECT_HEADER Header; CONST NDK_SRQ_DISPATCH *Dispatch; };
struct _NDK_MR              { NDK_OBJECT_HEADER Header; CONST NDK_MR_DISPATCH *Dispatch; };
struct _NDK_MW              { NDK_OBJECT_HEADER Header; CONST NDK_MW_DISPATCH *Dispatch; };
struct _NDK_CONNECTOR       { NDK_OBJECT_HEADER Header; CONST NDK_CONNECTOR_DISPATCH *Dispatch; };
struct _NDK_LISTENER        { NDK_OBJECT_HEADER Header; CONST NDK_LISTENER_DISPATCH *Dispatch; };
struct _NDK_SHARED_ENDPOINT { NDK_OBJECT_HEADER Header; CONST NDK_SHARED_ENDPOINT_DISPATCH *Dispatch; };

#ifdef __cplusplus
}
#endif

#endif /* NDKPI_H */
