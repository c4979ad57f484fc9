/*
 * rdmapair_client.c - the connecting half of the pair (rdmapair.h). DriverEntry connects to
 * the server, reads the first half of its region with an RDMA Read and checks every byte,
 * writes the second half with an RDMA Write, and exchanges DONE/ACK messages; DriverUnload
 * disconnects and closes everything. The data region is an ordinary MR registered over an MDL
 * built for nonpaged pool.
 */
#include "rdmapair.h"

#define CLIENT_DONE_SEED 0x444F4E45u

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD ClientUnload;

static PPAIR_CONTEXT ClientContext;

static NTSTATUS ClientRegisterData(PPAIR_CONTEXT ctx)
{
    NDK_OBJECT_HEADER *late;
    NTSTATUS status;

    PAGED_CODE();
    PairRequestInit(&ctx->Req);
    status = ctx->Pd->Dispatch->NdkCreateMr(ctx->Pd, FALSE, PairCreateDone, &ctx->Req, &ctx->DataMr);
    status = PairCreated(ctx, status, &late, "NdkCreateMr (data)");
    if (!NT_SUCCESS(status))
        return status;
    if (late)
        ctx->DataMr = (NDK_MR *)late;
    PairRequestInit(&ctx->Req);
    status = ctx->DataMr->Dispatch->NdkRegisterMr(ctx->DataMr, ctx->DataMdl, PAIR_DATA_SIZE,
                                                  NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK,
                                                  PairRequestDone, &ctx->Req);
    status = PairFinish(ctx, &ctx->Req, status, "NdkRegisterMr (data)");
    if (NT_SUCCESS(status))
        ctx->DataToken = ctx->DataMr->Dispatch->NdkGetLocalTokenFromMr(ctx->DataMr);
    return status;
}

static NTSTATUS ClientConnect(PPAIR_CONTEXT ctx)
{
    NDK_OBJECT_HEADER *late;
    UCHAR peerData[256];   /* the largest private data NDK carries (MaxCallerData) */
    ULONG peerLength = sizeof(peerData);
    ULONG ird = 0, ord = 0;
    NTSTATUS status;
    ULONG length = ctx->Address.si_family == AF_INET ? sizeof(SOCKADDR_IN) : sizeof(SOCKADDR_IN6);

    PAGED_CODE();
    PairRequestInit(&ctx->Req);
    status = ctx->Adapter->Dispatch->NdkCreateConnector(ctx->Adapter, PairCreateDone, &ctx->Req, &ctx->Connector);
    status = PairCreated(ctx, status, &late, "NdkCreateConnector");
    if (!NT_SUCCESS(status))
        return status;
    if (late)
        ctx->Connector = (NDK_CONNECTOR *)late;
    PairRequestInit(&ctx->Req);
    status = ctx->Connector->Dispatch->NdkConnect(ctx->Connector, ctx->Qp, (PSOCKADDR)&ctx->LocalAddress, length,
                                                  (PSOCKADDR)&ctx->Address, length, 4, 4, (PVOID)PAIR_PRIVATE_DATA,
                                                  sizeof(PAIR_PRIVATE_DATA) - 1, PairRequestDone, &ctx->Req);
    status = PairFinish(ctx, &ctx->Req, status, "NdkConnect");
    if (!NT_SUCCESS(status))
        return status;
    status = ctx->Connector->Dispatch->NdkGetConnectionData(ctx->Connector, &ird, &ord, peerData, &peerLength);
    if (!NT_SUCCESS(status) || peerLength < sizeof(PAIR_PRIVATE_DATA) - 1 ||
        RtlCompareMemory(peerData, PAIR_PRIVATE_DATA, sizeof(PAIR_PRIVATE_DATA) - 1) != sizeof(PAIR_PRIVATE_DATA) - 1) {
        PairLog(ctx, "the server's private data is not ours (0x%08X, %lu bytes)", status, (unsigned long)peerLength);
        return NT_SUCCESS(status) ? STATUS_DATA_ERROR : status;
    }
    PairRequestInit(&ctx->Req);
    status = ctx->Connector->Dispatch->NdkCompleteConnect(ctx->Connector, PairDisconnectEvent, ctx, PairRequestDone,
                                                          &ctx->Req);
    status = PairFinish(ctx, &ctx->Req, status, "NdkCompleteConnect");
    if (NT_SUCCESS(status)) {
        ctx->Connected = TRUE;
        PairLog(ctx, "connected (inbound read limit %lu, outbound %lu)", (unsigned long)ird, (unsigned long)ord);
    }
    return status;
}

