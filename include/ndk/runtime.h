/*
 * ndk/runtime.h - the consumer API of the OpenNDK runtime (libndk): the part of NDIS and the
 * PnP manager that an NDK consumer sees on Windows, as a library.
 *
 * A process opens the runtime, which loads provider modules and binds adapters to the network
 * interfaces of the process's network namespace (one adapter per provider and interface).
 * Consumers find an adapter by local IPv4/IPv6 address, interface name or index, open an
 * NDK_ADAPTER instance on it (the provider's open handler, with version negotiation) and use its
 * dispatch tables; they register for PnP events (adapter arrival/removal, address changes, NDK
 * enable/disable) and can route OID_NDK_* requests to the provider.
 *
 * Threading: every function is thread-safe. PnP callbacks run on the runtime's event thread
 * with no runtime lock held; they may call any function here, including ndk_rt_close_adapter.
 */
#ifndef NDK_RUNTIME_H
#define NDK_RUNTIME_H

#include "../ndisndk.h"
#include "provider.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ndk_rt ndk_rt;
typedef ULONG ndk_rt_adapter_id;      /* unique within one runtime, never reused; 0 = none */

#define NDK_RT_MAX_ADDRESSES 64

typedef struct ndk_rt_config {
    /* Colon-separated provider directories. NULL: $NDK_PROVIDER_PATH, else "provider_path" from
     * the config file, else the compiled-in install directory. */
    const char *provider_path;
    /* Config file. NULL: $NDK_CONFIG, else the compiled-in /etc path; a missing file is fine. */
    const char *config_file;
    /* Comma-separated provider names to load; NULL: $NDK_PROVIDERS, else all found. */
    const char *providers;
    /* Comma-separated interface names to offer to providers; NULL: "interfaces" from the config
     * file, else every interface that is up. */
    const char *interfaces;
    /* TRUE: no rtnetlink watcher (adapters are bound once, at open). For one-shot tools. */
    BOOLEAN no_monitor;
    /* Log sink; NULL writes warnings and errors to stderr. level is NDK_LOG_*. */
    void (*log)(void *ctx, int level, const char *line);
    void *log_ctx;
    int log_level;                    /* most verbose level passed to log; 0 means NDK_LOG_WARNING */
} ndk_rt_config;

/* Opens a runtime. May block (loads providers, reads netlink). */
NTSTATUS ndk_rt_open(const ndk_rt_config *config, ndk_rt **out);
/* Halts every adapter and unloads providers. Consumers must have closed their NDK_ADAPTERs. */
void ndk_rt_close(ndk_rt *rt);

typedef struct ndk_rt_provider_info {
    char     name[NDK_PROVIDER_NAME_MAX];   /* from the module, or its file name if it failed */
    char     description[96];
    char     path[512];
    NTSTATUS status;                        /* STATUS_SUCCESS when loaded and initialised */
    char     message[256];                  /* why it was skipped, when status is a failure */
    ULONG    adapter_count;
    ULONG    flags;                         /* NDK_PROVIDER_FLAG_* it declared (ndk/provider.h) */
} ndk_rt_provider_info;

/* Providers found in the provider path, loaded or not, in load order. */
ULONG ndk_rt_provider_count(ndk_rt *rt);
NTSTATUS ndk_rt_provider_get(ndk_rt *rt, ULONG index, ndk_rt_provider_info *out);

typedef struct ndk_rt_adapter_info {
    ndk_rt_adapter_id     id;
    char                  provider[NDK_PROVIDER_NAME_MAX];
    char                  ifname[NDK_PROVIDER_IFNAME_MAX];
    ULONG                 ifindex;
    ULONG                 mtu;
    BOOLEAN               is_loopback;
    BOOLEAN               enabled;          /* NDK enabled (OID_NDK_SET_STATE) */
    ULONG                 open_instances;   /* NDK_ADAPTER instances open in this process */
    ULONG                 address_count;
    SOCKADDR_INET         addresses[NDK_RT_MAX_ADDRESSES];
    NDIS_NDK_CAPABILITIES capabilities;     /* capabilities.NdkInfo points at info below */
    NDK_ADAPTER_INFO      info;             /* as the provider advertised at initialisation */
} ndk_rt_adapter_info;

/* Fills up to *count adapters; on return *count is the number of adapters. Returns
 * STATUS_BUFFER_TOO_SMALL when there were more than fitted (the first ones are filled). */
NTSTATUS ndk_rt_adapter_list(ndk_rt *rt, ndk_rt_adapter_info *out, ULONG *count);
NTSTATUS ndk_rt_adapter_query(ndk_rt *rt, ndk_rt_adapter_id id, ndk_rt_adapter_info *out);

/* Finding adapters. provider may be NULL (any). Address port is ignored. Return
 * STATUS_OBJECT_NAME_NOT_FOUND when no adapter matches. */
NTSTATUS ndk_rt_find_adapter_by_address(ndk_rt *rt, const struct sockaddr *address, const char *provider,
                                        ndk_rt_adapter_id *out);
NTSTATUS ndk_rt_find_adapter_by_ifname(ndk_rt *rt, const char *ifname, const char *provider,
                                       ndk_rt_adapter_id *out);
