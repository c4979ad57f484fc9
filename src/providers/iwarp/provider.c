/* provider.c - the module entry point (our DriverEntry + MiniportSetOptions, §6.2, registered
 * through src/common/ndk_prov_entry), the bind of an interface and the configuration.
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
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* Reads one configuration value ("iwarp.<key>" in the config file or NDK_IWARP_<KEY>); any
 * thread, may not block for long. */
static const char *iw_cfg_str(struct iw_provider *prov, const char *key)
{
    if (!prov->drv.services->GetConfig)
        return NULL;
    return prov->drv.services->GetConfig(prov->drv.driver_handle, key);
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

    /* Request CRC by default (RFC 5044 §4.4; hardware does, siw follows), P2P with Write and
     * Read RTR as initiator (works with siw, cxgb4 and irdma), MPA revision 2. */
    c->crc = iw_cfg_u32(prov, "crc", 1, 0, 1) != 0;
    c->p2p = iw_cfg_u32(prov, "p2p", 1, 0, 1) != 0;
    c->mpa_rev = (uint8_t)iw_cfg_u32(prov, "mpa_rev", 2, 1, 2);
    /* siw waits 10 s for the Reply and 5 s for the Request. */
    c->connect_timeout_ms = iw_cfg_u32(prov, "connect_timeout_ms", 10000, 10, 600000);
    c->mpa_request_timeout_ms = iw_cfg_u32(prov, "mpa_request_timeout_ms", 5000, 10, 600000);
    c->accept_timeout_ms = iw_cfg_u32(prov, "accept_timeout_ms", 10000, 10, 600000);
    c->disconnect_timeout_ms = iw_cfg_u32(prov, "disconnect_timeout_ms", 5000, 10, 600000);
    /* RFC 5044 §7.1.2: siw as responder transmits right after its Reply; siw as initiator
     * drops the connection only if bytes are already queued behind the Reply when it reads it,
     * which a short grace period avoids. */
    c->first_fpdu_grace_ms = iw_cfg_u32(prov, "first_fpdu_grace_ms", 100, 0, 600000);
    /* docs/providers.md, Interoperating with siw: a siw responder may lose an FPDU that
     * follows its Reply too closely; 20 ms is far beyond that window and is paid once per connection. */
    c->first_fpdu_hold_ms = iw_cfg_u32(prov, "first_fpdu_hold_ms", 20, 0, 600000);
    /* A consumer polling less often than this is better served by the progress thread. */
    c->poll_progress = iw_cfg_u32(prov, "poll_progress", 1, 0, 1) != 0;
    c->poll_idle_ms = iw_cfg_u32(prov, "poll_idle_ms", 2, 1, 600000);
    c->progress_ring = iw_cfg_u32(prov, "progress_ring", 1, 0, 1) != 0;
}

/* The runtime's thread, no lock held. */
static NDIS_STATUS iw_bind(struct ndk_prov_driver *drv, NDIS_HANDLE handle, const NDK_PROVIDER_INTERFACE *ifc,
                           struct ndk_prov_bound *out)
{
    struct iw_device *dev;
    NDIS_STATUS st;

    /* A software RNIC runs over any interface with an IP address, loopback included. */
    if (!ifc->AddressCount)
        return NDIS_STATUS_NOT_SUPPORTED;
    st = iw_device_create(ndk_container_of(drv, struct iw_provider, drv), handle, ifc, &dev);
    if (st == NDIS_STATUS_SUCCESS)
        *out = (struct ndk_prov_bound){ .ctx = dev, .enabled = atomic_load(&dev->enabled), .caps = &dev->caps };
    return st;
}

/* Capture and wire faults (wire.h, ndk-iwarp(7)): prov->wire stays NULL when neither is set.
 * The runtime's thread, at load / unload. */
