/*
 * A provider module built only for the runtime's tests, in several variants:
 *   ndk-testgood.so      binds to every interface it is offered (or those in its "bind" setting),
 *                        opens adapters with version negotiation, answers the four NDK OIDs and
 *                        raises NetEventNDKEnable/Disable from its own thread after SET_STATE;
 *   ndk-testnoentry.so   (NO_ENTRY) exports no NdkProviderEntry;
 *   ndk-testinitfail.so  (INIT_FAIL) whose NdkProviderEntry fails;
 *   ndk-testbadchars.so  (BAD_CHARS) registers characteristics without an open handler.
 * With the setting "publish" (NDK_TESTGOOD_PUBLISH=1) it keeps its Connect counter (one per
 * open) in the system view's adapter record and publishes a PD record per open instance.
 */
#define _GNU_SOURCE
#include <ndk/provider.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#ifdef NO_ENTRY
EXPORT int ndk_test_not_an_entry_point(void) { return 42; }
#else

static const NDK_RUNTIME_SERVICES *services;
static NDIS_HANDLE driver_handle;

struct test_device {
    NDIS_HANDLE           handle;         /* the runtime's adapter handle */
    NDK_ADAPTER_INFO      info;
    NDIS_NDK_CAPABILITIES caps;
    pthread_mutex_t       lock;           /* guards enabled, opens, pending_event */
    BOOLEAN               enabled;
    ULONG                 opens;
    pthread_t             pnp_thread;
    int                   pnp_thread_live;
    ULONG                 pending_event;
    struct ndk_sv_rec    *sv;             /* the adapter record, with "publish" */
};

struct test_adapter {
    NDK_ADAPTER         ndk;
    struct test_device *dev;
    NDK_VERSION         version;
    struct ndk_sv_rec  *sv;               /* a PD record standing for the instance */
};

static NTSTATUS query_info(NDK_ADAPTER *pNdkAdapter, NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize)
{
    struct test_adapter *a = (struct test_adapter *)pNdkAdapter;
    if (!pBufferSize)
        return STATUS_INVALID_PARAMETER;
    if (!pInfo || *pBufferSize < sizeof(NDK_ADAPTER_INFO)) {
        *pBufferSize = sizeof(NDK_ADAPTER_INFO);
        return STATUS_BUFFER_TOO_SMALL;
    }
    *pInfo = a->dev->info;
    pInfo->Version = a->version;
    *pBufferSize = sizeof(NDK_ADAPTER_INFO);
    return STATUS_SUCCESS;
}

static NTSTATUS not_supported(void) { return STATUS_NOT_SUPPORTED; }
static VOID release_lam(NDK_ADAPTER *pNdkAdapter, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM) { (void)pNdkAdapter; (void)pNdkLAM; }

static const NDK_ADAPTER_DISPATCH adapter_dispatch = {
    .NdkQueryExtension = (NDK_FN_QUERY_EXTENSION_INTERFACE)(void (*)(void))not_supported,
    .NdkQueryAdapterInfo = query_info,
    .NdkCreateCq = (NDK_FN_CREATE_CQ)(void (*)(void))not_supported,
    .NdkCreatePd = (NDK_FN_CREATE_PD)(void (*)(void))not_supported,
    .NdkCreateSharedEndpoint = (NDK_FN_CREATE_SHARED_ENDPOINT)(void (*)(void))not_supported,
    .NdkCreateConnector = (NDK_FN_CREATE_CONNECTOR)(void (*)(void))not_supported,
    .NdkCreateListener = (NDK_FN_CREATE_LISTENER)(void (*)(void))not_supported,
    .NdkBuildLAM = (NDK_FN_BUILD_LAM)(void (*)(void))not_supported,
    .NdkReleaseLAM = release_lam,
};

/* §2.2 version negotiation: majors 1 (up to 1.2) and 2 (up to 2.1). */
static NDIS_STATUS open_adapter(NDIS_HANDLE ctx, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS params, NDK_ADAPTER **out)
{
    struct test_device *dev = ctx;
    USHORT highest;
    if (params->Version.Major == 1)
        highest = 2;
    else if (params->Version.Major == 2)
        highest = 1;
    else
        return NDIS_STATUS_BAD_VERSION;
    if (params->Version.Minor > highest)
        return NDIS_STATUS_BAD_VERSION;
    pthread_mutex_lock(&dev->lock);
    BOOLEAN enabled = dev->enabled;
    if (enabled)
        dev->opens++;
    pthread_mutex_unlock(&dev->lock);
    if (!enabled)
        return NDIS_STATUS_ADAPTER_NOT_READY;
    struct test_adapter *a = calloc(1, sizeof *a);
    if (!a)
        return NDIS_STATUS_RESOURCES;
    a->dev = dev;
    if (dev->sv) {
        ndk_sv_add_shared(&dev->sv->u.adapter.counters[0], 1);
        a->sv = services->SysviewAlloc(dev->handle, NDK_SV_PD);
    }
    a->version.Major = params->Version.Major;
    a->version.Minor = highest;
    a->ndk.Header.Version = a->version;
    a->ndk.Header.ObjectType = NdkObjectTypeAdapter;
    a->ndk.Dispatch = &adapter_dispatch;
    *out = &a->ndk;
    return NDIS_STATUS_SUCCESS;
}

