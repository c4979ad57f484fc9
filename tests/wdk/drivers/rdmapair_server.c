/*
 * rdmapair_server.c - the listening half of the pair (rdmapair.h). DriverEntry opens the
 * adapter through WSK's NDK extension, listens, and waits for the exchange; the connect event
 * (DISPATCH_LEVEL) hands the accept to an IO work item (PASSIVE_LEVEL, where it may wait). The
 * 64 KiB data region is exposed through a fast-register MR over the region's logical address
 * mapping (NdkBuildLAM). DriverUnload closes everything.
 */
#include "rdmapair.h"

#define SERVER_READ_SEED  0x5EED0001u
#define SERVER_WRITE_SEED 0x5EED0002u

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD ServerUnload;
static IO_WORKITEM_ROUTINE ServerAcceptWorker;

static PPAIR_CONTEXT ServerContext;

/* PASSIVE_LEVEL, from the work item: accept with our private data, after checking the
 * client's. Releases the rundown reference the connect event took. */
static VOID ServerAcceptWorker(PDEVICE_OBJECT DeviceObject, PVOID Context)
{
    PPAIR_CONTEXT ctx = (PPAIR_CONTEXT)Context;
    UCHAR peerData[256];   /* the largest private data NDK carries (MaxCallerData) */
    ULONG peerLength = sizeof(peerData);
    ULONG ird = 0, ord = 0;
    NTSTATUS status;

    UNREFERENCED_PARAMETER(DeviceObject);
    PAGED_CODE();
    status = ctx->Connector->Dispatch->NdkGetConnectionData(ctx->Connector, &ird, &ord, peerData, &peerLength);
    if (NT_SUCCESS(status) && (peerLength < sizeof(PAIR_PRIVATE_DATA) - 1 ||
                               RtlCompareMemory(peerData, PAIR_PRIVATE_DATA, sizeof(PAIR_PRIVATE_DATA) - 1) !=
                                   sizeof(PAIR_PRIVATE_DATA) - 1)) {
        PairLog(ctx, "the client's private data is not ours (%lu bytes)", (unsigned long)peerLength);
        status = STATUS_DATA_ERROR;
    }
    if (NT_SUCCESS(status))
        status = PairPostReceive(ctx, 0);
    if (NT_SUCCESS(status)) {
        PairRequestInit(&ctx->Req);
        status = ctx->Connector->Dispatch->NdkAccept(ctx->Connector, ctx->Qp, 4, 4, (PVOID)PAIR_PRIVATE_DATA,
                                                      sizeof(PAIR_PRIVATE_DATA) - 1, PairDisconnectEvent, ctx,
                                                      PairRequestDone, &ctx->Req);
        status = PairFinish(ctx, &ctx->Req, status, "NdkAccept");
    }
    if (NT_SUCCESS(status))
        ctx->Connected = TRUE;
    ctx->AcceptStatus = status;
    KeSetEvent(&ctx->Accepted, IO_NO_INCREMENT, FALSE);
    ExReleaseRundownProtection(&ctx->Rundown);
}

/* NDK_FN_CONNECT_EVENT_CALLBACK: DISPATCH_LEVEL, so nothing here waits. The first connection
 * is taken; any other is rejected. */
static VOID ServerConnectEvent(PVOID Context, NDK_CONNECTOR *Connector)
{
    PPAIR_CONTEXT ctx = (PPAIR_CONTEXT)Context;
    KLOCK_QUEUE_HANDLE lockHandle;
    BOOLEAN take = FALSE;

    if (ExAcquireRundownProtection(&ctx->Rundown)) {
        KeAcquireInStackQueuedSpinLock(&ctx->StateLock, &lockHandle);
        if (ctx->Connector == NULL) {
            ctx->Connector = Connector;
            take = TRUE;
        }
        KeReleaseInStackQueuedSpinLock(&lockHandle);
        if (take) {
            /* The work item keeps the rundown reference until it has run. */
            IoQueueWorkItem(ctx->WorkItem, ServerAcceptWorker, DelayedWorkQueue, ctx);
            return;
        }
        ExReleaseRundownProtection(&ctx->Rundown);
    }
    Connector->Dispatch->NdkReject(Connector, NULL, 0);
    Connector->Dispatch->NdkCloseConnector(&Connector->Header, NULL, NULL);
}

