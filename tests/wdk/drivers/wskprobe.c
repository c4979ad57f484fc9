/*
 * wskprobe.c - a driver that checks, one call at a time, what the kit's Winsock Kernel answers:
 * registration and capture, the client control codes, the NDK extension's statuses (unknown
 * interface index, interface without NDK, unsupported version, versions 1 and 2), the refused
 * socket half, and that an NDK callback runs at DISPATCH_LEVEL. Prints one line per check and
 * fails DriverEntry when any check fails. Parameters: IfIndex (an interface with an NDK
 * adapter), NoNdkIfIndex (optional: an interface without one).
 */
#include "rdmapair.h"

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD ProbeUnload;

static ULONG ProbeChecks, ProbeFailures;
static KEVENT ProbeCallbackSeen;
static KIRQL ProbeCallbackIrql = 0xFF;

#define PROBE(cond, what, ...)                                                                     \
    do {                                                                                           \
        ProbeChecks++;                                                                             \
        if (cond) {                                                                                \
            DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "wskprobe: ok   " what "\n", ##__VA_ARGS__);   \
        } else {                                                                                   \
            ProbeFailures++;                                                                       \
            DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "wskprobe: FAIL " what "\n", ##__VA_ARGS__);   \
        }                                                                                          \
    } while (0)

static VOID ProbeCqNotify(PVOID Context, NTSTATUS CqStatus)
{
    UNREFERENCED_PARAMETER(Context);
    UNREFERENCED_PARAMETER(CqStatus);
    ProbeCallbackIrql = KeGetCurrentIrql();
    KeSetEvent(&ProbeCallbackSeen, IO_NO_INCREMENT, FALSE);
}

/* Opens version Major.0 on IfIndex and checks the version the instance runs at; for version 1
 * also that a CQ notification arrives at DISPATCH_LEVEL (a flushed receive completes it). */
static VOID ProbeAdapter(const WSK_PROVIDER_NPI *Npi, const WSK_PROVIDER_NDK_DISPATCH *Ndk, ULONG IfIndex, USHORT Major)
{
    NDK_VERSION version = { Major, 0 };
    NDK_ADAPTER *adapter = NULL;
    NDK_ADAPTER_INFO info;
    ULONG size = sizeof(info);
    NTSTATUS status = Ndk->WskOpenNdkAdapter(Npi->Client, version, IfIndex, &adapter);
    PROBE(status == STATUS_SUCCESS && adapter, "WskOpenNdkAdapter(%u.0, index %lu): 0x%08X", Major,
          (unsigned long)IfIndex, status);
    if (!NT_SUCCESS(status) || !adapter)
        return;
    status = adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size);
    PROBE(status == STATUS_SUCCESS && info.Version.Major == Major, "NdkQueryAdapterInfo: 0x%08X, version %u.%u", status,
          info.Version.Major, info.Version.Minor);
    if (Major == 1) {
        NDK_CQ *cq = NULL;
        NDK_PD *pd = NULL;
        NDK_QP *qp = NULL;
        NDK_RESULT result;
        LARGE_INTEGER timeout;
        KeInitializeEvent(&ProbeCallbackSeen, NotificationEvent, FALSE);
        status = adapter->Dispatch->NdkCreateCq(adapter, 4, ProbeCqNotify, NULL, NULL, NULL, NULL, &cq);
        if (status == STATUS_SUCCESS)
            status = adapter->Dispatch->NdkCreatePd(adapter, NULL, NULL, &pd);
        if (status == STATUS_SUCCESS)
            status = pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 2, 2, 1, 1, 0, NULL, NULL, &qp);
        PROBE(status == STATUS_SUCCESS, "CQ, PD and QP created inline: 0x%08X", status);
        if (status == STATUS_SUCCESS) {
            cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
            status = qp->Dispatch->NdkReceive(qp, (PVOID)0x1234, NULL, 0);
            if (status == STATUS_SUCCESS)
                qp->Dispatch->NdkFlush(qp);
            timeout.QuadPart = -10000LL * 10000;
            status = KeWaitForSingleObject(&ProbeCallbackSeen, Executive, KernelMode, FALSE, &timeout);
            PROBE(status == STATUS_SUCCESS && ProbeCallbackIrql == DISPATCH_LEVEL,
                  "the CQ notification of a flushed receive ran at IRQL %u (wait 0x%08X)", ProbeCallbackIrql, status);
            ULONG n = cq->Dispatch->NdkGetCqResults(cq, &result, 1);
            PROBE(n == 1 && result.RequestContext == (PVOID)0x1234 && result.Status == STATUS_CANCELLED,
                  "the flushed receive completed with STATUS_CANCELLED (%lu result(s), 0x%08X)", (unsigned long)n,
                  n ? result.Status : 0);
        }
        if (qp)
            PairCloseAndWait(&qp->Header, qp->Dispatch->NdkCloseQp);
        if (pd)
            PairCloseAndWait(&pd->Header, pd->Dispatch->NdkClosePd);
        if (cq)
            PairCloseAndWait(&cq->Header, cq->Dispatch->NdkCloseCq);
    }
    Ndk->WskCloseNdkAdapter(Npi->Client, adapter);
}