static VOID close_adapter(NDIS_HANDLE ctx, NDK_ADAPTER *adapter)
{
    struct test_device *dev = ctx;
    struct test_adapter *a = (struct test_adapter *)adapter;
    if (a->sv)
        services->SysviewFree(dev->handle, a->sv);
    free(adapter);
}

static void *pnp_thread(void *arg)
{
    struct test_device *dev = arg;
    pthread_mutex_lock(&dev->lock);
    ULONG ev = dev->pending_event;
    pthread_mutex_unlock(&dev->lock);
    services->NetPnPEvent(dev->handle, ev);
    return NULL;
}

static NDIS_STATUS initialize(NDIS_HANDLE driver_ctx, NDIS_HANDLE handle, CONST NDK_PROVIDER_INTERFACE *itf,
                              NDIS_HANDLE *adapter_ctx, NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES *attrs)
{
    (void)driver_ctx;
    const char *bind = services->GetConfig(driver_handle, "bind");
    if (bind && !strstr(bind, itf->IfName))
        return NDIS_STATUS_NOT_SUPPORTED;
    /* The runtime must offer only interfaces with addresses, and must answer for them. */
    if (itf->AddressCount == 0 || !services->AdapterHasAddress(handle, (const struct sockaddr *)&itf->Addresses[0]))
        return NDIS_STATUS_FAILURE;
    struct test_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return NDIS_STATUS_RESOURCES;
    pthread_mutex_init(&dev->lock, NULL);
    dev->handle = handle;
    dev->enabled = TRUE;
    if (services->GetConfig(driver_handle, "publish")) {
        dev->sv = services->SysviewAdapter(handle);
        dev->sv->u.adapter.flags |= NDK_SV_ADAPTER_COUNTERS;
    }
    const char *vendor = services->GetConfig(driver_handle, "vendor");
    dev->info.VendorId = vendor ? (UINT32)strtoul(vendor, NULL, 0) : 0x5a5a;
    dev->info.DeviceId = itf->IfIndex;
    dev->info.Version.Major = 2;
    dev->info.Version.Minor = 1;
    dev->info.MaxCqDepth = 1024;
    dev->info.MaxCallerData = 252;
    dev->info.MaxCalleeData = 252;
    dev->info.RdmaTechnology = NdkiWarp;
    dev->caps.Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
    dev->caps.Header.Revision = NDIS_NDK_CAPABILITIES_REVISION_1;
    dev->caps.Header.Size = (USHORT)NDIS_SIZEOF_NDK_CAPABILITIES_REVISION_1;
    dev->caps.MaxQpCount = 7;
    /* One counter said missing, for tools that must not show it as a count (ndkinfo --stats). */
    dev->caps.MissingCounterMask = NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAInFrames);
    dev->caps.NdkInfo = &dev->info;
    attrs->Header.Type = NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES;
    attrs->Header.Revision = NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1;
    attrs->Header.Size = (USHORT)NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1;
    attrs->Enabled = TRUE;
    attrs->NdkCapabilities = &dev->caps;
    *adapter_ctx = dev;
    services->Log(driver_handle, NDK_LOG_INFO, "bound to %s", itf->IfName);
    return NDIS_STATUS_SUCCESS;
}

static void join_pnp_thread(struct test_device *dev)
{
    if (dev->pnp_thread_live) {
        pthread_join(dev->pnp_thread, NULL);
        dev->pnp_thread_live = 0;
    }
}

static VOID halt(NDIS_HANDLE ctx)
{
    struct test_device *dev = ctx;
    join_pnp_thread(dev);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
}

