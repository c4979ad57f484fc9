/*
 * rdmapair_ndk.c - the NDK plumbing both drivers share: waiting at PASSIVE_LEVEL for
 * completions that arrive at DISPATCH_LEVEL (KEVENTs), the CQ handler (an in-stack queued spin
 * lock serialises NdkArmCq and NdkGetCqResults, as "NDKPI Completion Handling Requirements"
 * asks), the resources, the messages, the RDMA operations and the teardown.
 */
#include "rdmapair.h"

PPAIR_CONTEXT PairContextAllocate(const char *Name)
{
    PPAIR_CONTEXT ctx = (PPAIR_CONTEXT)ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(PAIR_CONTEXT), PAIR_TAG);
    if (!ctx)
        return NULL;   /* ExAllocatePool2 zeroes what it returns */
    ctx->Name = Name;
    ExInitializeRundownProtection(&ctx->Rundown);
    KeInitializeSpinLock(&ctx->CqLock);
    KeInitializeSpinLock(&ctx->StateLock);
    KeInitializeEvent(&ctx->CqFailed, NotificationEvent, FALSE);
    KeInitializeEvent(&ctx->Accepted, NotificationEvent, FALSE);
    KeInitializeEvent(&ctx->PeerDisconnected, NotificationEvent, FALSE);
    return ctx;
}

VOID PairRequestInit(PPAIR_REQUEST Req)
{
    KeInitializeEvent(&Req->Event, NotificationEvent, FALSE);
    Req->Status = STATUS_PENDING;
    Req->Bytes = 0;
    Req->Object = NULL;
}

/* NDK_FN_REQUEST_COMPLETION: DISPATCH_LEVEL, must not block. */
VOID PairRequestDone(PVOID Context, NTSTATUS Status)
{
    PPAIR_REQUEST req = (PPAIR_REQUEST)Context;
    req->Status = Status;
    KeSetEvent(&req->Event, IO_NO_INCREMENT, FALSE);
}

/* NDK_FN_CREATE_COMPLETION: DISPATCH_LEVEL. */
VOID PairCreateDone(PVOID Context, NTSTATUS Status, NDK_OBJECT_HEADER *Object)
{
    PPAIR_REQUEST req = (PPAIR_REQUEST)Context;
    req->Object = Object;
    req->Status = Status;
    KeSetEvent(&req->Event, IO_NO_INCREMENT, FALSE);
}

/* NDK_FN_CLOSE_COMPLETION: DISPATCH_LEVEL. */
static VOID PairCloseDone(PVOID Context)
{
    PPAIR_REQUEST req = (PPAIR_REQUEST)Context;
    req->Status = STATUS_SUCCESS;
    KeSetEvent(&req->Event, IO_NO_INCREMENT, FALSE);
}

/* NDK_FN_CLOSE_COMPLETION with a bare KEVENT as context: DISPATCH_LEVEL. */
static VOID PairCloseEventDone(PVOID Context)
{
    KeSetEvent((PKEVENT)Context, IO_NO_INCREMENT, FALSE);
}

/* Waits for Event, or for the CQ to fail when WithCq. PASSIVE_LEVEL. */
static NTSTATUS PairWait(PPAIR_CONTEXT Ctx, PKEVENT Event, BOOLEAN WithCq, const char *What)
{
    LARGE_INTEGER timeout;
    PVOID objects[2];
    NTSTATUS status;

    PAGED_CODE();
    timeout.QuadPart = -10000LL * PAIR_WAIT_MS;   /* relative, 100 ns units */
    objects[0] = Event;
    objects[1] = &Ctx->CqFailed;
    status = KeWaitForMultipleObjects(WithCq ? 2 : 1, objects, WaitAny, Executive, KernelMode, FALSE, &timeout, NULL);
    if (status == STATUS_WAIT_0)
        return STATUS_SUCCESS;
    if (status == STATUS_WAIT_1) {
        PairLog(Ctx, "the CQ failed (0x%08X) while waiting for %s", Ctx->CqStatus, What);
        return Ctx->CqStatus;
    }
    if (status == STATUS_TIMEOUT) {
        PairLog(Ctx, "timed out after %u ms waiting for %s", PAIR_WAIT_MS, What);
        return STATUS_IO_TIMEOUT;
    }
    return status;
}