/* Everything was closed and deregistered in DriverEntry. */
static VOID ProbeUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
}

NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    static const WSK_CLIENT_DISPATCH clientDispatch = { MAKE_WSK_VERSION(1, 0), 0, NULL };
    static const WSK_CLIENT_DISPATCH futureDispatch = { MAKE_WSK_VERSION(2, 0), 0, NULL };
    WSK_CLIENT_NPI clientNpi = { NULL, &clientDispatch };
    WSK_CLIENT_NPI futureNpi = { NULL, &futureDispatch };
    WSK_REGISTRATION registration, future;
    WSK_PROVIDER_NPI npi, unused;
    WSK_PROVIDER_CHARACTERISTICS characteristics;
    WSK_PROVIDER_NDK_DISPATCH ndk;
    NDK_ADAPTER *adapter = (NDK_ADAPTER *)(ULONG_PTR)1;
    NDK_VERSION v1 = { 1, 0 }, v9 = { 9, 0 };
    ULONG ifIndex = 0, noNdkIfIndex = 0;
    SIZE_T returned = 0;
    HANDLE key;
    NTSTATUS status;

    PAGED_CODE();
    DriverObject->DriverUnload = ProbeUnload;
    status = PairOpenParameters(RegistryPath, &key);
    if (!NT_SUCCESS(status))
        return status;
    status = PairQueryUlong(key, L"IfIndex", &ifIndex);
    if (!NT_SUCCESS(PairQueryUlong(key, L"NoNdkIfIndex", &noNdkIfIndex)))
        noNdkIfIndex = 0;
    ZwClose(key);
    if (!NT_SUCCESS(status))
        return status;

    status = WskRegister(&clientNpi, &registration);
    PROBE(status == STATUS_SUCCESS, "WskRegister: 0x%08X", status);
    if (!NT_SUCCESS(status))
        return status;
    status = WskQueryProviderCharacteristics(&registration, &characteristics);
    PROBE(status == STATUS_SUCCESS && characteristics.HighestVersion == MAKE_WSK_VERSION(1, 0) &&
              characteristics.LowestVersion == MAKE_WSK_VERSION(1, 0),
          "WskQueryProviderCharacteristics: 0x%08X, versions 0x%04X-0x%04X", status, characteristics.LowestVersion,
          characteristics.HighestVersion);
    status = WskCaptureProviderNPI(&registration, WSK_INFINITE_WAIT, &npi);
    PROBE(status == STATUS_SUCCESS, "WskCaptureProviderNPI: 0x%08X", status);
    if (!NT_SUCCESS(status)) {
        WskDeregister(&registration);
        return status;
    }

    /* A client that speaks only WSK 2.0 cannot capture. */
    status = WskRegister(&futureNpi, &future);
    if (NT_SUCCESS(status)) {
        status = WskCaptureProviderNPI(&future, WSK_NO_WAIT, &unused);
        PROBE(status == STATUS_NOINTERFACE, "WskCaptureProviderNPI for a WSK 2.0 client: 0x%08X (STATUS_NOINTERFACE)",
              status);
        WskDeregister(&future);
    }

    /* WskControlClient: the NDK extension wants the structure itself, not a pointer. */
    status = npi.Dispatch->WskControlClient(npi.Client, WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH, 0, NULL, sizeof(PVOID),
                                            &ndk, NULL, NULL);
    PROBE(status == STATUS_INVALID_PARAMETER, "WskControlClient('NDKD') with OutputSize %u: 0x%08X "
          "(STATUS_INVALID_PARAMETER)", (unsigned)sizeof(PVOID), status);
    RtlZeroMemory(&ndk, sizeof(ndk));
    status = npi.Dispatch->WskControlClient(npi.Client, WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH, 0, NULL, sizeof(ndk),
                                            &ndk, &returned, NULL);
    PROBE(status == STATUS_SUCCESS && returned == sizeof(ndk) && ndk.WskOpenNdkAdapter && ndk.WskCloseNdkAdapter,
          "WskControlClient('NDKD') with OutputSize %u: 0x%08X, %u bytes", (unsigned)sizeof(ndk), status,
          (unsigned)returned);
    status = npi.Dispatch->WskControlClient(npi.Client, WSK_TRANSPORT_LIST_QUERY, 0, NULL, 0, NULL, NULL, NULL);
    PROBE(status == STATUS_NOT_SUPPORTED, "WskControlClient(WSK_TRANSPORT_LIST_QUERY): 0x%08X (STATUS_NOT_SUPPORTED)",
          status);
    status = npi.Dispatch->WskSocket(npi.Client, AF_INET, SOCK_STREAM, IPPROTO_TCP, WSK_FLAG_CONNECTION_SOCKET, NULL,
                                     NULL, NULL, NULL, NULL, NULL);
    PROBE(status == STATUS_NOT_SUPPORTED, "WskSocket: 0x%08X (STATUS_NOT_SUPPORTED)", status);

    if (NT_SUCCESS(status) || ndk.WskOpenNdkAdapter) {
        status = ndk.WskOpenNdkAdapter(npi.Client, v1, 0x7FFFFFF0u, &adapter);
        PROBE(status == STATUS_NOT_FOUND && adapter == NULL,
              "WskOpenNdkAdapter on an interface index nobody has: 0x%08X (STATUS_NOT_FOUND)", status);
        if (noNdkIfIndex) {
            status = ndk.WskOpenNdkAdapter(npi.Client, v1, noNdkIfIndex, &adapter);
            PROBE(status == STATUS_NOT_SUPPORTED, "WskOpenNdkAdapter on interface %lu without NDK: 0x%08X "
                  "(STATUS_NOT_SUPPORTED)", (unsigned long)noNdkIfIndex, status);
        } else {
            DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL,
                       "wskprobe: skip the interface without NDK (no NoNdkIfIndex parameter)\n");
        }
        status = ndk.WskOpenNdkAdapter(npi.Client, v9, ifIndex, &adapter);
        PROBE(status == STATUS_NDIS_BAD_VERSION, "WskOpenNdkAdapter(9.0): 0x%08X (STATUS_NDIS_BAD_VERSION)", status);
        ProbeAdapter(&npi, &ndk, ifIndex, 1);
        ProbeAdapter(&npi, &ndk, ifIndex, 2);
    }

    WskReleaseProviderNPI(&registration);
    WskDeregister(&registration);
    status = WskCaptureProviderNPI(&registration, WSK_NO_WAIT, &unused);
    PROBE(status == STATUS_DEVICE_NOT_READY, "WskCaptureProviderNPI after WskDeregister: 0x%08X "
          "(STATUS_DEVICE_NOT_READY)", status);

    DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "wskprobe: %s (%lu checks, %lu failed)\n",
               ProbeFailures ? "FAIL" : "PASS", (unsigned long)ProbeChecks, (unsigned long)ProbeFailures);
    return ProbeFailures ? STATUS_UNSUCCESSFUL : STATUS_SUCCESS;
}