/* Exposes the data region: LAM, fast-register MR, NdkFastRegister on the connected QP. */
static NTSTATUS ServerExposeRegion(PPAIR_CONTEXT ctx, UINT32 *RemoteToken, ULONG64 *RemoteAddress)
{
    NDK_ADAPTER *adapter = ctx->Adapter;
    NDK_OBJECT_HEADER *late;
    ULONG lamSize = 0, fbo = 0;
    NTSTATUS status;

    PAGED_CODE();
    PairRequestInit(&ctx->Req);
    status = adapter->Dispatch->NdkBuildLAM(adapter, ctx->DataMdl, PAIR_DATA_SIZE, PairRequestDone, &ctx->Req, NULL,
                                            &lamSize, &fbo);
    if (status != STATUS_BUFFER_TOO_SMALL) {
        PairLog(ctx, "NdkBuildLAM without a buffer answered 0x%08X, expected STATUS_BUFFER_TOO_SMALL", status);
        return NT_SUCCESS(status) ? STATUS_UNSUCCESSFUL : status;
    }
    ctx->Lam = (NDK_LOGICAL_ADDRESS_MAPPING *)ExAllocatePool2(POOL_FLAG_NON_PAGED, lamSize, PAIR_TAG);
    if (!ctx->Lam)
        return STATUS_INSUFFICIENT_RESOURCES;
    PairRequestInit(&ctx->Req);
    status = adapter->Dispatch->NdkBuildLAM(adapter, ctx->DataMdl, PAIR_DATA_SIZE, PairRequestDone, &ctx->Req, ctx->Lam,
                                            &lamSize, &fbo);
    status = PairFinish(ctx, &ctx->Req, status, "NdkBuildLAM");
    if (!NT_SUCCESS(status)) {
        ExFreePoolWithTag(ctx->Lam, PAIR_TAG);
        ctx->Lam = NULL;
        return status;
    }
    if (ctx->Lam->AdapterPageCount > ctx->AdapterInfo.FRMRPageCount) {
        PairLog(ctx, "the region needs %lu pages, the adapter's fast-register MRs take %lu",
                (unsigned long)ctx->Lam->AdapterPageCount, (unsigned long)ctx->AdapterInfo.FRMRPageCount);
        return STATUS_NOT_SUPPORTED;
    }
    PairRequestInit(&ctx->Req);
    status = ctx->Pd->Dispatch->NdkCreateMr(ctx->Pd, TRUE, PairCreateDone, &ctx->Req, &ctx->DataMr);
    status = PairCreated(ctx, status, &late, "NdkCreateMr (fast register)");
    if (!NT_SUCCESS(status))
        return status;
    if (late)
        ctx->DataMr = (NDK_MR *)late;
    PairRequestInit(&ctx->Req);
    status = ctx->DataMr->Dispatch->NdkInitializeFastRegisterMr(ctx->DataMr, ctx->Lam->AdapterPageCount, TRUE,
                                                               PairRequestDone, &ctx->Req);
    status = PairFinish(ctx, &ctx->Req, status, "NdkInitializeFastRegisterMr");
    if (!NT_SUCCESS(status))
        return status;
    PairRequestInit(&ctx->RdmaReq);
    status = ctx->Qp->Dispatch->NdkFastRegister(ctx->Qp, &ctx->RdmaReq, ctx->DataMr, ctx->Lam->AdapterPageCount,
                                                ctx->Lam->AdapterPageArray, fbo, PAIR_DATA_SIZE,
                                                MmGetMdlVirtualAddress(ctx->DataMdl),
                                                NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_READ |
                                                    NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    if (!NT_SUCCESS(status)) {
        PairLog(ctx, "NdkFastRegister failed (0x%08X)", status);
        return status;
    }
    /* The region is named by its own virtual address: iWARP devices behind the verbs provider
     * (siw) cannot map another base for a peer (docs/providers.md). Its completion arrives on
     * the CQ like any work request's. */
    LARGE_INTEGER timeout;
    timeout.QuadPart = -10000LL * PAIR_WAIT_MS;
    status = KeWaitForSingleObject(&ctx->RdmaReq.Event, Executive, KernelMode, FALSE, &timeout);
    if (status != STATUS_SUCCESS || !NT_SUCCESS(ctx->RdmaReq.Status)) {
        PairLog(ctx, "the fast register did not complete (wait 0x%08X, status 0x%08X)", status, ctx->RdmaReq.Status);
        return status == STATUS_TIMEOUT ? STATUS_IO_TIMEOUT : ctx->RdmaReq.Status;
    }
    ctx->DataToken = ctx->DataMr->Dispatch->NdkGetLocalTokenFromMr(ctx->DataMr);
    *RemoteToken = ctx->DataMr->Dispatch->NdkGetRemoteTokenFromMr(ctx->DataMr);
    *RemoteAddress = (ULONG64)(ULONG_PTR)MmGetMdlVirtualAddress(ctx->DataMdl);
    return STATUS_SUCCESS;
}

/* Listen, accept, expose, then HELLO -> (client's Read and Write) -> DONE -> check -> ACK. */
static NTSTATUS ServerRun(PPAIR_CONTEXT ctx)
{
    NDK_OBJECT_HEADER *late;
    PAIR_MSG msg;
    UINT32 remoteToken = 0;
    ULONG64 remoteAddress = 0;
    NTSTATUS status;
    ULONG addressLength = ctx->Address.si_family == AF_INET ? sizeof(SOCKADDR_IN) : sizeof(SOCKADDR_IN6);
    LARGE_INTEGER timeout;

    PAGED_CODE();
    PairRequestInit(&ctx->Req);
    status = ctx->Adapter->Dispatch->NdkCreateListener(ctx->Adapter, ServerConnectEvent, ctx, PairCreateDone,
                                                        &ctx->Req, &ctx->Listener);
    status = PairCreated(ctx, status, &late, "NdkCreateListener");
    if (!NT_SUCCESS(status))
        return status;
    if (late)
        ctx->Listener = (NDK_LISTENER *)late;
    PairRequestInit(&ctx->Req);
    status = ctx->Listener->Dispatch->NdkListen(ctx->Listener, (PSOCKADDR)&ctx->Address, addressLength,
                                                PairRequestDone, &ctx->Req);
    status = PairFinish(ctx, &ctx->Req, status, "NdkListen");
    if (!NT_SUCCESS(status))
        return status;
    PairLog(ctx, "listening on port %u of interface index %lu", RtlUshortByteSwap(ctx->Address.Ipv4.sin_port),
            (unsigned long)ctx->IfIndex);

    timeout.QuadPart = -10000LL * 3 * PAIR_WAIT_MS;   /* the client starts after us */
    status = KeWaitForSingleObject(&ctx->Accepted, Executive, KernelMode, FALSE, &timeout);
    if (status == STATUS_TIMEOUT) {
        PairLog(ctx, "no client connected");
        return STATUS_IO_TIMEOUT;
    }
    if (!NT_SUCCESS(ctx->AcceptStatus))
        return ctx->AcceptStatus;
    PairLog(ctx, "accepted a connection");

    status = ServerExposeRegion(ctx, &remoteToken, &remoteAddress);
    if (!NT_SUCCESS(status))
        return status;
    PairFillPattern(ctx->Buffer, PAIR_HALF, SERVER_READ_SEED);
    RtlZeroMemory(ctx->Buffer + PAIR_HALF, PAIR_HALF);

    RtlZeroMemory(&msg, sizeof(msg));
    msg.Magic = PAIR_MAGIC;
    msg.Type = PairMsgHello;
    msg.RemoteAddress = remoteAddress;
    msg.RemoteToken = remoteToken;
    msg.Length = PAIR_DATA_SIZE;
    msg.ReadSeed = SERVER_READ_SEED;
    msg.WriteSeed = SERVER_WRITE_SEED;
    msg.Seed = 0x48454C4Fu;
    status = PairSendMessage(ctx, &msg);
    if (!NT_SUCCESS(status))
        return status;

    status = PairWaitReceive(ctx, 0, PairMsgDone, &msg);
    if (!NT_SUCCESS(status))
        return status;
    ULONG bad = PairCheckPattern(ctx->Buffer + PAIR_HALF, PAIR_HALF, SERVER_WRITE_SEED);
    if (bad != PAIR_HALF)
        PairLog(ctx, "RDMA Write: byte %lu of the written half differs from the pattern", (unsigned long)bad);
    NTSTATUS verdict = bad == PAIR_HALF ? STATUS_SUCCESS : STATUS_DATA_ERROR;

    RtlZeroMemory(&msg, sizeof(msg));
    msg.Magic = PAIR_MAGIC;
    msg.Type = PairMsgAck;
    msg.Status = verdict;
    msg.Seed = 0x41434B21u;
    status = PairSendMessage(ctx, &msg);
    if (!NT_SUCCESS(status))
        return status;
    if (!NT_SUCCESS(verdict))
        return verdict;
    /* The client disconnects once it has the ACK. */
    status = KeWaitForSingleObject(&ctx->PeerDisconnected, Executive, KernelMode, FALSE, &timeout);
    if (status == STATUS_TIMEOUT)
        PairLog(ctx, "the client did not disconnect; disconnecting from this side");
    PairLog(ctx, "PASS: Send/Receive 3 x %u bytes, RDMA Read and RDMA Write of %u bytes each, every byte checked",
            PAIR_MSG_SIZE, PAIR_HALF);
    return STATUS_SUCCESS;
}

static VOID ServerFree(PPAIR_CONTEXT ctx, PDRIVER_OBJECT DriverObject)
{
    PairTeardown(ctx);
    if (ctx->WorkItem)
        IoFreeWorkItem(ctx->WorkItem);
    if (ctx->Device)
        IoDeleteDevice(ctx->Device);
    ExFreePoolWithTag(ctx, PAIR_TAG);
    UNREFERENCED_PARAMETER(DriverObject);
}

static VOID ServerUnload(PDRIVER_OBJECT DriverObject)
{
    PAGED_CODE();
    if (ServerContext) {
        ServerFree(ServerContext, DriverObject);
        ServerContext = NULL;
    }
}

NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    PPAIR_CONTEXT ctx;
    NTSTATUS status;

    PAGED_CODE();
    ctx = PairContextAllocate("server");
    if (!ctx)
        return STATUS_INSUFFICIENT_RESOURCES;

    status = IoCreateDevice(DriverObject, 0, NULL, FILE_DEVICE_NETWORK, FILE_DEVICE_SECURE_OPEN, FALSE, &ctx->Device);
    if (NT_SUCCESS(status)) {
        ctx->WorkItem = IoAllocateWorkItem(ctx->Device);
        if (!ctx->WorkItem)
            status = STATUS_INSUFFICIENT_RESOURCES;
    }
    if (NT_SUCCESS(status))
        status = PairReadParameters(RegistryPath, ctx, FALSE);
    if (NT_SUCCESS(status))
        status = PairOpenAdapter(ctx);
    if (NT_SUCCESS(status))
        status = PairCreateResources(ctx);
    if (NT_SUCCESS(status))
        status = ServerRun(ctx);
    if (!NT_SUCCESS(status)) {
        PairLog(ctx, "FAIL (0x%08X)", status);
        ServerFree(ctx, DriverObject);   /* no DriverUnload after a failed DriverEntry */
        return status;
    }
    ServerContext = ctx;
    DriverObject->DriverUnload = ServerUnload;
    return STATUS_SUCCESS;
}