static NTSTATUS ClientRun(PPAIR_CONTEXT ctx)
{
    PAIR_MSG hello, msg;
    NTSTATUS status;
    ULONG bad;

    PAGED_CODE();
    status = ClientRegisterData(ctx);
    if (NT_SUCCESS(status))
        status = PairPostReceive(ctx, 0);   /* HELLO */
    if (NT_SUCCESS(status))
        status = PairPostReceive(ctx, 1);   /* ACK */
    if (NT_SUCCESS(status))
        status = ClientConnect(ctx);
    if (NT_SUCCESS(status))
        status = PairWaitReceive(ctx, 0, PairMsgHello, &hello);
    if (!NT_SUCCESS(status))
        return status;
    if (hello.Length != PAIR_DATA_SIZE) {
        PairLog(ctx, "the server exposes %lu bytes, expected %u", (unsigned long)hello.Length, PAIR_DATA_SIZE);
        return STATUS_DATA_ERROR;
    }

    /* RDMA Read of the first half, every byte checked. */
    RtlZeroMemory(ctx->Buffer, PAIR_DATA_SIZE);
    status = PairRdma(ctx, FALSE, 0, hello.RemoteAddress, hello.RemoteToken, PAIR_HALF);
    if (!NT_SUCCESS(status))
        return status;
    bad = PairCheckPattern(ctx->Buffer, PAIR_HALF, hello.ReadSeed);
    if (bad != PAIR_HALF) {
        PairLog(ctx, "RDMA Read: byte %lu differs from the server's pattern", (unsigned long)bad);
        return STATUS_DATA_ERROR;
    }

    /* RDMA Write of the second half; the server checks it after DONE. */
    PairFillPattern(ctx->Buffer + PAIR_HALF, PAIR_HALF, hello.WriteSeed);
    status = PairRdma(ctx, TRUE, PAIR_HALF, hello.RemoteAddress + PAIR_HALF, hello.RemoteToken, PAIR_HALF);
    if (!NT_SUCCESS(status))
        return status;

    RtlZeroMemory(&msg, sizeof(msg));
    msg.Magic = PAIR_MAGIC;
    msg.Type = PairMsgDone;
    msg.Seed = CLIENT_DONE_SEED;
    status = PairSendMessage(ctx, &msg);
    if (NT_SUCCESS(status))
        status = PairWaitReceive(ctx, 1, PairMsgAck, &msg);
    if (!NT_SUCCESS(status))
        return status;
    if (!NT_SUCCESS(msg.Status)) {
        PairLog(ctx, "the server found the written half wrong (0x%08X)", msg.Status);
        return msg.Status;
    }
    PairLog(ctx, "PASS: Send/Receive 3 x %u bytes, RDMA Read and RDMA Write of %u bytes each, every byte checked",
            PAIR_MSG_SIZE, PAIR_HALF);
    if (ctx->BenchTotal) {
        /* The server's region stays registered until we disconnect: Write over all of it. */
        ULONG count = ctx->BenchTotal;
        ULONG64 us = 0;
        status = PairBenchWrites(ctx, hello.RemoteAddress, hello.RemoteToken, count, &us);
        if (!NT_SUCCESS(status))
            return status;
        ULONG64 mbps = us ? (ULONG64)count * PAIR_DATA_SIZE * 8 / us : 0;   /* bits per us = Mbit/s */
        PairLog(ctx, "bench: %lu x %u-byte RDMA Writes, %u in flight, in %llu us: %llu Mbit/s", (unsigned long)count,
                PAIR_DATA_SIZE, PAIR_BENCH_DEPTH, (unsigned long long)us, (unsigned long long)mbps);
    }
    return STATUS_SUCCESS;
}

static VOID ClientUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
    PAGED_CODE();
    if (ClientContext) {
        PairTeardown(ClientContext);
        ExFreePoolWithTag(ClientContext, PAIR_TAG);
        ClientContext = NULL;
    }
}

NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    PPAIR_CONTEXT ctx;
    NTSTATUS status;

    PAGED_CODE();
    ctx = PairContextAllocate("client");
    if (!ctx)
        return STATUS_INSUFFICIENT_RESOURCES;

    status = PairReadParameters(RegistryPath, ctx, TRUE);
    if (NT_SUCCESS(status)) {
        /* Optional: BenchWrites=N times 64 KiB RDMA Writes after the checked exchange. */
        HANDLE key;
        if (NT_SUCCESS(PairOpenParameters(RegistryPath, &key))) {
            if (!NT_SUCCESS(PairQueryUlong(key, L"BenchWrites", &ctx->BenchTotal)))
                ctx->BenchTotal = 0;
            ZwClose(key);
        }
    }
    if (NT_SUCCESS(status))
        status = PairOpenAdapter(ctx);
    if (NT_SUCCESS(status))
        status = PairCreateResources(ctx);
    if (NT_SUCCESS(status))
        status = ClientRun(ctx);
    if (!NT_SUCCESS(status)) {
        PairLog(ctx, "FAIL (0x%08X)", status);
        PairTeardown(ctx);   /* no DriverUnload after a failed DriverEntry */
        ExFreePoolWithTag(ctx, PAIR_TAG);
        return status;
    }
    ClientContext = ctx;
    DriverObject->DriverUnload = ClientUnload;
    return STATUS_SUCCESS;
}
