/* provider.c - the module entry point (DriverEntry + MiniportSetOptions, §6.2) and the runtime
 * handlers, registered through src/common/ndk_prov_entry. At load the provider asks rdma-core
 * which RDMA devices exist; with none it still loads, declines every interface, and says why in
 * its description (what ndkinfo prints). */
#include "verbs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vb_log(const struct vb_device *dev, int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (!dev || !dev->prov->drv.services->Log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    dev->prov->drv.services->Log(dev->prov->drv.driver_handle, level, "%s: %s", dev->devname, line);
}

static void vb_prov_log(struct vb_provider *prov, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void vb_prov_log(struct vb_provider *prov, int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (!prov->drv.services->Log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    prov->drv.services->Log(prov->drv.driver_handle, level, "%s", line);
}

/* The runtime's thread, no lock held. */
static NDIS_STATUS vb_bind(struct ndk_prov_driver *drv, NDIS_HANDLE handle, const NDK_PROVIDER_INTERFACE *ifc,
                           struct ndk_prov_bound *out)
{
    struct vb_provider *prov = ndk_container_of(drv, struct vb_provider, drv);
    struct vb_device *dev;
    NDIS_STATUS st;

    /* rdma_cm binds loopback addresses to an arbitrary device, so lo is never an RDMA port's
     * netdev; an interface is served only when one of its addresses resolves to a device. */
    if (!prov->ndevices || ifc->IsLoopback || !ifc->AddressCount)
        return NDIS_STATUS_NOT_SUPPORTED;
    if ((st = vb_device_create(prov, handle, ifc, &dev)) != NDIS_STATUS_SUCCESS)
        return st;
    out->ctx = dev;
    out->enabled = atomic_load(&dev->enabled);
    out->caps = &dev->caps;
    return NDIS_STATUS_SUCCESS;
}

/* The runtime's handlers on a bound device (ctx: the struct vb_device). */
static VOID vb_halt(NDIS_HANDLE ctx)
{
    vb_device_destroy(ctx);
}

static VOID vb_interface_change(NDIS_HANDLE ctx, CONST NDK_PROVIDER_INTERFACE *ifc)
{
    vb_device_update(ctx, ifc);
}

static NDIS_STATUS vb_oid_request(NDIS_HANDLE ctx, NDK_OID_REQUEST *req)
{
    return vb_device_oid(ctx, req);
}

/* The runtime's thread; may block (the device scan). */
static NTSTATUS vb_load(struct ndk_prov_driver *drv, char *description, size_t len)
{
    struct vb_provider *prov = ndk_container_of(drv, struct vb_provider, drv);

    prov->ndevices = vb_device_scan(prov);
    snprintf(description, len, "rdma-core: %.*s", (int)len - 12, prov->why);
    vb_prov_log(prov, NDK_LOG_INFO, "loaded: %s", prov->why);
    return STATUS_SUCCESS;
}

/* By role: the module (nothing to undo at unload), a bound device, an adapter instance. */
static const struct ndk_prov_entry vb_entry = {
    .name = "verbs", .size = sizeof(struct vb_provider), .load = vb_load,
    .bind = vb_bind, .unbind = vb_halt, .interface_change = vb_interface_change, .oid_request = vb_oid_request,
    .open_adapter = vb_adapter_open, .close_adapter = vb_adapter_close,
};

VB_EXPORT NTSTATUS NdkProviderEntry(CONST NDK_RUNTIME_SERVICES *Services, NDIS_HANDLE DriverHandle,
                                    NDK_MINIPORT_CHARACTERISTICS *Characteristics, NDIS_HANDLE *DriverContext)
{
    return ndk_prov_entry_register(&vb_entry, Services, DriverHandle, Characteristics, DriverContext);
}