NTSTATUS PairFinish(PPAIR_CONTEXT Ctx, PPAIR_REQUEST Req, NTSTATUS Status, const char *What)
{
    if (Status == STATUS_PENDING) {
        Status = PairWait(Ctx, &Req->Event, FALSE, What);
        if (NT_SUCCESS(Status))
            Status = Req->Status;
    }
    if (!NT_SUCCESS(Status))
        PairLog(Ctx, "%s failed (0x%08X)", What, Status);
    return Status;
}

NTSTATUS PairCreated(PPAIR_CONTEXT Ctx, NTSTATUS Status, NDK_OBJECT_HEADER **Late, const char *What)
{
    *Late = NULL;
    BOOLEAN pending = Status == STATUS_PENDING;
    Status = PairFinish(Ctx, &Ctx->Req, Status, What);
    if (pending && NT_SUCCESS(Status))
        *Late = Ctx->Req.Object;
    return Status;
}

VOID PairClose(PPAIR_CONTEXT Ctx, NDK_OBJECT_HEADER *Object, NDK_FN_CLOSE_OBJECT Close)
{
    PairRequestInit(&Ctx->CloseReq);
    NTSTATUS status = Close(Object, PairCloseDone, &Ctx->CloseReq);
    if (status == STATUS_PENDING)
        status = PairWait(Ctx, &Ctx->CloseReq.Event, FALSE, "a close completion");
    if (!NT_SUCCESS(status))
        PairLog(Ctx, "closing an NDK object (type %d) failed (0x%08X)", (int)Object->ObjectType, status);
}

/* Posts the bench's next Write on request Req. CqLock held, or the bench not yet started. */
static NTSTATUS PairBenchPost(PPAIR_CONTEXT Ctx, PPAIR_REQUEST Req)
{
    Ctx->BenchPosted++;
    return Ctx->Qp->Dispatch->NdkWrite(Ctx->Qp, Req, &Ctx->BenchSge, 1, Ctx->BenchRemote, Ctx->BenchToken, 0);
}

/* A bench Write completed: repost while Writes remain, wake the waiter after the last.
 * CqLock held (DISPATCH_LEVEL). */
static VOID PairBenchCompleted(PPAIR_CONTEXT Ctx, PPAIR_REQUEST Req, NTSTATUS Status)
{
    Ctx->BenchCompleted++;
    if (!NT_SUCCESS(Status) && NT_SUCCESS(Ctx->BenchStatus))
        Ctx->BenchStatus = Status;
    if (NT_SUCCESS(Ctx->BenchStatus) && Ctx->BenchPosted < Ctx->BenchTotal) {
        Status = PairBenchPost(Ctx, Req);
        if (!NT_SUCCESS(Status)) {
            Ctx->BenchStatus = Status;
            Ctx->BenchPosted--;
        }
    }
    if (Ctx->BenchCompleted == Ctx->BenchPosted)
        KeSetEvent(&Ctx->BenchDone, IO_NO_INCREMENT, FALSE);
}

VOID PairCloseAndWait(NDK_OBJECT_HEADER *Object, NDK_FN_CLOSE_OBJECT Close)
{
    KEVENT done;
    LARGE_INTEGER timeout;
    PAGED_CODE();
    KeInitializeEvent(&done, NotificationEvent, FALSE);
    timeout.QuadPart = -10000LL * PAIR_WAIT_MS;
    if (Close(Object, PairCloseEventDone, &done) == STATUS_PENDING)
        KeWaitForSingleObject(&done, Executive, KernelMode, FALSE, &timeout);
}

/* Hands every result to the PAIR_REQUEST it names. CqLock held (DISPATCH_LEVEL). */
static VOID PairDrainCq(PPAIR_CONTEXT Ctx)
{
    NDK_RESULT results[8];
    ULONG count, i;
    while ((count = Ctx->Cq->Dispatch->NdkGetCqResults(Ctx->Cq, results, RTL_NUMBER_OF(results))) > 0) {
        for (i = 0; i < count; i++) {
            PPAIR_REQUEST req = (PPAIR_REQUEST)results[i].RequestContext;
            if (req >= &Ctx->Bench[0] && req < &Ctx->Bench[PAIR_BENCH_DEPTH]) {
                PairBenchCompleted(Ctx, req, results[i].Status);
                continue;
            }
            req->Status = results[i].Status;
            req->Bytes = results[i].BytesTransferred;
            KeSetEvent(&req->Event, IO_NO_INCREMENT, FALSE);
        }
    }
}

