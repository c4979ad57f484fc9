/* provider.c - the module entry point (our DriverEntry + MiniportSetOptions, §6.2), the runtime
 * handlers (Initialize / InterfaceChange / Halt / OID / Unload) and the configuration.
 *
 * Talks to: adapter.c (devices and adapter instances), log.c (the instance registry).
 *
 * Instances. Every NdkProviderEntry call creates its own struct iw_provider (the DriverContext):
 * a process may open several runtimes, and dlopen hands each the same module, so nothing about
 * a runtime (its services, driver handle, configuration) may live in a module global. Devices
 * reach their instance through dev->prov; objects through obj->dev->prov.
 *
 * The only module-global state is process-wide by nature: the registry of live instances
 * (log.c: used by context-free logging only) and the ephemeral port allocator (endpoint.c). */
#include "iwarp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads one configuration value ("iwarp.<key>" in the config file or NDK_IWARP_<KEY>); any
 * thread, may not block for long. */
static const char *iw_cfg_str(struct iw_provider *prov, const char *key)
{
    if (!prov->services->GetConfig)
        return NULL;
    return prov->services->GetConfig(prov->driver_handle, key);
}

static uint32_t iw_cfg_u32(struct iw_provider *prov, const char *key, uint32_t def, uint32_t min, uint32_t max)
{
    const char *s = iw_cfg_str(prov, key);
    char *end;
    unsigned long v;

    if (!s || !*s)
        return def;
    v = strtoul(s, &end, 0);
    if (*end || v < min || v > max) {
        iw_prov_log(prov, NDK_LOG_WARNING, "config %s=\"%s\" is not a number in [%u, %u]; using %u", key, s, min,
                    max, def);
        return def;
    }
    return (uint32_t)v;
}

static void iw_load_config(struct iw_provider *prov)
{
    struct iw_config *c = &prov->cfg;

    /* iwarp-wire.md §8: request CRC by default (hardware does; siw follows), P2P with Write and
     * Read RTR as initiator (works with siw, cxgb4 and irdma), MPA revision 2. */
    c->crc = iw_cfg_u32(prov, "crc", 1, 0, 1) != 0;
    c->p2p = iw_cfg_u32(prov, "p2p", 1, 0, 1) != 0;
    c->mpa_rev = (uint8_t)iw_cfg_u32(prov, "mpa_rev", 2, 1, 2);
    /* iwarp-wire.md §2.5: siw waits 10 s for the Reply and 5 s for the Request. */
    c->connect_timeout_ms = iw_cfg_u32(prov, "connect_timeout_ms", 10000, 10, 600000);
    c->mpa_request_timeout_ms = iw_cfg_u32(prov, "mpa_request_timeout_ms", 5000, 10, 600000);
    c->accept_timeout_ms = iw_cfg_u32(prov, "accept_timeout_ms", 10000, 10, 600000);
    c->disconnect_timeout_ms = iw_cfg_u32(prov, "disconnect_timeout_ms", 5000, 10, 600000);
    /* iwarp-wire.md §2.2: siw as responder transmits right after its Reply; siw as initiator
     * drops the connection only if bytes are already queued behind the Reply when it reads it,
     * which a short grace period avoids. */
    c->first_fpdu_grace_ms = iw_cfg_u32(prov, "first_fpdu_grace_ms", 100, 0, 600000);
    /* iwarp-wire.md §2.2 and README: a siw responder may lose an FPDU that follows its Reply
     * too closely; 20 ms is far beyond that window and is paid once per connection. */
    c->first_fpdu_hold_ms = iw_cfg_u32(prov, "first_fpdu_hold_ms", 20, 0, 600000);
    /* A consumer polling less often than this is better served by the progress thread. */
    c->poll_progress = iw_cfg_u32(prov, "poll_progress", 1, 0, 1) != 0;
    c->poll_idle_ms = iw_cfg_u32(prov, "poll_idle_ms", 2, 1, 600000);
}