static void iw_load_wire(struct iw_provider *prov, const char *capture, uint32_t capture_port, const char *fault,
                         const char *seed)
{
    struct iw_wire_prov *wp;
    const char *why;

    if ((!capture || !*capture) && (!fault || !*fault))
        return;                       /* prov->wire stays NULL: no connection is tapped */
    wp = calloc(1, sizeof *wp);
    if (!wp) {
        iw_prov_log(prov, NDK_LOG_ERROR, "no memory for capture / wire faults: both are off");
        return;
    }
    prov->wire = wp;
    pthread_mutex_init(&wp->lock, NULL);
    snprintf(wp->capture_path, sizeof wp->capture_path, "%s", capture ? capture : "");
    wp->capture_port = (uint16_t)capture_port;
    wp->faults.n = 0;
    if (seed && *seed) {
        wp->faults.seed = strtoull(seed, NULL, 0);
    } else if (getrandom(&wp->faults.seed, sizeof wp->faults.seed, GRND_NONBLOCK) != sizeof wp->faults.seed) {
        wp->faults.seed = (uint64_t)iw_now_ns();
    }
    if (fault && *fault) {
        if (iw_fault_parse(fault, &wp->faults, &why) < 0) {
            iw_prov_log(prov, NDK_LOG_ERROR, "config fault=\"%s\": %s; no wire fault is armed", fault, why);
            wp->faults.n = 0;
        } else {
            iw_prov_log(prov, NDK_LOG_WARNING, "wire faults armed: \"%s\" seed %llu", fault,
                        (unsigned long long)wp->faults.seed);
        }
    }
}

static void iw_unload_wire(struct iw_provider *prov)
{
    struct iw_wire_prov *wp = prov->wire;

    if (!wp)
        return;
    if (wp->file)
        iw_pcapng_close(wp->file);
    pthread_mutex_destroy(&wp->lock);
    free(wp);
    prov->wire = NULL;
}

/* The runtime's thread. */
static NTSTATUS iw_load(struct ndk_prov_driver *drv, char *description, size_t len)
{
    struct iw_provider *prov = ndk_container_of(drv, struct iw_provider, drv);

    iw_load_config(prov);
    /* Capture and wire faults (wire.h, ndk-iwarp(7)): "capture" is a path ("%p" = pid),
     * "capture_port" limits it to connections with that local port, "fault" holds the rules,
     * "fault_seed" makes their drawn values reproducible. */
    iw_load_wire(prov, iw_cfg_str(prov, "capture"), iw_cfg_u32(prov, "capture_port", 0, 0, 65535),
                      iw_cfg_str(prov, "fault"), iw_cfg_str(prov, "fault_seed"));
    snprintf(description, len, "software iWARP RNIC over kernel TCP (MPA/DDP/RDMAP)");
    iw_log_register(prov);
    iw_prov_log(prov, NDK_LOG_INFO, "loaded: crc=%d p2p=%d mpa_rev=%u connect_timeout_ms=%u", prov->cfg.crc, prov->cfg.p2p,
                prov->cfg.mpa_rev, prov->cfg.connect_timeout_ms);
    return STATUS_SUCCESS;
}

/* The runtime halted every device first. Waits out context-free loggers using this instance. */
static void iw_unload(struct ndk_prov_driver *drv)
{
    iw_unload_wire(ndk_container_of(drv, struct iw_provider, drv));
    iw_log_unregister(ndk_container_of(drv, struct iw_provider, drv));
}

/* By role: the module, a bound device (the MiniportAdapterContext is the struct iw_device), an
 * adapter instance. */
static const struct ndk_prov_entry iw_entry = {
    .name = "iwarp", .provider_flags = NDK_PROVIDER_FLAG_SOFTWARE, .size = sizeof(struct iw_provider), .load = iw_load, .unload = iw_unload,
    .bind = iw_bind, .unbind = iw_device_destroy, .interface_change = iw_device_update, .oid_request = iw_device_oid,
    .open_adapter = iw_open_adapter, .close_adapter = iw_close_adapter,
};

IW_EXPORT NTSTATUS NdkProviderEntry(CONST NDK_RUNTIME_SERVICES *Services, NDIS_HANDLE DriverHandle,
                                    NDK_MINIPORT_CHARACTERISTICS *Characteristics, NDIS_HANDLE *DriverContext)
{
    return ndk_prov_entry_register(&iw_entry, Services, DriverHandle, Characteristics, DriverContext);
}