static NDIS_STATUS oid_request(NDIS_HANDLE ctx, NDK_OID_REQUEST *req)
{
    struct test_device *dev = ctx;
    switch (req->Oid) {
    case OID_NDK_SET_STATE: {
        if (!req->IsSet || req->InformationBufferLength != sizeof(BOOLEAN))
            return NDIS_STATUS_INVALID_LENGTH;
        BOOLEAN want = *(BOOLEAN *)req->InformationBuffer ? TRUE : FALSE;
        req->BytesRead = sizeof(BOOLEAN);
        join_pnp_thread(dev);
        pthread_mutex_lock(&dev->lock);
        BOOLEAN changed = dev->enabled != want;
        dev->enabled = want;
        dev->pending_event = want ? NetEventNDKEnable : NetEventNDKDisable;
        pthread_mutex_unlock(&dev->lock);
        /* §6.5: announce the transition from another context, never from inside the OID. */
        if (changed && pthread_create(&dev->pnp_thread, NULL, pnp_thread, dev) == 0)
            dev->pnp_thread_live = 1;
        return NDIS_STATUS_SUCCESS;
    }
    case OID_NDK_STATISTICS: {
        if (req->InformationBufferLength < sizeof(NDIS_NDK_STATISTICS_INFO)) {
            req->BytesNeeded = sizeof(NDIS_NDK_STATISTICS_INFO);
            return NDIS_STATUS_BUFFER_TOO_SHORT;
        }
        NDIS_NDK_STATISTICS_INFO *s = req->InformationBuffer;
        memset(s, 0, sizeof *s);
        s->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
        s->Header.Revision = NDIS_NDK_STATISTICS_INFO_REVISION_1;
        s->Header.Size = (USHORT)NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1;
        pthread_mutex_lock(&dev->lock);
        /* lets the test see that the query reached us */
        s->CounterSet.Connect = dev->sv ? __atomic_load_n(&dev->sv->u.adapter.counters[0], __ATOMIC_RELAXED)
                                        : dev->opens;
        pthread_mutex_unlock(&dev->lock);
        req->BytesWritten = sizeof *s;
        return NDIS_STATUS_SUCCESS;
    }
    case OID_NDK_CONNECTIONS:
    case OID_NDK_LOCAL_ENDPOINTS: {
        /* One fake entry each, so that buffer-size handling is exercised. */
        ULONG need = req->Oid == OID_NDK_CONNECTIONS ? (ULONG)NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(1)
                                                     : (ULONG)NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(1);
        if (req->InformationBufferLength < need) {
            req->BytesNeeded = need;
            return NDIS_STATUS_BUFFER_TOO_SHORT;
        }
        memset(req->InformationBuffer, 0, need);
        if (req->Oid == OID_NDK_CONNECTIONS) {
            NDIS_NDK_CONNECTIONS *c = req->InformationBuffer;
            c->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
            c->Header.Revision = NDIS_NDK_CONNECTIONS_REVISION_1;
            c->Header.Size = (USHORT)need;
            c->Count = 1;
            c->Connections[0].Local.Ipv4.sin_family = AF_INET;
            c->Connections[0].Remote.Ipv4.sin_family = AF_INET;
            c->Connections[0].OwnerPid = 4242;
        } else {
            NDIS_NDK_LOCAL_ENDPOINTS *e = req->InformationBuffer;
            e->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
            e->Header.Revision = NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1;
            e->Header.Size = (USHORT)need;
            e->Count = 1;
            e->LocalEndpoints[0].Local.Ipv4.sin_family = AF_INET;
            e->LocalEndpoints[0].Listener = TRUE;
        }
        req->BytesWritten = need;
        return NDIS_STATUS_SUCCESS;
    }
    default:
        return NDIS_STATUS_INVALID_OID;
    }
}

EXPORT NTSTATUS NdkProviderEntry(CONST NDK_RUNTIME_SERVICES *Services, NDIS_HANDLE DriverHandle,
                                 NDK_MINIPORT_CHARACTERISTICS *Characteristics, NDIS_HANDLE *DriverContext)
{
#ifdef INIT_FAIL
    (void)Services; (void)DriverHandle; (void)Characteristics; (void)DriverContext;
    (void)open_adapter; (void)close_adapter; (void)initialize; (void)halt; (void)oid_request;
    return STATUS_INSUFFICIENT_RESOURCES;
#else
    services = Services;
    driver_handle = DriverHandle;
    Characteristics->AbiVersion = NDK_PROVIDER_ABI_VERSION;
#ifdef PROV_NAME
    strcpy(Characteristics->Name, PROV_NAME);   /* the ranking variants (test_rank.c) */
#else
    strcpy(Characteristics->Name, "testgood");
#endif
#ifdef PROV_SOFTWARE
    Characteristics->ProviderFlags = NDK_PROVIDER_FLAG_SOFTWARE;
#endif
    strcpy(Characteristics->Description, "runtime test provider");
    Characteristics->InitializeHandler = initialize;
    Characteristics->HaltHandler = halt;
    Characteristics->OidRequestHandler = oid_request;
    Characteristics->NdkCharacteristics.Header.Type = NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS;
    Characteristics->NdkCharacteristics.Header.Revision = NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
    Characteristics->NdkCharacteristics.Header.Size = (USHORT)NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
#ifndef BAD_CHARS
    Characteristics->NdkCharacteristics.OpenNDKAdapterHandler = open_adapter;
#else
    (void)open_adapter;
#endif
    Characteristics->NdkCharacteristics.CloseNDKAdapterHandler = close_adapter;
    *DriverContext = NULL;
    return STATUS_SUCCESS;
#endif
}
#endif