static NDIS_STATUS iw_initialize(NDIS_HANDLE drv, NDIS_HANDLE handle, CONST NDK_PROVIDER_INTERFACE *ifc,
                                 NDIS_HANDLE *ctx, NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES *attrs)
{
    struct iw_provider *prov = drv;
    struct iw_device *dev;
    NDIS_STATUS st;

    /* A software RNIC runs over any interface with an IP address, loopback included. */
    if (!ifc->AddressCount)
        return NDIS_STATUS_NOT_SUPPORTED;
    st = iw_device_create(prov, handle, ifc, &dev);
    if (st != NDIS_STATUS_SUCCESS)
        return st;
    pthread_mutex_lock(&prov->lock);
    ndk_list_add_tail(&prov->devices, &dev->link);
    pthread_mutex_unlock(&prov->lock);

    /* §6.4: capabilities are reported even when NDK is disabled. */
    memset(attrs, 0, sizeof(*attrs));
    attrs->Header.Type = NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES;
    attrs->Header.Revision = NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1;
    attrs->Header.Size = NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1;
    attrs->Enabled = atomic_load(&dev->enabled);
    attrs->NdkCapabilities = &dev->caps;
    *ctx = dev;
    return NDIS_STATUS_SUCCESS;
}

static VOID iw_interface_change(NDIS_HANDLE ctx, CONST NDK_PROVIDER_INTERFACE *ifc)
{
    iw_device_update(ctx, ifc);
}

static VOID iw_halt(NDIS_HANDLE ctx)
{
    struct iw_device *dev = ctx;

    pthread_mutex_lock(&dev->prov->lock);
    ndk_list_del(&dev->link);
    pthread_mutex_unlock(&dev->prov->lock);
    iw_device_destroy(dev);
}

static NDIS_STATUS iw_oid_request(NDIS_HANDLE ctx, NDK_OID_REQUEST *req)
{
    return iw_device_oid(ctx, req);
}

static VOID iw_unload(NDIS_HANDLE drv)
{
    struct iw_provider *prov = drv;

    /* The runtime halted every device first. Wait out context-free loggers using this instance. */
    iw_log_unregister(prov);
    pthread_mutex_destroy(&prov->lock);
    free(prov);
}

IW_EXPORT NTSTATUS NdkProviderEntry(CONST NDK_RUNTIME_SERVICES *Services, NDIS_HANDLE DriverHandle,
                                    NDK_MINIPORT_CHARACTERISTICS *Characteristics, NDIS_HANDLE *DriverContext)
{
    struct iw_provider *prov;

    if (!Services || !Characteristics || !DriverContext || Services->AbiVersion != NDK_PROVIDER_ABI_VERSION)
        return STATUS_NOT_SUPPORTED;
    prov = calloc(1, sizeof(*prov));
    if (!prov)
        return STATUS_INSUFFICIENT_RESOURCES;
    prov->services = Services;
    prov->driver_handle = DriverHandle;
    pthread_mutex_init(&prov->lock, NULL);
    ndk_list_init(&prov->devices);
    iw_load_config(prov);

    Characteristics->AbiVersion = NDK_PROVIDER_ABI_VERSION;
    snprintf(Characteristics->Name, sizeof Characteristics->Name, "iwarp");
    snprintf(Characteristics->Description, sizeof Characteristics->Description,
             "software iWARP RNIC over kernel TCP (MPA/DDP/RDMAP)");
    Characteristics->InitializeHandler = iw_initialize;
    Characteristics->InterfaceChangeHandler = iw_interface_change;
    Characteristics->HaltHandler = iw_halt;
    Characteristics->OidRequestHandler = iw_oid_request;
    Characteristics->UnloadHandler = iw_unload;
    Characteristics->ProviderFlags = NDK_PROVIDER_FLAG_SOFTWARE;
    Characteristics->NdkCharacteristics.Header.Type = NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS;
    Characteristics->NdkCharacteristics.Header.Revision = NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
    Characteristics->NdkCharacteristics.Header.Size = NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
    Characteristics->NdkCharacteristics.Flags = 0;
    Characteristics->NdkCharacteristics.OpenNDKAdapterHandler = iw_open_adapter;
    Characteristics->NdkCharacteristics.CloseNDKAdapterHandler = iw_close_adapter;
    *DriverContext = prov;
    iw_log_register(prov);
    iw_prov_log(prov, NDK_LOG_INFO, "loaded: crc=%d p2p=%d mpa_rev=%u connect_timeout_ms=%u", prov->cfg.crc, prov->cfg.p2p,
            prov->cfg.mpa_rev, prov->cfg.connect_timeout_ms);
    return STATUS_SUCCESS;
}