NTSTATUS PairBenchWrites(PPAIR_CONTEXT Ctx, ULONG64 RemoteAddress, UINT32 RemoteToken, ULONG Count,
                         PULONG64 ElapsedUs)
{
    LARGE_INTEGER frequency, start, end, timeout;
    KLOCK_QUEUE_HANDLE lockHandle;
    NTSTATUS status = STATUS_SUCCESS;
    ULONG i;

    PAGED_CODE();
    KeInitializeEvent(&Ctx->BenchDone, NotificationEvent, FALSE);
    Ctx->BenchSge.VirtualAddress = Ctx->Buffer;
    Ctx->BenchSge.Length = PAIR_DATA_SIZE;
    Ctx->BenchSge.MemoryRegionToken = Ctx->DataToken;
    Ctx->BenchRemote = RemoteAddress;
    Ctx->BenchToken = RemoteToken;
    Ctx->BenchStatus = STATUS_SUCCESS;
    Ctx->BenchCompleted = Ctx->BenchPosted = 0;
    Ctx->BenchTotal = Count;
    start = KeQueryPerformanceCounter(&frequency);
    /* Under the CQ lock so that completions of the first Writes wait for the rest to be posted. */
    KeAcquireInStackQueuedSpinLock(&Ctx->CqLock, &lockHandle);
    for (i = 0; i < PAIR_BENCH_DEPTH && Ctx->BenchPosted < Count && NT_SUCCESS(status); i++)
        status = PairBenchPost(Ctx, &Ctx->Bench[i]);
    if (!NT_SUCCESS(status)) {
        Ctx->BenchPosted--;
        Ctx->BenchStatus = status;
    }
    if (Ctx->BenchPosted == 0)
        KeSetEvent(&Ctx->BenchDone, IO_NO_INCREMENT, FALSE);
    KeReleaseInStackQueuedSpinLock(&lockHandle);
    timeout.QuadPart = -10000LL * 6 * PAIR_WAIT_MS;
    status = KeWaitForSingleObject(&Ctx->BenchDone, Executive, KernelMode, FALSE, &timeout);
    end = KeQueryPerformanceCounter(NULL);
    if (status == STATUS_TIMEOUT) {
        PairLog(Ctx, "bench: %lu of %lu Writes completed in time", (unsigned long)Ctx->BenchCompleted,
                (unsigned long)Count);
        return STATUS_IO_TIMEOUT;
    }
    if (!NT_SUCCESS(Ctx->BenchStatus)) {
        PairLog(Ctx, "bench: a Write failed (0x%08X)", Ctx->BenchStatus);
        return Ctx->BenchStatus;
    }
    *ElapsedUs = (ULONG64)(end.QuadPart - start.QuadPart) * 1000000ull / (ULONG64)frequency.QuadPart;
    return STATUS_SUCCESS;
}

/* NDK_FN_CQ_NOTIFICATION_CALLBACK: DISPATCH_LEVEL. Drain, re-arm, drain again so that a result
 * that arrived between the two is not left waiting for a notification that never comes. */
static VOID PairCqNotify(PVOID Context, NTSTATUS CqStatus)
{
    PPAIR_CONTEXT ctx = (PPAIR_CONTEXT)Context;
    KLOCK_QUEUE_HANDLE lockHandle;

    NT_ASSERT(KeGetCurrentIrql() <= DISPATCH_LEVEL);
    if (!ExAcquireRundownProtection(&ctx->Rundown))
        return;   /* tearing down: nobody waits any more */
    KeAcquireInStackQueuedSpinLock(&ctx->CqLock, &lockHandle);
    if (!NT_SUCCESS(CqStatus)) {
        ctx->CqStatus = CqStatus;
        KeSetEvent(&ctx->CqFailed, IO_NO_INCREMENT, FALSE);
    } else {
        PairDrainCq(ctx);
        ctx->Cq->Dispatch->NdkArmCq(ctx->Cq, NDK_CQ_NOTIFY_ANY);
        PairDrainCq(ctx);
    }
    KeReleaseInStackQueuedSpinLock(&lockHandle);
    ExReleaseRundownProtection(&ctx->Rundown);
}

