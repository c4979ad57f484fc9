/*
 * rt_internal.h - the runtime's private state: loaded providers, bound adapters, open
 * NDK_ADAPTER instances, PnP registrations and the event queue.
 *
 * Locking: rt->lock (mutex) guards every list and every field marked "rt->lock" below. It is
 * never held while calling into a provider or a consumer. A per-adapter call_lock serialises the
 * miniport handlers of one adapter (Initialize/InterfaceChange/OidRequest/Halt), as NDIS does.
 */
#ifndef NDK_RT_INTERNAL_H
#define NDK_RT_INTERNAL_H

#include <ndk/runtime.h>
#include <pthread.h>
#include <stdarg.h>

#include "ndk_list.h"
#include "sysview_internal.h"
#include "netif.h"

struct rt_kv {
    struct rt_kv *next;
    char         *key;
    char         *value;
};

struct rt_provider {
    struct ndk_list              link;          /* rt->providers; rt->lock */
    struct ndk_rt               *rt;
    char                         file[256];     /* "ndk-iwarp.so" */
    ndk_rt_provider_info         info;          /* name, path, status, message */
    void                        *dl;
    NDK_MINIPORT_CHARACTERISTICS chars;
    NDIS_HANDLE                  driver_context;
    struct rt_kv                *config_cache;  /* strings handed out by GetConfig; freed at unload */
    pthread_mutex_t              config_lock;   /* guards config_cache only */
};

struct rt_adapter {
    struct ndk_list       link;                 /* rt->adapters; rt->lock */
    struct ndk_rt        *rt;
    ndk_rt_adapter_id     id;
    struct rt_provider   *prov;
    NDIS_HANDLE           miniport_context;
    struct ndk_netif      netif;                /* rt->lock */
    NDIS_NDK_CAPABILITIES caps;
    NDK_ADAPTER_INFO      info;
    BOOLEAN               enabled;              /* rt->lock */
    int                   open_instances;       /* rt->lock */
    int                   busy;                 /* API calls in flight into the provider; rt->lock */
    int                   removed;              /* interface gone: halt once idle; rt->lock */
    int                   halted;               /* rt->lock */
    pthread_mutex_t       call_lock;            /* serialises miniport handlers for this adapter */
    struct ndk_sv_rec    *sv;                   /* its system-view record (SysviewAdapter) */
    struct ndk_sv_rec     sv_private;           /* the record when none could be allocated */
};

struct nf_stack;

struct rt_instance {
    struct ndk_list    link;                    /* rt->instances; rt->lock */
    NDK_ADAPTER       *ndk;                     /* the provider's */
    NDK_ADAPTER       *top;                     /* what the consumer holds: ndk, or the filter stack's top */
    struct nf_stack   *stack;                   /* NULL without filters */
    struct rt_adapter *adapter;
};

struct rt_registration {
    struct ndk_list link;                       /* rt->registrations; rt->lock */
    ULONG           id;
    ndk_rt_event_fn fn;
    void           *ctx;
    int             running;                    /* callback in progress; rt->lock */
    int             dead;                       /* unregistered; rt->lock */
};

struct rt_event {
    struct ndk_list link;                       /* rt->events; rt->lock */
    ULONG           target;                     /* registration id, 0 = every registration */
    ndk_rt_event    ev;
};

struct ndk_rt {
    pthread_mutex_t  lock;
    pthread_cond_t   cond;                      /* registration callbacks finished, adapters idle */
    struct ndk_list  providers;
    struct ndk_list  adapters;
    struct ndk_list  instances;
    struct ndk_list  registrations;
    struct ndk_list  events;
    ndk_rt_adapter_id next_adapter_id;
    ULONG            next_registration_id;
    NDK_RUNTIME_SERVICES services;

    /* configuration, fixed after open */
    char            *provider_path;
    char            *providers_filter;
    char            *interfaces_filter;
    char            *filters;                   /* configured filter names, outermost first */
    struct ndk_list  filter_modules;            /* struct ndk_filter_module; loaded at open */
    int              filter_count;
    struct rt_kv    *config;                    /* the config file's key/value pairs */
    void           (*log_fn)(void *ctx, int level, const char *line);
    void            *log_ctx;
    int              log_level;

    /* event thread */
    pthread_t        thread;
    int              thread_started;
    int              wake_fd;                   /* eventfd: events queued or stop requested */
    int              stop;                      /* rt->lock */
    struct ndk_netif_monitor *monitor;          /* NULL with no_monitor */
};

/* logging (rt.c); never blocks for long, no lock needed */
void rt_log(struct ndk_rt *rt, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void rt_vlog(struct ndk_rt *rt, int level, const char *prefix, const char *fmt, va_list ap);

/* config.c: parse the config file; 0 or -errno (a missing file is 0) */
int rt_config_load(struct ndk_rt *rt, const char *path);
const char *rt_config_get(const struct ndk_rt *rt, const char *key);
void rt_config_free(struct rt_kv *kv);
/* Scoped lookup: env NDK_<SCOPE>_<KEY>, then "<scope>.<key>" in the file; the returned string is
 * kept in *cache (guarded by *lock) until the cache is freed. */
const char *rt_config_scoped_get(const struct ndk_rt *rt, const char *scope, const char *key, struct rt_kv **cache,
                                 pthread_mutex_t *lock);
/* Provider-scoped lookup (the provider's name is the scope). */
const char *rt_config_provider_get(struct rt_provider *p, const char *key);
/* TRUE when name is in the comma-separated list (NULL or empty list = everything). */
int rt_list_contains(const char *list, const char *name);

/* loader.c: load every provider module in the path; may block; rt->lock not held */
void rt_loader_load_all(struct ndk_rt *rt);
void rt_loader_unload_all(struct ndk_rt *rt);

/* registry.c: binding adapters to interfaces; may block (calls providers); rt->lock not held */
void rt_registry_sync(struct ndk_rt *rt);          /* snapshot netlink and bind/update/remove */
void rt_registry_halt_all(struct ndk_rt *rt);
/* With rt->lock held: find a live adapter by id. */
struct rt_adapter *rt_registry_find_locked(struct ndk_rt *rt, ndk_rt_adapter_id id);
/* Drops an API-call reference taken with busy++ under rt->lock; halts a removed idle adapter. */
void rt_registry_release(struct rt_adapter *a);
void rt_adapter_fill_info(const struct rt_adapter *a, ndk_rt_adapter_info *out); /* rt->lock held */

/* pnp.c: event queue and the event thread */
int rt_pnp_start(struct ndk_rt *rt);
void rt_pnp_stop(struct ndk_rt *rt);
/* Queues an event for delivery on the event thread; rt->lock held by the caller. */
void rt_pnp_queue_locked(struct ndk_rt *rt, ndk_rt_event_type type, const struct rt_adapter *a, ULONG target);
void rt_pnp_wake(struct ndk_rt *rt);

/* filter_module.c: the configured filters' modules; may block; rt->lock not held */
void rt_filters_load_all(struct ndk_rt *rt);
void rt_filters_unload_all(struct ndk_rt *rt);

/* services.c: what providers may call */
void rt_services_init(NDK_RUNTIME_SERVICES *s);

#endif
