/*
 * rdmapair_wsk.c - reaching NDK the way a Windows kernel consumer does: register with Winsock
 * Kernel, capture the provider NPI, ask WskControlClient for the NDK extension's dispatch
 * (WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH, the structure copied into our buffer), then
 * WskOpenNdkAdapter on the interface index. All of it at PASSIVE_LEVEL.
 */
#include "rdmapair.h"

static const WSK_CLIENT_DISPATCH PairWskDispatch = { MAKE_WSK_VERSION(1, 0), 0, NULL };

NTSTATUS PairOpenAdapter(PPAIR_CONTEXT Ctx)
{
    WSK_CLIENT_NPI clientNpi;
    NDK_VERSION version;
    NTSTATUS status;
    ULONG size;

    PAGED_CODE();
    clientNpi.ClientContext = Ctx;
    clientNpi.Dispatch = &PairWskDispatch;
    status = WskRegister(&clientNpi, &Ctx->WskRegistration);
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "WskRegister failed (0x%08X)", status);
        return status;
    }
    Ctx->WskRegistered = TRUE;
    status = WskCaptureProviderNPI(&Ctx->WskRegistration, WSK_INFINITE_WAIT, &Ctx->WskProvider);
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "WskCaptureProviderNPI failed (0x%08X)", status);
        return status;
    }
    Ctx->WskCaptured = TRUE;
    status = Ctx->WskProvider.Dispatch->WskControlClient(Ctx->WskProvider.Client,
                                                         WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH, 0, NULL,
                                                         sizeof(Ctx->NdkDispatch), &Ctx->NdkDispatch, NULL, NULL);
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "WskControlClient(WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH) failed (0x%08X)", status);
        return status;
    }
    /* NDK 1.0: the oldest we accept; the provider runs its highest 1.x minor. */
    version.Major = 1;
    version.Minor = 0;
    status = Ctx->NdkDispatch.WskOpenNdkAdapter(Ctx->WskProvider.Client, version, Ctx->IfIndex, &Ctx->Adapter);
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "WskOpenNdkAdapter(interface index %lu) failed (0x%08X)", (unsigned long)Ctx->IfIndex, status);
        Ctx->Adapter = NULL;
        return status;
    }
    size = sizeof(Ctx->AdapterInfo);
    status = Ctx->Adapter->Dispatch->NdkQueryAdapterInfo(Ctx->Adapter, &Ctx->AdapterInfo, &size);
    if (!NT_SUCCESS(status)) {
        PairLog(Ctx, "NdkQueryAdapterInfo failed (0x%08X)", status);
        return status;
    }
    PairLog(Ctx, "NDK %u.%u adapter on interface index %lu (FRMR pages %lu, max SGE %lu)",
            Ctx->AdapterInfo.Version.Major, Ctx->AdapterInfo.Version.Minor, (unsigned long)Ctx->IfIndex,
            (unsigned long)Ctx->AdapterInfo.FRMRPageCount, (unsigned long)Ctx->AdapterInfo.MaxInitiatorRequestSge);
    return STATUS_SUCCESS;
}

VOID PairCloseAdapter(PPAIR_CONTEXT Ctx)
{
    PAGED_CODE();
    if (Ctx->Adapter) {
        Ctx->NdkDispatch.WskCloseNdkAdapter(Ctx->WskProvider.Client, Ctx->Adapter);
        Ctx->Adapter = NULL;
    }
    if (Ctx->WskCaptured) {
        WskReleaseProviderNPI(&Ctx->WskRegistration);
        Ctx->WskCaptured = FALSE;
    }
    if (Ctx->WskRegistered) {
        WskDeregister(&Ctx->WskRegistration);
        Ctx->WskRegistered = FALSE;
    }
}