/* NDK_FN_DISCONNECT_EVENT_CALLBACK: DISPATCH_LEVEL. */
VOID PairDisconnectEvent(PVOID Context)
{
    PPAIR_CONTEXT ctx = (PPAIR_CONTEXT)Context;
    if (!ExAcquireRundownProtection(&ctx->Rundown))
        return;
    KeSetEvent(&ctx->PeerDisconnected, IO_NO_INCREMENT, FALSE);
    ExReleaseRundownProtection(&ctx->Rundown);
}

PUCHAR PairMsgSlot(PPAIR_CONTEXT Ctx, ULONG Slot)
{
    return Ctx->Buffer + PAIR_DATA_SIZE + (SIZE_T)Slot * PAIR_MSG_SIZE;
}

VOID PairFillPattern(PUCHAR Buffer, ULONG Length, ULONG Seed)
{
    ULONG x = Seed * 2654435761u + 1;
    for (ULONG i = 0; i < Length; i++) {
        x = x * 1103515245u + 12345u;
        Buffer[i] = (UCHAR)(x >> 16);
    }
}

ULONG PairCheckPattern(const UCHAR *Buffer, ULONG Length, ULONG Seed)
{
    ULONG x = Seed * 2654435761u + 1;
    for (ULONG i = 0; i < Length; i++) {
        x = x * 1103515245u + 12345u;
        if (Buffer[i] != (UCHAR)(x >> 16))
            return i;
    }
    return Length;
}

NTSTATUS PairCreateResources(PPAIR_CONTEXT Ctx)
{
    NDK_ADAPTER *adapter = Ctx->Adapter;
    NDK_OBJECT_HEADER *late;
    KLOCK_QUEUE_HANDLE lockHandle;
    NTSTATUS status;

    PAGED_CODE();
    Ctx->Buffer = (PUCHAR)ExAllocatePool2(POOL_FLAG_NON_PAGED, PAIR_DATA_SIZE + PAIR_MSG_AREA, PAIR_TAG);
    if (!Ctx->Buffer)
        return STATUS_INSUFFICIENT_RESOURCES;
    /* Two MDLs over the one nonpaged buffer: the data region and the message slots. */
    Ctx->DataMdl = IoAllocateMdl(Ctx->Buffer, PAIR_DATA_SIZE, FALSE, FALSE, NULL);
    Ctx->MsgMdl = IoAllocateMdl(Ctx->Buffer + PAIR_DATA_SIZE, PAIR_MSG_AREA, FALSE, FALSE, NULL);
    if (!Ctx->DataMdl || !Ctx->MsgMdl)
        return STATUS_INSUFFICIENT_RESOURCES;
    MmBuildMdlForNonPagedPool(Ctx->DataMdl);
    MmBuildMdlForNonPagedPool(Ctx->MsgMdl);

    PairRequestInit(&Ctx->Req);
    status = adapter->Dispatch->NdkCreateCq(adapter, 64, PairCqNotify, Ctx, NULL, PairCreateDone, &Ctx->Req, &Ctx->Cq);
    status = PairCreated(Ctx, status, &late, "NdkCreateCq");
    if (!NT_SUCCESS(status))
        return status;
    if (late)
        Ctx->Cq = (NDK_CQ *)late;
    KeAcquireInStackQueuedSpinLock(&Ctx->CqLock, &lockHandle);
    Ctx->Cq->Dispatch->NdkArmCq(Ctx->Cq, NDK_CQ_NOTIFY_ANY);
    KeReleaseInStackQueuedSpinLock(&lockHandle);

    PairRequestInit(&Ctx->Req);
    status = adapter->Dispatch->NdkCreatePd(adapter, PairCreateDone, &Ctx->Req, &Ctx->Pd);
    status = PairCreated(Ctx, status, &late, "NdkCreatePd");
    if (!NT_SUCCESS(status))
        return status;
    if (late)
        Ctx->Pd = (NDK_PD *)late;

    PairRequestInit(&Ctx->Req);
    status = Ctx->Pd->Dispatch->NdkCreateQp(Ctx->Pd, Ctx->Cq, Ctx->Cq, Ctx, 4, PAIR_BENCH_DEPTH + 8, 1, 1, 0, PairCreateDone, &Ctx->Req,
                                            &Ctx->Qp);
    status = PairCreated(Ctx, status, &late, "NdkCreateQp");
    if (!NT_SUCCESS(status))
        return status;
    if (late)
        Ctx->Qp = (NDK_QP *)late;

    PairRequestInit(&Ctx->Req);
    status = Ctx->Pd->Dispatch->NdkCreateMr(Ctx->Pd, FALSE, PairCreateDone, &Ctx->Req, &Ctx->MsgMr);
    status = PairCreated(Ctx, status, &late, "NdkCreateMr (messages)");
    if (!NT_SUCCESS(status))
        return status;
    if (late)
        Ctx->MsgMr = (NDK_MR *)late;
    PairRequestInit(&Ctx->Req);
    status = Ctx->MsgMr->Dispatch->NdkRegisterMr(Ctx->MsgMr, Ctx->MsgMdl, PAIR_MSG_AREA, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                                 PairRequestDone, &Ctx->Req);
    status = PairFinish(Ctx, &Ctx->Req, status, "NdkRegisterMr (messages)");
    if (!NT_SUCCESS(status))
        return status;
    Ctx->MsgToken = Ctx->MsgMr->Dispatch->NdkGetLocalTokenFromMr(Ctx->MsgMr);
    return STATUS_SUCCESS;
}

