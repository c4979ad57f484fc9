/* provider.c - the module entry point (DriverEntry + MiniportSetOptions, §6.2) and the runtime
 * handlers. At load the provider asks rdma-core which RDMA devices exist; with none it still
 * loads, declines every interface, and says why in its description (what ndkinfo prints). */
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

    if (!dev || !dev->prov->services->Log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    dev->prov->services->Log(dev->prov->driver_handle, level, "%s: %s", dev->devname, line);
}

static void vb_prov_log(struct vb_provider *prov, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void vb_prov_log(struct vb_provider *prov, int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (!prov->services->Log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    prov->services->Log(prov->driver_handle, level, "%s", line);
}

static NDIS_STATUS vb_initialize(NDIS_HANDLE drv, NDIS_HANDLE handle, CONST NDK_PROVIDER_INTERFACE *ifc,
                                 NDIS_HANDLE *ctx, NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES *attrs)
{
    struct vb_provider *prov = drv;
    struct vb_device *dev;
    NDIS_STATUS st;

    /* rdma_cm binds loopback addresses to an arbitrary device, so lo is never an RDMA port's
     * netdev; an interface is served only when one of its addresses resolves to a device. */
    if (!prov->ndevices || ifc->IsLoopback || !ifc->AddressCount)
        return NDIS_STATUS_NOT_SUPPORTED;
    st = vb_device_create(prov, handle, ifc, &dev);
    if (st != NDIS_STATUS_SUCCESS)
        return st;
    pthread_mutex_lock(&prov->lock);
    ndk_list_add_tail(&prov->devices, &dev->link);
    pthread_mutex_unlock(&prov->lock);
    memset(attrs, 0, sizeof(*attrs));
    attrs->Header.Type = NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES;
    attrs->Header.Revision = NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1;
    attrs->Header.Size = NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1;
    attrs->Enabled = atomic_load(&dev->enabled);
    attrs->NdkCapabilities = &dev->caps;
    *ctx = dev;
    return NDIS_STATUS_SUCCESS;
}

static VOID vb_interface_change(NDIS_HANDLE ctx, CONST NDK_PROVIDER_INTERFACE *ifc)
{
    vb_device_update(ctx, ifc);
}

static VOID vb_halt(NDIS_HANDLE ctx)
{
    struct vb_device *dev = ctx;

    pthread_mutex_lock(&dev->prov->lock);
    ndk_list_del(&dev->link);
    pthread_mutex_unlock(&dev->prov->lock);
    vb_device_destroy(dev);
}

static NDIS_STATUS vb_oid_request(NDIS_HANDLE ctx, NDK_OID_REQUEST *req)
{
    return vb_device_oid(ctx, req);
}

static VOID vb_unload(NDIS_HANDLE drv)
{
    struct vb_provider *prov = drv;

    pthread_mutex_destroy(&prov->lock);
    free(prov);
}

VB_EXPORT NTSTATUS NdkProviderEntry(CONST NDK_RUNTIME_SERVICES *Services, NDIS_HANDLE DriverHandle,
                                    NDK_MINIPORT_CHARACTERISTICS *Characteristics, NDIS_HANDLE *DriverContext)
{
    struct vb_provider *prov;

    if (!Services || !Characteristics || !DriverContext || Services->AbiVersion != NDK_PROVIDER_ABI_VERSION)
        return STATUS_NOT_SUPPORTED;
    prov = calloc(1, sizeof(*prov));
    if (!prov)
        return STATUS_INSUFFICIENT_RESOURCES;
    prov->services = Services;
    prov->driver_handle = DriverHandle;
    pthread_mutex_init(&prov->lock, NULL);
    ndk_list_init(&prov->devices);
    prov->ndevices = vb_device_scan(prov);

    Characteristics->AbiVersion = NDK_PROVIDER_ABI_VERSION;
    snprintf(Characteristics->Name, sizeof Characteristics->Name, "verbs");
    snprintf(Characteristics->Description, sizeof Characteristics->Description, "rdma-core: %.*s",
             (int)sizeof Characteristics->Description - 12, prov->why);
    Characteristics->InitializeHandler = vb_initialize;
    Characteristics->InterfaceChangeHandler = vb_interface_change;
    Characteristics->HaltHandler = vb_halt;
    Characteristics->OidRequestHandler = vb_oid_request;
    Characteristics->UnloadHandler = vb_unload;
    Characteristics->NdkCharacteristics.Header.Type = NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS;
    Characteristics->NdkCharacteristics.Header.Revision = NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
    Characteristics->NdkCharacteristics.Header.Size = NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
    Characteristics->NdkCharacteristics.OpenNDKAdapterHandler = vb_adapter_open;
    Characteristics->NdkCharacteristics.CloseNDKAdapterHandler = vb_adapter_close;
    *DriverContext = prov;
    vb_prov_log(prov, NDK_LOG_INFO, "loaded: %s", prov->why);
    return STATUS_SUCCESS;
}
