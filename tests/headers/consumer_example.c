/*
 * A consumer and a toy provider written only from the names, prototypes and layouts Microsoft
 * documents for ndkpi.h, ndkinfo.h and ndisndk.h: every dispatch slot is filled by member name
 * with a function whose parameter list is spelled as the documentation spells it, and the
 * consumer calls every slot.
 * It must compile unchanged with gcc and clang as strict C11 and run to "ok".
 */
#include <ndkpi.h>
#include <ndisndk.h>
#include <stdio.h>

static int calls;

/* ---- toy provider: one function per NDK_FN_* typedef, parameters as documented ---- */
static NTSTATUS Close(NDK_OBJECT_HEADER *pNdkObject, NDK_FN_CLOSE_COMPLETION CloseCompletion, PVOID RequestContext)
{ (void)pNdkObject; (void)CloseCompletion; (void)RequestContext; calls++; return STATUS_SUCCESS; }
static NTSTATUS QueryExtension(NDK_OBJECT_HEADER *pNdkObject, GUID *ExtensionInterfaceID,
                               NDK_VERSION ExtensionInterfaceVersion, NDK_EXTENSION_INTERFACE *pExtensionInterface)
{ (void)pNdkObject; (void)ExtensionInterfaceID; (void)ExtensionInterfaceVersion; (void)pExtensionInterface; calls++; return STATUS_NOT_SUPPORTED; }
static NTSTATUS QueryAdapterInfo(NDK_ADAPTER *pNdkAdapter, NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize)
{
    (void)pNdkAdapter; calls++;
    if (*pBufferSize < sizeof(NDK_ADAPTER_INFO)) { *pBufferSize = sizeof(NDK_ADAPTER_INFO); return STATUS_BUFFER_TOO_SMALL; }
    pInfo->Version.Major = 2; pInfo->Version.Minor = 1; pInfo->RdmaTechnology = NdkiWarp;
    pInfo->AdapterFlags = NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
    *pBufferSize = sizeof(NDK_ADAPTER_INFO); return STATUS_SUCCESS;
}
static NTSTATUS CreateCq(NDK_ADAPTER *pNdkAdapter, ULONG CqDepth, NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
                         PVOID CqNotificationContext, GROUP_AFFINITY *Affinity, NDK_FN_CREATE_COMPLETION CreateCompletion,
                         PVOID RequestContext, NDK_CQ **ppNdkCq)
{ (void)pNdkAdapter; (void)CqDepth; (void)CqNotification; (void)CqNotificationContext; (void)Affinity; (void)CreateCompletion; (void)RequestContext; *ppNdkCq = NULL; calls++; return STATUS_INSUFFICIENT_RESOURCES; }
static NTSTATUS CreatePd(NDK_ADAPTER *pNdkAdapter, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_PD **ppNdkPd)
{ (void)pNdkAdapter; (void)RequestContext; (void)ppNdkPd; calls++; CreateCompletion(RequestContext, STATUS_INSUFFICIENT_RESOURCES, NULL); return STATUS_PENDING; }
static NTSTATUS CreateSharedEndpoint(NDK_ADAPTER *pNdkAdapter, CONST PSOCKADDR pAddress, ULONG AddressLength,
                                     NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint)
{ (void)pNdkAdapter; (void)pAddress; (void)AddressLength; (void)CreateCompletion; (void)RequestContext; (void)ppNdkSharedEndpoint; calls++; return STATUS_INVALID_ADDRESS; }
static NTSTATUS CreateConnector(NDK_ADAPTER *pNdkAdapter, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_CONNECTOR **ppNdkConnector)
{ (void)pNdkAdapter; (void)CreateCompletion; (void)RequestContext; (void)ppNdkConnector; calls++; return STATUS_INSUFFICIENT_RESOURCES; }
static NTSTATUS CreateListener(NDK_ADAPTER *pNdkAdapter, NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent, PVOID ConnectEventContext,
                               NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_LISTENER **ppNdkListener)
{ (void)pNdkAdapter; (void)ConnectEvent; (void)ConnectEventContext; (void)CreateCompletion; (void)RequestContext; (void)ppNdkListener; calls++; return STATUS_INSUFFICIENT_RESOURCES; }
static NTSTATUS BuildLAM(NDK_ADAPTER *pNdkAdapter, MDL *Mdl, SIZE_T Length, NDK_FN_REQUEST_COMPLETION RequestCompletion,
                         PVOID RequestContext, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM, ULONG *pLAMSize, ULONG *pFBO)
{
    (void)pNdkAdapter; (void)RequestCompletion; (void)RequestContext; calls++;
    ULONG pages = (ULONG)((MmGetMdlByteOffset(Mdl) + Length + PAGE_SIZE - 1) / PAGE_SIZE);
    ULONG need = (ULONG)(FIELD_OFFSET(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + pages * sizeof(NDK_LOGICAL_ADDRESS));
    if (!pNdkLAM || *pLAMSize < need) { *pLAMSize = need; return STATUS_BUFFER_TOO_SMALL; }
    pNdkLAM->AdapterPageCount = pages;
    for (ULONG i = 0; i < pages; i++)
        pNdkLAM->AdapterPageArray[i].QuadPart = (LONGLONG)((uintptr_t)MmGetMdlBaseVa(Mdl) + (uintptr_t)i * PAGE_SIZE);
    *pFBO = MmGetMdlByteOffset(Mdl); *pLAMSize = need; return STATUS_SUCCESS;
}
static VOID ReleaseLAM(NDK_ADAPTER *pNdkAdapter, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM) { (void)pNdkAdapter; (void)pNdkLAM; calls++; }
static NTSTATUS ResizeCq(NDK_CQ *pNdkCq, ULONG CqDepth, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkCq; (void)CqDepth; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_NOT_SUPPORTED; }
static VOID ArmCq(NDK_CQ *pNdkCq, ULONG Type) { (void)pNdkCq; (void)Type; calls++; }
static ULONG GetCqResults(NDK_CQ *pNdkCq, NDK_RESULT Results[], ULONG nResults) { (void)pNdkCq; (void)Results; (void)nResults; calls++; return 0; }
static ULONG GetCqResultsEx(NDK_CQ *pNdkCq, NDK_RESULT_EX Results[], ULONG nResults) { (void)pNdkCq; (void)Results; (void)nResults; calls++; return 0; }
static NTSTATUS ControlCqInterruptModeration(NDK_CQ *pNdkCq, ULONG ModerationInterval, ULONG ModerationCount)
{ (void)pNdkCq; (void)ModerationInterval; (void)ModerationCount; calls++; return STATUS_NOT_SUPPORTED; }
static NTSTATUS CreateMr(NDK_PD *pNdkPd, BOOLEAN FastRegister, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_MR **ppNdkMr)
{ (void)pNdkPd; (void)FastRegister; (void)CreateCompletion; (void)RequestContext; (void)ppNdkMr; calls++; return STATUS_INSUFFICIENT_RESOURCES; }
static NTSTATUS CreateMw(NDK_PD *pNdkPd, NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_MW **ppNdkMw)
{ (void)pNdkPd; (void)CreateCompletion; (void)RequestContext; (void)ppNdkMw; calls++; return STATUS_INSUFFICIENT_RESOURCES; }
static NTSTATUS CreateSrq(NDK_PD *pNdkPd, ULONG SrqDepth, ULONG MaxReceiveRequestSge, ULONG NotifyThreshold,
                          NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification, PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
                          NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_SRQ **ppNdkSrq)
{ (void)pNdkPd; (void)SrqDepth; (void)MaxReceiveRequestSge; (void)NotifyThreshold; (void)SrqNotification; (void)SrqNotificationContext; (void)Affinity; (void)CreateCompletion; (void)RequestContext; (void)ppNdkSrq; calls++; return STATUS_INVALID_PARAMETER; }
static NTSTATUS CreateQp(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, PVOID QPContext, ULONG ReceiveQueueDepth,
                         ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge, ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                         NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_QP **ppNdkQp)
{ (void)pNdkPd; (void)pReceiveCq; (void)pInitiatorCq; (void)QPContext; (void)ReceiveQueueDepth; (void)InitiatorQueueDepth; (void)MaxReceiveRequestSge; (void)MaxInitiatorRequestSge; (void)InlineDataSize; (void)CreateCompletion; (void)RequestContext; (void)ppNdkQp; calls++; return STATUS_INVALID_PARAMETER; }
static NTSTATUS CreateQpWithSrq(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq, PVOID QPContext,
                                ULONG InitiatorQueueDepth, ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                                NDK_FN_CREATE_COMPLETION CreateCompletion, PVOID RequestContext, NDK_QP **ppNdkQp)
{ (void)pNdkPd; (void)pReceiveCq; (void)pInitiatorCq; (void)pSrq; (void)QPContext; (void)InitiatorQueueDepth; (void)MaxInitiatorRequestSge; (void)InlineDataSize; (void)CreateCompletion; (void)RequestContext; (void)ppNdkQp; calls++; return STATUS_INVALID_PARAMETER; }
static VOID GetPrivilegedMemoryRegionToken(NDK_PD *pNdkPd, UINT32 *pToken) { (void)pNdkPd; *pToken = 0x1234; calls++; }
static NTSTATUS RegisterMr(NDK_MR *pNdkMr, MDL *Mdl, SIZE_T Length, ULONG Flags, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkMr; (void)Mdl; (void)Length; (void)Flags; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_SUCCESS; }
static NTSTATUS DeregisterMr(NDK_MR *pNdkMr, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkMr; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_SUCCESS; }
static NTSTATUS InitializeFastRegisterMr(NDK_MR *pNdkMr, ULONG AdapterPageCount, BOOLEAN RemoteAccess,
                                         NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkMr; (void)AdapterPageCount; (void)RemoteAccess; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_IMPLEMENTATION_LIMIT; }
static UINT32 GetRemoteTokenFromMr(NDK_MR *pNdkMr) { (void)pNdkMr; calls++; return 1; }
static UINT32 GetLocalTokenFromMr(NDK_MR *pNdkMr) { (void)pNdkMr; calls++; return 2; }
static UINT32 GetRemoteTokenFromMw(NDK_MW *pNdkMw) { (void)pNdkMw; calls++; return 3; }
static NTSTATUS ModifySrq(NDK_SRQ *pNdkSrq, ULONG SrqDepth, ULONG NotifyThreshold, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkSrq; (void)SrqDepth; (void)NotifyThreshold; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_SUCCESS; }
static NTSTATUS SrqReceive(NDK_SRQ *pNdkSrq, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge)
{ (void)pNdkSrq; (void)RequestContext; (void)pSgl; (void)nSge; calls++; return STATUS_SUCCESS; }
static VOID Flush(NDK_QP *pNdkQp) { (void)pNdkQp; calls++; }
static NTSTATUS Send(NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge, ULONG Flags)
{ (void)pNdkQp; (void)RequestContext; (void)pSgl; (void)nSge; (void)Flags; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS SendAndInvalidate(NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge, ULONG Flags, UINT32 RemoteToken)
{ (void)pNdkQp; (void)RequestContext; (void)pSgl; (void)nSge; (void)Flags; (void)RemoteToken; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS Receive(NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge)
{ (void)pNdkQp; (void)RequestContext; (void)pSgl; (void)nSge; calls++; return STATUS_SUCCESS; }
static NTSTATUS Bind(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr, NDK_MW *pMw, PVOID VirtualAddress, SIZE_T Length, ULONG Flags)
{ (void)pNdkQp; (void)RequestContext; (void)pMr; (void)pMw; (void)VirtualAddress; (void)Length; (void)Flags; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS FastRegister(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr, ULONG AdapterPageCount,
                             CONST NDK_LOGICAL_ADDRESS *AdapterPageArray, ULONG FBO, SIZE_T Length, PVOID BaseVirtualAddress, ULONG Flags)
{ (void)pNdkQp; (void)RequestContext; (void)pMr; (void)AdapterPageCount; (void)AdapterPageArray; (void)FBO; (void)Length; (void)BaseVirtualAddress; (void)Flags; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS Invalidate(NDK_QP *pNdkQp, PVOID RequestContext, NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags)
{ (void)pNdkQp; (void)RequestContext; (void)pNdkMrOrMw; (void)Flags; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS Read(NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Flags)
{ (void)pNdkQp; (void)RequestContext; (void)pSgl; (void)nSge; (void)RemoteAddress; (void)RemoteToken; (void)Flags; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS Write(NDK_QP *pNdkQp, PVOID RequestContext, CONST NDK_SGE *pSgl, ULONG nSge, UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Flags)
{ (void)pNdkQp; (void)RequestContext; (void)pSgl; (void)nSge; (void)RemoteAddress; (void)RemoteToken; (void)Flags; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS SeGetLocalAddress(NDK_SHARED_ENDPOINT *pNdkSharedEndpoint, PSOCKADDR pAddress, ULONG *pAddressLength)
{ (void)pNdkSharedEndpoint; (void)pAddress; *pAddressLength = sizeof(SOCKADDR_IN6); calls++; return STATUS_BUFFER_TOO_SMALL; }
static NTSTATUS Connect(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, CONST PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
                        CONST PSOCKADDR pDestAddress, ULONG DestAddressLength, ULONG InboundReadLimit, ULONG OutboundReadLimit,
                        CONST PVOID pPrivateData, ULONG PrivateDataLength, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkConnector; (void)pNdkQp; (void)pSrcAddress; (void)SrcAddressLength; (void)pDestAddress; (void)DestAddressLength; (void)InboundReadLimit; (void)OutboundReadLimit; (void)pPrivateData; (void)PrivateDataLength; calls++; RequestCompletion(RequestContext, STATUS_CONNECTION_REFUSED); return STATUS_PENDING; }
static NTSTATUS ConnectWithSharedEndpoint(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
                                          CONST PSOCKADDR pDestAddress, ULONG DestAddressLength, ULONG InboundReadLimit, ULONG OutboundReadLimit,
                                          CONST PVOID pPrivateData, ULONG PrivateDataLength, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkConnector; (void)pNdkQp; (void)pNdkSharedEndpoint; (void)pDestAddress; (void)DestAddressLength; (void)InboundReadLimit; (void)OutboundReadLimit; (void)pPrivateData; (void)PrivateDataLength; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_HOST_UNREACHABLE; }
static NTSTATUS CompleteConnect(NDK_CONNECTOR *pNdkConnector, NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent, PVOID DisconnectEventContext,
                                NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkConnector; (void)DisconnectEvent; (void)DisconnectEventContext; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS CompleteConnectEx(NDK_CONNECTOR *pNdkConnector, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent, PVOID DisconnectEventContext,
                                  NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkConnector; (void)DisconnectEvent; (void)DisconnectEventContext; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS Accept(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, ULONG InboundReadLimit, ULONG OutboundReadLimit, CONST PVOID pPrivateData,
                       ULONG PrivateDataLength, NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent, PVOID DisconnectEventContext,
                       NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkConnector; (void)pNdkQp; (void)InboundReadLimit; (void)OutboundReadLimit; (void)pPrivateData; (void)PrivateDataLength; (void)DisconnectEvent; (void)DisconnectEventContext; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_CONNECTION_ABORTED; }
static NTSTATUS AcceptEx(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, ULONG InboundReadLimit, ULONG OutboundReadLimit, CONST PVOID pPrivateData,
                         ULONG PrivateDataLength, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent, PVOID DisconnectEventContext,
                         NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkConnector; (void)pNdkQp; (void)InboundReadLimit; (void)OutboundReadLimit; (void)pPrivateData; (void)PrivateDataLength; (void)DisconnectEvent; (void)DisconnectEventContext; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_CONNECTION_ABORTED; }
static NTSTATUS Reject(NDK_CONNECTOR *pNdkConnector, CONST PVOID pPrivateData, ULONG PrivateDataLength)
{ (void)pNdkConnector; (void)pPrivateData; (void)PrivateDataLength; calls++; return STATUS_SUCCESS; }
static NTSTATUS GetConnectionData(NDK_CONNECTOR *pNdkConnector, ULONG *pInboundReadLimit, ULONG *pOutboundReadLimit, PVOID pPrivateData, ULONG *pPrivateDataLength)
{ (void)pNdkConnector; (void)pPrivateData; *pInboundReadLimit = 1; *pOutboundReadLimit = 1; *pPrivateDataLength = 148; calls++; return STATUS_SUCCESS; }
static NTSTATUS CoGetLocalAddress(NDK_CONNECTOR *pNdkConnector, PSOCKADDR pAddress, ULONG *pAddressLength)
{ (void)pNdkConnector; (void)pAddress; (void)pAddressLength; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS GetPeerAddress(NDK_CONNECTOR *pNdkConnector, PSOCKADDR pAddress, ULONG *pAddressLength)
{ (void)pNdkConnector; (void)pAddress; (void)pAddressLength; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS Disconnect(NDK_CONNECTOR *pNdkConnector, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkConnector; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_CONNECTION_INVALID; }
static NTSTATUS Listen(NDK_LISTENER *pNdkListener, CONST PSOCKADDR pAddress, ULONG AddressLength, NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext)
{ (void)pNdkListener; (void)pAddress; (void)AddressLength; (void)RequestCompletion; (void)RequestContext; calls++; return STATUS_SHARING_VIOLATION; }
static NTSTATUS LiGetLocalAddress(NDK_LISTENER *pNdkListener, PSOCKADDR pAddress, ULONG *pAddressLength)
{ (void)pNdkListener; (void)pAddress; (void)pAddressLength; calls++; return STATUS_INVALID_DEVICE_REQUEST; }
static VOID ControlConnectEvents(NDK_LISTENER *pNdkListener, BOOLEAN Pause) { (void)pNdkListener; (void)Pause; calls++; }

static const NDK_ADAPTER_DISPATCH adapter_dispatch = {
    .NdkQueryExtension = QueryExtension, .NdkQueryAdapterInfo = QueryAdapterInfo, .NdkCreateCq = CreateCq,
    .NdkCreatePd = CreatePd, .NdkCreateSharedEndpoint = CreateSharedEndpoint, .NdkCreateConnector = CreateConnector,
    .NdkCreateListener = CreateListener, .NdkBuildLAM = BuildLAM, .NdkReleaseLAM = ReleaseLAM,
};
static const NDK_CQ_DISPATCH cq_dispatch = {
    .NdkCloseCq = Close, .NdkQueryExtension = QueryExtension, .NdkResizeCq = ResizeCq, .NdkArmCq = ArmCq,
    .NdkGetCqResults = GetCqResults, .NdkControlCqInterruptModeration = ControlCqInterruptModeration,
    .NdkGetCqResultsEx = GetCqResultsEx,
};
static const NDK_PD_DISPATCH pd_dispatch = {
    .NdkClosePd = Close, .NdkQueryExtension = QueryExtension, .NdkCreateMr = CreateMr, .NdkCreateMw = CreateMw,
    .NdkCreateSrq = CreateSrq, .NdkCreateQp = CreateQp, .NdkCreateQpWithSrq = CreateQpWithSrq,
    .NdkGetPrivilegedMemoryRegionToken = GetPrivilegedMemoryRegionToken,
};
static const NDK_MR_DISPATCH mr_dispatch = {
    .NdkCloseMr = Close, .NdkQueryExtension = QueryExtension, .NdkRegisterMr = RegisterMr, .NdkDeregisterMr = DeregisterMr,
    .NdkInitializeFastRegisterMr = InitializeFastRegisterMr, .NdkGetRemoteTokenFromMr = GetRemoteTokenFromMr,
    .NdkGetLocalTokenFromMr = GetLocalTokenFromMr,
};
static const NDK_MW_DISPATCH mw_dispatch = { .NdkCloseMw = Close, .NdkQueryExtension = QueryExtension, .NdkGetRemoteTokenFromMw = GetRemoteTokenFromMw };
static const NDK_SRQ_DISPATCH srq_dispatch = { .NdkCloseSrq = Close, .NdkQueryExtension = QueryExtension, .NdkModifySrq = ModifySrq, .NdkSrqReceive = SrqReceive };
static const NDK_QP_DISPATCH qp_dispatch = {
    .NdkCloseQp = Close, .NdkQueryExtension = QueryExtension, .NdkFlush = Flush, .NdkSend = Send, .NdkReceive = Receive,
    .NdkBind = Bind, .NdkFastRegister = FastRegister, .NdkInvalidate = Invalidate, .NdkRead = Read, .NdkWrite = Write,
    .NdkSendAndInvalidate = SendAndInvalidate,
};
static const NDK_SHARED_ENDPOINT_DISPATCH se_dispatch = { .NdkCloseSharedEndpoint = Close, .NdkQueryExtension = QueryExtension, .NdkGetLocalAddress = SeGetLocalAddress };
static const NDK_CONNECTOR_DISPATCH connector_dispatch = {
    .NdkCloseConnector = Close, .NdkQueryExtension = QueryExtension, .NdkConnect = Connect,
    .NdkConnectWithSharedEndpoint = ConnectWithSharedEndpoint, .NdkCompleteConnect = CompleteConnect, .NdkAccept = Accept,
    .NdkReject = Reject, .NdkGetConnectionData = GetConnectionData, .NdkGetLocalAddress = CoGetLocalAddress,
    .NdkGetPeerAddress = GetPeerAddress, .NdkDisconnect = Disconnect, .NdkCompleteConnectEx = CompleteConnectEx,
    .NdkAcceptEx = AcceptEx,
};
static const NDK_LISTENER_DISPATCH listener_dispatch = {
    .NdkCloseListener = Close, .NdkQueryExtension = QueryExtension, .NdkListen = Listen,
    .NdkGetLocalAddress = LiGetLocalAddress, .NdkControlConnectEvents = ControlConnectEvents,
};

static NDIS_STATUS OpenAdapter(NDIS_HANDLE MiniportAdapterContext, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS Parameters, NDK_ADAPTER **ppNdkAdapter)
{
    static NDK_ADAPTER adapter;
    (void)MiniportAdapterContext;
    if (Parameters->Version.Major != 2)
        return NDIS_STATUS_BAD_VERSION;
    adapter.Header.Version.Major = 2; adapter.Header.Version.Minor = 1;
    adapter.Header.ObjectType = NdkObjectTypeAdapter; adapter.Dispatch = &adapter_dispatch;
    *ppNdkAdapter = &adapter;
    return NDIS_STATUS_SUCCESS;
}
static VOID CloseAdapter(NDIS_HANDLE MiniportAdapterContext, NDK_ADAPTER *pNdkAdapter) { (void)MiniportAdapterContext; (void)pNdkAdapter; calls++; }

/* ---- consumer callbacks ---- */
static NTSTATUS last_status;
static VOID OnCreate(PVOID Context, NTSTATUS Status, NDK_OBJECT_HEADER *pNdkObject) { (void)Context; (void)pNdkObject; last_status = Status; }
static VOID OnRequest(PVOID Context, NTSTATUS Status) { (void)Context; last_status = Status; }
static VOID OnClose(PVOID Context) { (void)Context; }
static VOID OnCq(PVOID CqNotificationContext, NTSTATUS CqStatus) { (void)CqNotificationContext; (void)CqStatus; }
static VOID OnConnect(PVOID ConnectEventContext, NDK_CONNECTOR *pNdkConnector) { (void)ConnectEventContext; (void)pNdkConnector; }
static VOID OnDisconnect(PVOID DisconnectEventContext) { (void)DisconnectEventContext; }
static VOID OnDisconnectEx(PVOID DisconnectEventContext, ULONG ProviderDisconnectReason) { (void)DisconnectEventContext; (void)ProviderDisconnectReason; }
static VOID OnSrq(PVOID SrqNotificationContext, NTSTATUS SrqStatus) { (void)SrqNotificationContext; (void)SrqStatus; }

#define EXPECT(cond) do { if (!(cond)) { printf("failed: %s (line %d)\n", #cond, __LINE__); return 1; } } while (0)

int main(void)
{
    NDIS_NDK_PROVIDER_CHARACTERISTICS chars = { { NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS,
        NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1, (USHORT)NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 },
        0, OpenAdapter, CloseAdapter };
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS params = { { 1, 0 }, 0, 0 };
    NDK_ADAPTER *adapter = NULL;
    EXPECT(chars.OpenNDKAdapterHandler(NULL, &params, &adapter) == NDIS_STATUS_BAD_VERSION);
    params.Version.Major = 2;
    EXPECT(chars.OpenNDKAdapterHandler(NULL, &params, &adapter) == NDIS_STATUS_SUCCESS);

    NDK_ADAPTER_INFO info; ULONG size = sizeof(info);
    EXPECT(adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size) == STATUS_SUCCESS);
    EXPECT(info.RdmaTechnology == NdkiWarp && (info.AdapterFlags & NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED));
    GUID g = { 0 }; NDK_VERSION v = { 1, 0 }; NDK_EXTENSION_INTERFACE ext;
    EXPECT(adapter->Dispatch->NdkQueryExtension(&adapter->Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);
    NDK_CQ *cq; GROUP_AFFINITY aff = { 1, 0, { 0, 0, 0 } };
    EXPECT(adapter->Dispatch->NdkCreateCq(adapter, 64, OnCq, NULL, &aff, OnCreate, NULL, &cq) == STATUS_INSUFFICIENT_RESOURCES);
    NDK_PD *pdp;
    EXPECT(adapter->Dispatch->NdkCreatePd(adapter, OnCreate, NULL, &pdp) == STATUS_PENDING && last_status == STATUS_INSUFFICIENT_RESOURCES);
    SOCKADDR_IN sin; memset(&sin, 0, sizeof sin); sin.sin_family = AF_INET; sin.sin_port = htons(445);
    NDK_SHARED_ENDPOINT *se;
    EXPECT(adapter->Dispatch->NdkCreateSharedEndpoint(adapter, (PSOCKADDR)&sin, sizeof sin, OnCreate, NULL, &se) == STATUS_INVALID_ADDRESS);
    NDK_CONNECTOR *conn; NDK_LISTENER *lis;
    EXPECT(!NT_SUCCESS(adapter->Dispatch->NdkCreateConnector(adapter, OnCreate, NULL, &conn)));
    EXPECT(!NT_SUCCESS(adapter->Dispatch->NdkCreateListener(adapter, OnConnect, NULL, OnCreate, NULL, &lis)));
    static char page_buf[3 * 4096];
    PMDL mdl = IoAllocateMdl(page_buf + 10, 5000, FALSE, FALSE, NULL);
    ULONG lam_size = 0, fbo = 0;
    EXPECT(adapter->Dispatch->NdkBuildLAM(adapter, mdl, 5000, OnRequest, NULL, NULL, &lam_size, &fbo) == STATUS_BUFFER_TOO_SMALL);
    NDK_LOGICAL_ADDRESS_MAPPING *lam = (NDK_LOGICAL_ADDRESS_MAPPING *)malloc(lam_size);
    EXPECT(adapter->Dispatch->NdkBuildLAM(adapter, mdl, 5000, OnRequest, NULL, lam, &lam_size, &fbo) == STATUS_SUCCESS);
    EXPECT(lam->AdapterPageCount >= 2 && fbo == MmGetMdlByteOffset(mdl));
    adapter->Dispatch->NdkReleaseLAM(adapter, lam);
    free(lam);

    /* Objects of every other type, wired to the toy tables, each slot called once. */
    NDK_CQ c = { { { 2, 1 }, NdkObjectTypeCq, { { 0 } } }, &cq_dispatch };
    NDK_RESULT r[4]; NDK_RESULT_EX rx[4];
    c.Dispatch->NdkArmCq(&c, NDK_CQ_NOTIFY_ANY);
    EXPECT(c.Dispatch->NdkGetCqResults(&c, r, 4) == 0 && c.Dispatch->NdkGetCqResultsEx(&c, rx, 4) == 0);
    EXPECT(c.Dispatch->NdkResizeCq(&c, 128, OnRequest, NULL) == STATUS_NOT_SUPPORTED);
    EXPECT(c.Dispatch->NdkControlCqInterruptModeration(&c, 10, 4) == STATUS_NOT_SUPPORTED);
    EXPECT(c.Dispatch->NdkQueryExtension(&c.Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);

    NDK_PD pd = { { { 2, 1 }, NdkObjectTypePd, { { 0 } } }, &pd_dispatch };
    UINT32 token; NDK_MR *mrp; NDK_MW *mwp; NDK_SRQ *srqp; NDK_QP *qpp;
    pd.Dispatch->NdkGetPrivilegedMemoryRegionToken(&pd, &token);
    EXPECT(token == 0x1234);
    EXPECT(!NT_SUCCESS(pd.Dispatch->NdkCreateMr(&pd, TRUE, OnCreate, NULL, &mrp)));
    EXPECT(!NT_SUCCESS(pd.Dispatch->NdkCreateMw(&pd, OnCreate, NULL, &mwp)));
    EXPECT(pd.Dispatch->NdkCreateSrq(&pd, 16, 2, 4, OnSrq, NULL, NULL, OnCreate, NULL, &srqp) == STATUS_INVALID_PARAMETER);
    EXPECT(pd.Dispatch->NdkCreateQp(&pd, &c, &c, NULL, 16, 16, 2, 2, 64, OnCreate, NULL, &qpp) == STATUS_INVALID_PARAMETER);
    EXPECT(pd.Dispatch->NdkCreateQpWithSrq(&pd, &c, &c, NULL, NULL, 16, 2, 64, OnCreate, NULL, &qpp) == STATUS_INVALID_PARAMETER);

    NDK_MR mr = { { { 2, 1 }, NdkObjectTypeMr, { { 0 } } }, &mr_dispatch };
    EXPECT(mr.Dispatch->NdkRegisterMr(&mr, mdl, 5000, NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_RDMA_READ_SINK, OnRequest, NULL) == STATUS_SUCCESS);
    EXPECT(mr.Dispatch->NdkGetLocalTokenFromMr(&mr) == 2 && mr.Dispatch->NdkGetRemoteTokenFromMr(&mr) == 1);
    EXPECT(mr.Dispatch->NdkDeregisterMr(&mr, OnRequest, NULL) == STATUS_SUCCESS);
    EXPECT(mr.Dispatch->NdkInitializeFastRegisterMr(&mr, 1u << 20, TRUE, OnRequest, NULL) == STATUS_IMPLEMENTATION_LIMIT);
    IoFreeMdl(mdl);

    NDK_MW mw = { { { 2, 1 }, NdkObjectTypeMw, { { 0 } } }, &mw_dispatch };
    EXPECT(mw.Dispatch->NdkGetRemoteTokenFromMw(&mw) == 3);
    NDK_SRQ srq = { { { 2, 1 }, NdkObjectTypeSrq, { { 0 } } }, &srq_dispatch };
    NDK_SGE sge; sge.VirtualAddress = page_buf; sge.Length = 8; sge.MemoryRegionToken = 2;
    EXPECT(srq.Dispatch->NdkModifySrq(&srq, 0, 2, OnRequest, NULL) == STATUS_SUCCESS);
    EXPECT(srq.Dispatch->NdkSrqReceive(&srq, NULL, &sge, 1) == STATUS_SUCCESS);

    NDK_QP qp = { { { 2, 1 }, NdkObjectTypeQp, { { 0 } } }, &qp_dispatch };
    NDK_LOGICAL_ADDRESS pages[1]; pages[0].QuadPart = 0;
    EXPECT(qp.Dispatch->NdkReceive(&qp, NULL, &sge, 1) == STATUS_SUCCESS);
    EXPECT(qp.Dispatch->NdkSend(&qp, NULL, &sge, 1, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE) == STATUS_CONNECTION_INVALID);
    EXPECT(qp.Dispatch->NdkSendAndInvalidate(&qp, NULL, &sge, 1, NDK_OP_FLAG_DEFER, 0x100) == STATUS_CONNECTION_INVALID);
    EXPECT(qp.Dispatch->NdkBind(&qp, NULL, &mr, &mw, page_buf, 8, NDK_OP_FLAG_ALLOW_REMOTE_READ) == STATUS_CONNECTION_INVALID);
    EXPECT(qp.Dispatch->NdkFastRegister(&qp, NULL, &mr, 1, pages, 0, 4096, NULL, NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == STATUS_CONNECTION_INVALID);
    EXPECT(qp.Dispatch->NdkInvalidate(&qp, NULL, &mw.Header, NDK_OP_FLAG_SILENT_SUCCESS) == STATUS_CONNECTION_INVALID);
    EXPECT(qp.Dispatch->NdkRead(&qp, NULL, &sge, 1, 0x1000, 7, NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) == STATUS_CONNECTION_INVALID);
    EXPECT(qp.Dispatch->NdkWrite(&qp, NULL, &sge, 1, 0x1000, 7, 0) == STATUS_CONNECTION_INVALID);
    qp.Dispatch->NdkFlush(&qp);

    NDK_SHARED_ENDPOINT sep = { { { 2, 1 }, NdkObjectTypeSharedEndpoint, { { 0 } } }, &se_dispatch };
    ULONG alen = 0;
    EXPECT(sep.Dispatch->NdkGetLocalAddress(&sep, NULL, &alen) == STATUS_BUFFER_TOO_SMALL && alen == sizeof(SOCKADDR_IN6));

    NDK_CONNECTOR co = { { { 2, 1 }, NdkObjectTypeConnector, { { 0 } } }, &connector_dispatch };
    char pdata[16] = "hello";
    EXPECT(co.Dispatch->NdkConnect(&co, &qp, (PSOCKADDR)&sin, sizeof sin, (PSOCKADDR)&sin, sizeof sin, 1, 1, pdata, 5, OnRequest, NULL) == STATUS_PENDING);
    EXPECT(last_status == STATUS_CONNECTION_REFUSED);
    EXPECT(co.Dispatch->NdkConnectWithSharedEndpoint(&co, &qp, &sep, (PSOCKADDR)&sin, sizeof sin, 1, 1, NULL, 0, OnRequest, NULL) == STATUS_HOST_UNREACHABLE);
    EXPECT(co.Dispatch->NdkCompleteConnect(&co, OnDisconnect, NULL, OnRequest, NULL) == STATUS_CONNECTION_INVALID);
    EXPECT(co.Dispatch->NdkCompleteConnectEx(&co, OnDisconnectEx, NULL, OnRequest, NULL) == STATUS_CONNECTION_INVALID);
    EXPECT(co.Dispatch->NdkAccept(&co, &qp, 1, 1, NULL, 0, OnDisconnect, NULL, OnRequest, NULL) == STATUS_CONNECTION_ABORTED);
    EXPECT(co.Dispatch->NdkAcceptEx(&co, &qp, 1, 1, NULL, 0, OnDisconnectEx, NULL, OnRequest, NULL) == STATUS_CONNECTION_ABORTED);
    EXPECT(co.Dispatch->NdkReject(&co, pdata, 5) == STATUS_SUCCESS);
    ULONG ird, ord, plen = 0;
    EXPECT(co.Dispatch->NdkGetConnectionData(&co, &ird, &ord, NULL, &plen) == STATUS_SUCCESS && plen == 148);
    SOCKADDR_INET sa; ULONG salen = sizeof sa;
    EXPECT(co.Dispatch->NdkGetLocalAddress(&co, (PSOCKADDR)&sa, &salen) == STATUS_CONNECTION_INVALID);
    EXPECT(co.Dispatch->NdkGetPeerAddress(&co, (PSOCKADDR)&sa, &salen) == STATUS_CONNECTION_INVALID);
    EXPECT(co.Dispatch->NdkDisconnect(&co, OnRequest, NULL) == STATUS_CONNECTION_INVALID);

    NDK_LISTENER li = { { { 2, 1 }, NdkObjectTypeListener, { { 0 } } }, &listener_dispatch };
    EXPECT(li.Dispatch->NdkListen(&li, (PSOCKADDR)&sin, sizeof sin, OnRequest, NULL) == STATUS_SHARING_VIOLATION);
    EXPECT(li.Dispatch->NdkGetLocalAddress(&li, (PSOCKADDR)&sa, &salen) == STATUS_INVALID_DEVICE_REQUEST);
    li.Dispatch->NdkControlConnectEvents(&li, TRUE);

    /* query-extension through every remaining table */
    EXPECT(pd.Dispatch->NdkQueryExtension(&pd.Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);
    EXPECT(mr.Dispatch->NdkQueryExtension(&mr.Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);
    EXPECT(mw.Dispatch->NdkQueryExtension(&mw.Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);
    EXPECT(srq.Dispatch->NdkQueryExtension(&srq.Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);
    EXPECT(qp.Dispatch->NdkQueryExtension(&qp.Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);
    EXPECT(sep.Dispatch->NdkQueryExtension(&sep.Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);
    EXPECT(co.Dispatch->NdkQueryExtension(&co.Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);
    EXPECT(li.Dispatch->NdkQueryExtension(&li.Header, &g, v, &ext) == STATUS_NOT_SUPPORTED);

    /* every close slot */
    EXPECT(c.Dispatch->NdkCloseCq(&c.Header, OnClose, NULL) == STATUS_SUCCESS);
    EXPECT(pd.Dispatch->NdkClosePd(&pd.Header, OnClose, NULL) == STATUS_SUCCESS);
    EXPECT(mr.Dispatch->NdkCloseMr(&mr.Header, OnClose, NULL) == STATUS_SUCCESS);
    EXPECT(mw.Dispatch->NdkCloseMw(&mw.Header, OnClose, NULL) == STATUS_SUCCESS);
    EXPECT(srq.Dispatch->NdkCloseSrq(&srq.Header, OnClose, NULL) == STATUS_SUCCESS);
    EXPECT(qp.Dispatch->NdkCloseQp(&qp.Header, OnClose, NULL) == STATUS_SUCCESS);
    EXPECT(sep.Dispatch->NdkCloseSharedEndpoint(&sep.Header, OnClose, NULL) == STATUS_SUCCESS);
    EXPECT(co.Dispatch->NdkCloseConnector(&co.Header, OnClose, NULL) == STATUS_SUCCESS);
    EXPECT(li.Dispatch->NdkCloseListener(&li.Header, OnClose, NULL) == STATUS_SUCCESS);
    chars.CloseNDKAdapterHandler(NULL, adapter);

    EXPECT(calls == 72);   /* all 70 slots, NdkBuildLAM twice, and the adapter close handler */
    printf("ok: %d provider calls through every dispatch slot\n", calls);
    return 0;
}