NTSTATUS PairPostReceive(PPAIR_CONTEXT Ctx, ULONG Slot)
{
    NDK_SGE sge;
    sge.VirtualAddress = PairMsgSlot(Ctx, Slot);
    sge.Length = PAIR_MSG_SIZE;
    sge.MemoryRegionToken = Ctx->MsgToken;
    PairRequestInit(&Ctx->Recv[Slot]);
    NTSTATUS status = Ctx->Qp->Dispatch->NdkReceive(Ctx->Qp, &Ctx->Recv[Slot], &sge, 1);
    if (!NT_SUCCESS(status))
        PairLog(Ctx, "NdkReceive failed (0x%08X)", status);
    return status;
}

NTSTATUS PairSendMessage(PPAIR_CONTEXT Ctx, const PAIR_MSG *Head)
{
    PUCHAR slot = PairMsgSlot(Ctx, 2);
    NDK_SGE sge;
    NTSTATUS status;

    PAGED_CODE();
    RtlCopyMemory(slot, Head, sizeof(*Head));
    PairFillPattern(slot + sizeof(*Head), PAIR_MSG_SIZE - sizeof(*Head), Head->Seed);
    sge.VirtualAddress = slot;
    sge.Length = PAIR_MSG_SIZE;
    sge.MemoryRegionToken = Ctx->MsgToken;
    PairRequestInit(&Ctx->SendReq);
    status = Ctx->Qp->Dispatch->NdkSend(Ctx->Qp, &Ctx->SendReq, &sge, 1, 0);
    if (NT_SUCCESS(status))
        status = PairWait(Ctx, &Ctx->SendReq.Event, TRUE, "a Send completion");
    if (NT_SUCCESS(status))
        status = Ctx->SendReq.Status;
    if (!NT_SUCCESS(status))
        PairLog(Ctx, "Send of message type %lu failed (0x%08X)", (unsigned long)Head->Type, status);
    return status;
}

NTSTATUS PairWaitReceive(PPAIR_CONTEXT Ctx, ULONG Slot, ULONG Type, PPAIR_MSG Out)
{
    PUCHAR slot = PairMsgSlot(Ctx, Slot);
    NTSTATUS status;
    ULONG bad;

    PAGED_CODE();
    status = PairWait(Ctx, &Ctx->Recv[Slot].Event, TRUE, "a Receive completion");
    if (NT_SUCCESS(status))
        status = Ctx->Recv[Slot].Status;
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "Receive of message type %lu failed (0x%08X)", (unsigned long)Type, status);
        return status;
    }
    RtlCopyMemory(Out, slot, sizeof(*Out));
    if (Ctx->Recv[Slot].Bytes != PAIR_MSG_SIZE || Out->Magic != PAIR_MAGIC || Out->Type != Type) {
        PairLog(Ctx, "unexpected message: %lu bytes, magic 0x%08lX, type %lu (expected type %lu)",
                (unsigned long)Ctx->Recv[Slot].Bytes, (unsigned long)Out->Magic, (unsigned long)Out->Type,
                (unsigned long)Type);
        return STATUS_DATA_ERROR;
    }
    bad = PairCheckPattern(slot + sizeof(*Out), PAIR_MSG_SIZE - sizeof(*Out), Out->Seed);
    if (bad != PAIR_MSG_SIZE - sizeof(*Out)) {
        PairLog(Ctx, "message type %lu: payload byte %lu differs from the pattern", (unsigned long)Type,
                (unsigned long)(bad + sizeof(*Out)));
        return STATUS_DATA_ERROR;
    }
    return STATUS_SUCCESS;
}

