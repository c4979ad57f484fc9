/* ndk_prov_entry.c - the module's registration and the handlers the library owns (§6.2). */
#include "ndk_prov_entry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The runtime's thread, no lock held. */
static NDIS_STATUS ndk_prov_entry_initialize(NDIS_HANDLE drvh, NDIS_HANDLE handle, CONST NDK_PROVIDER_INTERFACE *ifc,
                                             NDIS_HANDLE *ctx, NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES *attrs)
{
    struct ndk_prov_driver *drv = drvh;
    struct ndk_prov_bound b = { 0 };
    NDIS_STATUS st = drv->entry->bind(drv, handle, ifc, &b);

    if (st != NDIS_STATUS_SUCCESS)
        return st;
    /* §6.4: capabilities are reported even when NDK is disabled. */
    memset(attrs, 0, sizeof(*attrs));
    attrs->Header.Type = NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES;
    attrs->Header.Revision = NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1;
    attrs->Header.Size = NDIS_SIZEOF_MINIPORT_ADAPTER_NDK_ATTRIBUTES_REVISION_1;
    attrs->Enabled = b.enabled;
    attrs->NdkCapabilities = b.caps;
    *ctx = b.ctx;
    return NDIS_STATUS_SUCCESS;
}

/* The runtime's thread, after it halted every device. */
static VOID ndk_prov_entry_unload(NDIS_HANDLE drvh)
{
    struct ndk_prov_driver *drv = drvh;

    if (drv->entry->unload)
        drv->entry->unload(drv);
    free(drv);
}

NTSTATUS ndk_prov_entry_register(const struct ndk_prov_entry *e, CONST NDK_RUNTIME_SERVICES *services,
                                 NDIS_HANDLE driver_handle, NDK_MINIPORT_CHARACTERISTICS *c, NDIS_HANDLE *ctx)
{
    struct ndk_prov_driver *drv;
    NTSTATUS st;

    if (!services || !c || !ctx || services->AbiVersion != NDK_PROVIDER_ABI_VERSION)
        return STATUS_NOT_SUPPORTED;
    drv = calloc(1, e->size);
    if (!drv)
        return STATUS_INSUFFICIENT_RESOURCES;
    drv->entry = e;
    drv->services = services;
    drv->driver_handle = driver_handle;
    c->AbiVersion = NDK_PROVIDER_ABI_VERSION;
    snprintf(c->Name, sizeof c->Name, "%s", e->name);
    c->Description[0] = '\0';
    st = e->load(drv, c->Description, sizeof c->Description);
    if (st != STATUS_SUCCESS) {
        free(drv);
        return st;
    }
    c->InitializeHandler = ndk_prov_entry_initialize;
    c->InterfaceChangeHandler = e->interface_change;
    c->HaltHandler = e->unbind;
    c->OidRequestHandler = e->oid_request;
    c->UnloadHandler = ndk_prov_entry_unload;
    c->ProviderFlags = e->provider_flags;
    c->NdkCharacteristics.Header.Type = NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS;
    c->NdkCharacteristics.Header.Revision = NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
    c->NdkCharacteristics.Header.Size = NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
    c->NdkCharacteristics.Flags = 0;   /* no optional NDK behaviours are claimed */
    c->NdkCharacteristics.OpenNDKAdapterHandler = e->open_adapter;
    c->NdkCharacteristics.CloseNDKAdapterHandler = e->close_adapter;
    *ctx = drv;
    return STATUS_SUCCESS;
}
