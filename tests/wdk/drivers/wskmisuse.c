/*
 * wskmisuse.c - a driver that breaks one rule of WSK's NDK extension on purpose, so that the
 * tests can check that the kit reports it (ndkdrv then exits non-zero and names the rule).
 * Parameters: IfIndex (an interface with an NDK adapter) and Mode:
 *   1  leak              opens an adapter and a CQ and unloads without closing either
 *                        (expect NDK_OBJECT_LEFT_OPEN naming cq#1)
 *   2  dispatch-open     calls WskOpenNdkAdapter at DISPATCH_LEVEL (expect WSK_IRQL_NOT_PASSIVE)
 *   3  wait-in-callback  waits with a timeout inside a CQ notification, which runs at
 *                        DISPATCH_LEVEL (expect the kit's wait-at-DISPATCH finding)
 *   4  close-open        closes the adapter while a CQ is still open on it (expect
 *                        NDK_OBJECT_LEFT_OPEN naming cq#1 at WskCloseNdkAdapter, and no hang)
 */
#include "rdmapair.h"

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD MisuseUnload;

static WSK_REGISTRATION MisuseRegistration;
static WSK_PROVIDER_NPI MisuseNpi;
static WSK_PROVIDER_NDK_DISPATCH MisuseNdk;
static KEVENT MisuseCallbackDone, MisuseNeverSet;

/* The rule being broken: a wait with a non-zero timeout at DISPATCH_LEVEL. */
static VOID MisuseCqNotify(PVOID Context, NTSTATUS CqStatus)
{
    LARGE_INTEGER timeout;
    UNREFERENCED_PARAMETER(Context);
    UNREFERENCED_PARAMETER(CqStatus);
    timeout.QuadPart = -10000LL;   /* 1 ms */
    KeWaitForSingleObject(&MisuseNeverSet, Executive, KernelMode, FALSE, &timeout);
    KeSetEvent(&MisuseCallbackDone, IO_NO_INCREMENT, FALSE);
}

static VOID MisuseUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
    /* Mode 1 leaves everything open here on purpose. */
}

static NTSTATUS MisuseWaitInCallback(NDK_ADAPTER *Adapter)
{
    NDK_CQ *cq = NULL;
    NDK_PD *pd = NULL;
    NDK_QP *qp = NULL;
    LARGE_INTEGER timeout;
    NTSTATUS status;

    KeInitializeEvent(&MisuseCallbackDone, NotificationEvent, FALSE);
    KeInitializeEvent(&MisuseNeverSet, NotificationEvent, FALSE);
    status = Adapter->Dispatch->NdkCreateCq(Adapter, 4, MisuseCqNotify, NULL, NULL, NULL, NULL, &cq);
    if (status == STATUS_SUCCESS)
        status = Adapter->Dispatch->NdkCreatePd(Adapter, NULL, NULL, &pd);
    if (status == STATUS_SUCCESS)
        status = pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 2, 2, 1, 1, 0, NULL, NULL, &qp);
    if (status == STATUS_SUCCESS) {
        cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
        status = qp->Dispatch->NdkReceive(qp, NULL, NULL, 0);
        if (status == STATUS_SUCCESS)
            qp->Dispatch->NdkFlush(qp);
        timeout.QuadPart = -10000LL * 10000;
        KeWaitForSingleObject(&MisuseCallbackDone, Executive, KernelMode, FALSE, &timeout);
    }
    if (qp)
        PairCloseAndWait(&qp->Header, qp->Dispatch->NdkCloseQp);
    if (pd)
        PairCloseAndWait(&pd->Header, pd->Dispatch->NdkClosePd);
    if (cq)
        PairCloseAndWait(&cq->Header, cq->Dispatch->NdkCloseCq);
    return status;
}

NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    static const WSK_CLIENT_DISPATCH clientDispatch = { MAKE_WSK_VERSION(1, 0), 0, NULL };
    WSK_CLIENT_NPI clientNpi = { NULL, &clientDispatch };
    NDK_VERSION version = { 1, 0 };
    NDK_ADAPTER *adapter = NULL;
    ULONG ifIndex = 0, mode = 0;
    HANDLE key;
    KIRQL oldIrql;
    NTSTATUS status;

    status = PairOpenParameters(RegistryPath, &key);
    if (!NT_SUCCESS(status))
        return status;
    status = PairQueryUlong(key, L"IfIndex", &ifIndex);
    if (NT_SUCCESS(status))
        status = PairQueryUlong(key, L"Mode", &mode);
    ZwClose(key);
    if (!NT_SUCCESS(status))
        return status;
    DriverObject->DriverUnload = MisuseUnload;

    status = WskRegister(&clientNpi, &MisuseRegistration);
    if (!NT_SUCCESS(status))
        return status;
    status = WskCaptureProviderNPI(&MisuseRegistration, WSK_NO_WAIT, &MisuseNpi);
    if (NT_SUCCESS(status))
        status = MisuseNpi.Dispatch->WskControlClient(MisuseNpi.Client, WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH, 0, NULL,
                                                      sizeof(MisuseNdk), &MisuseNdk, NULL, NULL);
    if (!NT_SUCCESS(status))
        return status;

    if (mode == 2) {
        KeRaiseIrql(DISPATCH_LEVEL, &oldIrql);
        status = MisuseNdk.WskOpenNdkAdapter(MisuseNpi.Client, version, ifIndex, &adapter);
        KeLowerIrql(oldIrql);
        DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL,
                   "wskmisuse: WskOpenNdkAdapter at DISPATCH_LEVEL answered 0x%08X\n", status);
        if (NT_SUCCESS(status))
            MisuseNdk.WskCloseNdkAdapter(MisuseNpi.Client, adapter);
    } else {
        status = MisuseNdk.WskOpenNdkAdapter(MisuseNpi.Client, version, ifIndex, &adapter);
        if (!NT_SUCCESS(status))
            return status;
        if (mode == 1 || mode == 4) {
            NDK_CQ *cq = NULL;
            status = adapter->Dispatch->NdkCreateCq(adapter, 4, NULL, NULL, NULL, NULL, NULL, &cq);
            DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "wskmisuse: leaving a CQ open (create 0x%08X)\n",
                       status);
            if (mode == 1)
                return STATUS_SUCCESS;
        } else {
            status = MisuseWaitInCallback(adapter);
        }
        MisuseNdk.WskCloseNdkAdapter(MisuseNpi.Client, adapter);
    }
    WskReleaseProviderNPI(&MisuseRegistration);
    WskDeregister(&MisuseRegistration);
    return STATUS_SUCCESS;
}