NTSTATUS PairRdma(PPAIR_CONTEXT Ctx, BOOLEAN Write, ULONG LocalOffset, ULONG64 RemoteAddress, UINT32 RemoteToken,
                  ULONG Length)
{
    NDK_SGE sge;
    NTSTATUS status;

    PAGED_CODE();
    sge.VirtualAddress = Ctx->Buffer + LocalOffset;
    sge.Length = Length;
    sge.MemoryRegionToken = Ctx->DataToken;
    PairRequestInit(&Ctx->RdmaReq);
    if (Write)
        status = Ctx->Qp->Dispatch->NdkWrite(Ctx->Qp, &Ctx->RdmaReq, &sge, 1, RemoteAddress, RemoteToken, 0);
    else
        status = Ctx->Qp->Dispatch->NdkRead(Ctx->Qp, &Ctx->RdmaReq, &sge, 1, RemoteAddress, RemoteToken, 0);
    if (NT_SUCCESS(status))
        status = PairWait(Ctx, &Ctx->RdmaReq.Event, TRUE, Write ? "an RDMA Write completion" : "an RDMA Read completion");
    if (NT_SUCCESS(status))
        status = Ctx->RdmaReq.Status;
    if (!NT_SUCCESS(status))
        PairLog(Ctx, "RDMA %s of %lu bytes failed (0x%08X)", Write ? "Write" : "Read", (unsigned long)Length, status);
    return status;
}

#define PAIR_CLOSE(Ctx, Field, Slot)                                        \
    do {                                                                    \
        if ((Ctx)->Field) {                                                 \
            PairClose((Ctx), &(Ctx)->Field->Header, (Ctx)->Field->Dispatch->Slot); \
            (Ctx)->Field = NULL;                                            \
        }                                                                   \
    } while (0)

VOID PairTeardown(PPAIR_CONTEXT Ctx)
{
    NTSTATUS status;

    PAGED_CODE();
    if (Ctx->Connector && Ctx->Connected && KeReadStateEvent(&Ctx->PeerDisconnected) == 0) {
        PairRequestInit(&Ctx->Req);
        status = Ctx->Connector->Dispatch->NdkDisconnect(Ctx->Connector, PairRequestDone, &Ctx->Req);
        if (status == STATUS_PENDING)
            status = PairWait(Ctx, &Ctx->Req.Event, FALSE, "NdkDisconnect");
        (void)status;   /* the peer may have gone first; closing follows either way */
    }
    Ctx->Connected = FALSE;
    /* Connector before the QP it carries; listener, QP and MRs before the CQ and PD (NDKPI
     * object lifetime rules). Each close returns after its last callback. */
    PAIR_CLOSE(Ctx, Connector, NdkCloseConnector);
    PAIR_CLOSE(Ctx, Listener, NdkCloseListener);
    PAIR_CLOSE(Ctx, Qp, NdkCloseQp);
    PAIR_CLOSE(Ctx, DataMr, NdkCloseMr);
    PAIR_CLOSE(Ctx, MsgMr, NdkCloseMr);
    /* No callback may still hold the context once the CQ is gone; the work item neither. */
    ExWaitForRundownProtectionRelease(&Ctx->Rundown);
    PAIR_CLOSE(Ctx, Cq, NdkCloseCq);
    PAIR_CLOSE(Ctx, Pd, NdkClosePd);
    if (Ctx->Lam) {
        Ctx->Adapter->Dispatch->NdkReleaseLAM(Ctx->Adapter, Ctx->Lam);
        ExFreePoolWithTag(Ctx->Lam, PAIR_TAG);
        Ctx->Lam = NULL;
    }
    PairCloseAdapter(Ctx);
    if (Ctx->DataMdl) {
        IoFreeMdl(Ctx->DataMdl);
        Ctx->DataMdl = NULL;
    }
    if (Ctx->MsgMdl) {
        IoFreeMdl(Ctx->MsgMdl);
        Ctx->MsgMdl = NULL;
    }
    if (Ctx->Buffer) {
        ExFreePoolWithTag(Ctx->Buffer, PAIR_TAG);
        Ctx->Buffer = NULL;
    }
}
