/* ndk_prov_entry: a provider module's registration with the runtime (NdkProviderEntry, §6.2)
 * and the handlers only the library needs to see: the instance (DriverContext) allocation and
 * release, the characteristics, the NDK attributes reported at bind (§6.4).
 *
 * Every NdkProviderEntry call makes its own instance (a process may open several runtimes and
 * dlopen hands each the same module), so nothing about a runtime lives in a module global. The
 * provider's instance struct starts with struct ndk_prov_driver; its device structs are its own. */
#ifndef NDK_PROV_ENTRY_H
#define NDK_PROV_ENTRY_H

#include <stdbool.h>
#include <stddef.h>

#include <ndisndk.h>
#include <ndk/provider.h>

struct ndk_prov_driver;

/* What a bind reports to the runtime. */
struct ndk_prov_bound {
    NDIS_HANDLE ctx;                  /* the MiniportAdapterContext: the provider's device */
    bool enabled;                     /* NDK state at bind */
    NDIS_NDK_CAPABILITIES *caps;      /* lives as long as the device */
};

/* A provider's registration: fixed per provider. */
struct ndk_prov_entry {
    const char *name;
    ULONG provider_flags;             /* NDK_PROVIDER_FLAG_*, e.g. a software RNIC ranks after hardware */
    size_t size;                      /* the provider's instance struct, ndk_prov_driver first */
    /* After the instance is allocated (zeroed, services and handle set): reads the configuration,
     * writes the one-line description (len bytes), may fail the load. Runtime thread. */
    NTSTATUS (*load)(struct ndk_prov_driver *drv, char *description, size_t len);
    /* Binds one interface, or declines it (NDIS_STATUS_NOT_SUPPORTED). Runtime thread, no lock. */
    NDIS_STATUS (*bind)(struct ndk_prov_driver *drv, NDIS_HANDLE handle, const NDK_PROVIDER_INTERFACE *ifc,
                        struct ndk_prov_bound *out);
    /* The HaltHandler: undoes a bind after the runtime closed every adapter instance on it. */
    NDK_MINIPORT_HALT_HANDLER unbind;
    NDK_MINIPORT_INTERFACE_CHANGE_HANDLER interface_change;
    NDK_MINIPORT_OID_REQUEST_HANDLER oid_request;
    /* Optional: before the instance is freed (every device is unbound). Runtime thread. */
    void (*unload)(struct ndk_prov_driver *drv);
    OPEN_NDK_ADAPTER_HANDLER open_adapter;
    CLOSE_NDK_ADAPTER_HANDLER close_adapter;
};

struct ndk_prov_driver {
    const struct ndk_prov_entry *entry;
    const NDK_RUNTIME_SERVICES *services;
    NDIS_HANDLE driver_handle;
};

/* The whole of a provider's NdkProviderEntry: checks the call (ABI version), allocates
 * e->size zeroed bytes, runs e->load, fills *Characteristics with the runtime handlers and
 * *DriverContext with the instance. STATUS_SUCCESS, STATUS_NOT_SUPPORTED (a runtime of another
 * ABI), STATUS_INSUFFICIENT_RESOURCES, or what load returned. Runtime thread. */
NTSTATUS ndk_prov_entry_register(const struct ndk_prov_entry *e, CONST NDK_RUNTIME_SERVICES *services,
                                 NDIS_HANDLE driver_handle, NDK_MINIPORT_CHARACTERISTICS *c, NDIS_HANDLE *ctx);

#endif