NTSTATUS ndk_rt_find_adapter_by_ifindex(ndk_rt *rt, ULONG ifindex, const char *provider,
                                        ndk_rt_adapter_id *out);

/* Opens an NDK_ADAPTER instance through the provider's open handler. Version is the major the
 * consumer wants and the lowest minor it accepts (§2.2). May block. Returns the provider's status:
 * NDIS_STATUS_BAD_VERSION, NDIS_STATUS_ADAPTER_NOT_READY (NDK disabled), ...; and
 * STATUS_NO_SUCH_DEVICE when the adapter is gone. */
NTSTATUS ndk_rt_open_adapter(ndk_rt *rt, ndk_rt_adapter_id id, NDK_VERSION version, NDK_ADAPTER **out);
/* Blocking close (CLOSE_NDK_ADAPTER_HANDLER): returns after every callback on every object of
 * the instance has returned. Never call it from inside an NDK callback. */
void ndk_rt_close_adapter(ndk_rt *rt, NDK_ADAPTER *adapter);

/* OID_NDK_SET_STATE: enable or disable NDK on an adapter. Consumers receive NDK_DISABLE and must
 * close their instances; while disabled, opens fail with NDIS_STATUS_ADAPTER_NOT_READY. */
NTSTATUS ndk_rt_set_state(ndk_rt *rt, ndk_rt_adapter_id id, BOOLEAN enable);
/* Routes a query OID (OID_NDK_STATISTICS, OID_NDK_CONNECTIONS, OID_NDK_LOCAL_ENDPOINTS) to the
 * provider. NDIS_STATUS_BUFFER_TOO_SHORT with *bytes_needed when the buffer is too small. */
NTSTATUS ndk_rt_query_oid(ndk_rt *rt, ndk_rt_adapter_id id, NDIS_OID oid, void *buffer, ULONG length,
                          ULONG *bytes_written, ULONG *bytes_needed);

typedef enum ndk_rt_event_type {
    NDK_RT_EVENT_ADAPTER_ARRIVAL = 1,
    NDK_RT_EVENT_ADAPTER_REMOVAL = 2,     /* consumers must close their instances on it */
    NDK_RT_EVENT_ADDRESS_CHANGE  = 3,     /* the interface's address set changed */
    NDK_RT_EVENT_NDK_ENABLE      = 4,
    NDK_RT_EVENT_NDK_DISABLE     = 5      /* consumers must close their instances on it */
} ndk_rt_event_type;

typedef struct ndk_rt_event {
    ndk_rt_event_type type;
    ndk_rt_adapter_id adapter;
    char              provider[NDK_PROVIDER_NAME_MAX];
    char              ifname[NDK_PROVIDER_IFNAME_MAX];
    ULONG             ifindex;
} ndk_rt_event;

typedef void (*ndk_rt_event_fn)(void *ctx, const ndk_rt_event *event);

/* Registers for PnP events. An ADAPTER_ARRIVAL for every adapter already bound is delivered
 * first (on the event thread). Returns a registration handle in *registration. */
NTSTATUS ndk_rt_register_pnp(ndk_rt *rt, ndk_rt_event_fn fn, void *ctx, ULONG *registration);
/* Unregisters; when it returns, no callback of that registration is running or will run
 * (unless called from inside that registration's own callback). */
void ndk_rt_unregister_pnp(ndk_rt *rt, ULONG registration);

/* The system view (ndk-sysview(7)): what every OpenNDK process on the machine publishes about
 * its NDK objects (ndk/sysview.h). A reader needs no runtime of its own. */
typedef struct ndk_rt_sv_process {
    struct ndk_sv_header header;      /* pid, uid, comm, exe, net_ns, ... */
    ULONG                count;
    struct ndk_sv_rec   *records;     /* consistent copies of the records in use */
} ndk_rt_sv_process;

typedef struct ndk_rt_sysview {
    ULONG              count;         /* processes, in pid order */
    ndk_rt_sv_process *processes;
    ULONG              skipped;       /* live registries the caller may not read */
    char               dir[256];      /* the directory read (the first, when root reads several) */
} ndk_rt_sysview;

/* Reads every live process's registry the caller may read: dir, else $NDK_RUNTIME_DIR, else the
 * default directory (root reads every user's). A registry whose process died is skipped and
 * removed when the caller may. The caller's own process is included when it publishes. May
 * block (file I/O). STATUS_NOT_FOUND when the directory does not exist. */
NTSTATUS ndk_rt_sysview_read(const char *dir, ndk_rt_sysview **out);
void ndk_rt_sysview_free(ndk_rt_sysview *sv);
/* "QP", "CQ", ... for enum ndk_sv_type; "?" for others. */
const char *ndk_rt_sysview_type_name(unsigned type);

/* Names: "STATUS_CONNECTION_REFUSED", "NDIS_STATUS_BAD_VERSION", ...; hex for unknown codes
 * (the returned string then lives in thread-local storage). */
const char *ndk_rt_status_name(NTSTATUS status);
const char *ndk_rt_event_name(ndk_rt_event_type type);

#ifdef __cplusplus
}
#endif

#endif /* NDK_RUNTIME_H */
