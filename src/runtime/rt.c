/* rt.c - the consumer API of the runtime (include/ndk/runtime.h): open/close, adapter lookup,
 * opening NDK_ADAPTER instances through the provider's open handler (and under the configured
 * filter stack, filter_stack.c), OID routing and PnP registration. */
#define _GNU_SOURCE
/* The library is built with hidden visibility; only the documented API is exported. */
#pragma GCC visibility push(default)
#include <ndk/runtime.h>
#include <ndk/filter.h>
#pragma GCC visibility pop
#include "rt_internal.h"
#include "filter_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ndk_status.h"

#ifndef NDK_DEFAULT_PROVIDER_DIR
#define NDK_DEFAULT_PROVIDER_DIR "/usr/local/lib/openndk/providers"
#endif
/* Where this library is in its build tree, and the providers built beside it: a libndk loaded
 * from there finds those, so the tools work in place. */
#ifndef NDK_BUILD_LIB_DIR
#define NDK_BUILD_LIB_DIR ""
#endif
#ifndef NDK_BUILD_PROVIDER_DIR
#define NDK_BUILD_PROVIDER_DIR ""
#endif
/* The providers' folder relative to the library's own folder once installed. */
#define NDK_INSTALLED_PROVIDER_SUBDIR "openndk/providers"
#ifndef NDK_DEFAULT_CONFIG_FILE
#define NDK_DEFAULT_CONFIG_FILE "/usr/local/etc/openndk.conf"
#endif

static const char *level_name(int level)
{
    switch (level) {
    case NDK_LOG_ERROR: return "error";
    case NDK_LOG_WARNING: return "warning";
    case NDK_LOG_INFO: return "info";
    default: return "debug";
    }
}

/* Never blocks for long; no lock. */
void rt_vlog(struct ndk_rt *rt, int level, const char *prefix, const char *fmt, va_list ap)
{
    if (level > rt->log_level)
        return;
    char line[1024];
    int off = snprintf(line, sizeof line, "%s%s", prefix ? prefix : "", prefix ? ": " : "");
    vsnprintf(line + off, sizeof line - (size_t)off, fmt, ap);
    if (rt->log_fn)
        rt->log_fn(rt->log_ctx, level, line);
    else
        fprintf(stderr, "ndk %s: %s\n", level_name(level), line);
}

void rt_log(struct ndk_rt *rt, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_vlog(rt, level, "runtime", fmt, ap);
    va_end(ap);
}

/* The provider path when neither the caller, the environment nor the config file gives one:
 * the build tree's providers for the libndk of a build tree; otherwise the providers folder
 * beside this library (an installed tree, wherever it was installed), then the compiled-in
 * install directory. May block (file system); no lock. */
static char *default_provider_path(void)
{
    Dl_info info;
    char dir[PATH_MAX], real[PATH_MAX], build[PATH_MAX], path[2 * PATH_MAX + 2];
    if (!dladdr((void *)ndk_rt_open, &info) || !info.dli_fname || !strchr(info.dli_fname, '/'))
        return strdup(NDK_DEFAULT_PROVIDER_DIR);
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    *strrchr(dir, '/') = '\0';
    if (!realpath(dir[0] ? dir : "/", real))
        return strdup(NDK_DEFAULT_PROVIDER_DIR);
    if (NDK_BUILD_LIB_DIR[0] && realpath(NDK_BUILD_LIB_DIR, build) && !strcmp(real, build))
        return strdup(NDK_BUILD_PROVIDER_DIR);
    snprintf(path, sizeof path, "%s/%s", real, NDK_INSTALLED_PROVIDER_SUBDIR);
    if (strcmp(path, NDK_DEFAULT_PROVIDER_DIR) != 0)
        snprintf(path + strlen(path), sizeof path - strlen(path), ":%s", NDK_DEFAULT_PROVIDER_DIR);
    return strdup(path);
}

static char *pick(const char *explicit_value, const char *env, const struct ndk_rt *rt, const char *key, const char *dflt)
{
    const char *v = explicit_value;
    if (!v && env)
        v = getenv(env);
    if (!v && key)
        v = rt_config_get(rt, key);
    if (!v)
        v = dflt;
    return v ? strdup(v) : NULL;
}

/* May block (loads providers, reads netlink); no lock held by the caller. */
NTSTATUS ndk_rt_open(const ndk_rt_config *config, ndk_rt **out)
{
    static const ndk_rt_config defaults;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    *out = NULL;
    if (!config)
        config = &defaults;
    struct ndk_rt *rt = calloc(1, sizeof *rt);
    if (!rt)
        return STATUS_INSUFFICIENT_RESOURCES;
    pthread_mutex_init(&rt->lock, NULL);
    pthread_cond_init(&rt->cond, NULL);
    ndk_list_init(&rt->providers);
    ndk_list_init(&rt->adapters);
    ndk_list_init(&rt->instances);
    ndk_list_init(&rt->registrations);
    ndk_list_init(&rt->events);
    ndk_list_init(&rt->filter_modules);
    rt->wake_fd = -1;
    rt->log_fn = config->log;
    rt->log_ctx = config->log_ctx;
    rt->log_level = config->log_level ? config->log_level : NDK_LOG_WARNING;
    const char *env_level = getenv("NDK_LOG_LEVEL");
    if (env_level && *env_level)
        rt->log_level = atoi(env_level);
    rt_services_init(&rt->services);

    const char *config_file = config->config_file ? config->config_file : getenv("NDK_CONFIG");
    if (!config_file)
        config_file = NDK_DEFAULT_CONFIG_FILE;
    int rc = rt_config_load(rt, config_file);
    if (rc < 0)
        rt_log(rt, NDK_LOG_WARNING, "config file %s: %s (using defaults)", config_file, strerror(-rc));

    rt->provider_path = pick(config->provider_path, "NDK_PROVIDER_PATH", rt, "provider_path", NULL);
    if (!rt->provider_path)
        rt->provider_path = default_provider_path();
    rt->providers_filter = pick(config->providers, "NDK_PROVIDERS", rt, "providers", NULL);
    rt->interfaces_filter = pick(config->interfaces, "NDK_INTERFACES", rt, "interfaces", NULL);
    rt->filters = pick(NULL, "NDK_FILTERS", rt, "filters", NULL);

    rt_sysview_acquire(rt);
    rt_loader_load_all(rt);
    rt_filters_load_all(rt);

    /* Monitor first, snapshot second: a change between the two is then seen, not lost. */
    if (!config->no_monitor) {
        rc = ndk_netif_monitor_open(&rt->monitor);
        if (rc < 0)
            rt_log(rt, NDK_LOG_WARNING, "no rtnetlink monitor (%s): adapters will not follow interface changes",
                   strerror(-rc));
    }
    rt_registry_sync(rt);
    rc = rt_pnp_start(rt);
    if (rc < 0) {
        rt_log(rt, NDK_LOG_ERROR, "cannot start the event thread: %s", strerror(-rc));
        ndk_rt_close(rt);
        return ndk_status_from_errno(rc);
    }
    *out = rt;
    return STATUS_SUCCESS;
}

/* May block; never from a PnP callback. */
void ndk_rt_close(ndk_rt *rt)
{
    if (!rt)
        return;
    rt_pnp_stop(rt);
    rt_registry_halt_all(rt);
    rt_filters_unload_all(rt);
    rt_loader_unload_all(rt);
    rt_sysview_release(rt);
    ndk_netif_monitor_close(rt->monitor);
    rt_config_free(rt->config);
    free(rt->provider_path);
    free(rt->providers_filter);
    free(rt->interfaces_filter);
    free(rt->filters);
    pthread_cond_destroy(&rt->cond);
    pthread_mutex_destroy(&rt->lock);
    free(rt);
}

ULONG ndk_rt_provider_count(ndk_rt *rt)
{
    ULONG n = 0;
    struct ndk_list *it;
    pthread_mutex_lock(&rt->lock);
    ndk_list_for_each(it, &rt->providers)
        n++;
    pthread_mutex_unlock(&rt->lock);
    return n;
}

NTSTATUS ndk_rt_provider_get(ndk_rt *rt, ULONG index, ndk_rt_provider_info *out)
{
    if (!rt || !out)
        return STATUS_INVALID_PARAMETER;
    NTSTATUS st = STATUS_INVALID_PARAMETER;
    ULONG i = 0;
    struct ndk_list *it;
    pthread_mutex_lock(&rt->lock);
    ndk_list_for_each(it, &rt->providers) {
        struct rt_provider *p = ndk_list_entry(it, struct rt_provider, link);
        if (i++ != index)
            continue;
        *out = p->info;
        out->adapter_count = 0;
        struct ndk_list *jt;
        ndk_list_for_each(jt, &rt->adapters) {
            struct rt_adapter *a = ndk_list_entry(jt, struct rt_adapter, link);
            if (a->prov == p && !a->removed)
                out->adapter_count++;
        }
        st = STATUS_SUCCESS;
        break;
    }
    pthread_mutex_unlock(&rt->lock);
    return st;
}

NTSTATUS ndk_rt_adapter_list(ndk_rt *rt, ndk_rt_adapter_info *out, ULONG *count)
{
    if (!rt || !count || (*count && !out))
        return STATUS_INVALID_PARAMETER;
    ULONG n = 0;
    struct ndk_list *it;
    pthread_mutex_lock(&rt->lock);
    ndk_list_for_each(it, &rt->adapters) {
        struct rt_adapter *a = ndk_list_entry(it, struct rt_adapter, link);
        if (a->removed)
            continue;
        if (n < *count)
            rt_adapter_fill_info(a, &out[n]);
        n++;
    }
    pthread_mutex_unlock(&rt->lock);
    NTSTATUS st = n > *count ? STATUS_BUFFER_TOO_SMALL : STATUS_SUCCESS;
    *count = n;
    return st;
}

NTSTATUS ndk_rt_adapter_query(ndk_rt *rt, ndk_rt_adapter_id id, ndk_rt_adapter_info *out)
{
    if (!rt || !out)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&rt->lock);
    struct rt_adapter *a = rt_registry_find_locked(rt, id);
    if (a)
        rt_adapter_fill_info(a, out);
    pthread_mutex_unlock(&rt->lock);
    return a ? STATUS_SUCCESS : STATUS_NO_SUCH_DEVICE;
}

enum find_by { FIND_ADDRESS, FIND_IFNAME, FIND_IFINDEX };

static NTSTATUS find_adapter(ndk_rt *rt, enum find_by by, const void *key, const char *provider, ndk_rt_adapter_id *out)
{
    if (!rt || !out || (by != FIND_IFINDEX && !key))
        return STATUS_INVALID_PARAMETER;
    *out = 0;
    struct ndk_list *it;
    /* Several providers may serve one interface (the software iwarp RNIC and verbs on an RDMA
     * device): without a provider named, an adapter of a provider that drives a device wins over
     * one whose provider declared NDK_PROVIDER_FLAG_SOFTWARE, unless NDK_PREFER_SOFTWARE=1. */
    const char *pref = getenv("NDK_PREFER_SOFTWARE");
    int want_soft = pref && pref[0] == '1', best = -1;
    pthread_mutex_lock(&rt->lock);
    ndk_list_for_each(it, &rt->adapters) {
        struct rt_adapter *a = ndk_list_entry(it, struct rt_adapter, link);
        if (a->removed || (provider && strcmp(provider, a->prov->info.name) != 0))
            continue;
        int match = 0;
        if (by == FIND_IFNAME)
            match = strcmp(a->netif.name, (const char *)key) == 0;
        else if (by == FIND_IFINDEX)
            match = (ULONG)a->netif.ifindex == (ULONG)(uintptr_t)key;
        else
            for (size_t i = 0; i < a->netif.naddrs && !match; i++)
                match = ndk_netif_addr_equal((const struct sockaddr *)&a->netif.addrs[i].addr, key);
        if (match) {
            int rank = ((a->prov->chars.ProviderFlags & NDK_PROVIDER_FLAG_SOFTWARE) != 0) == want_soft;
            if (rank > best) {
                best = rank;
                *out = a->id;
            }
            if (provider || rank)
                break;
        }
    }
    pthread_mutex_unlock(&rt->lock);
    return *out ? STATUS_SUCCESS : STATUS_OBJECT_NAME_NOT_FOUND;
}

NTSTATUS ndk_rt_find_adapter_by_address(ndk_rt *rt, const struct sockaddr *address, const char *provider,
                                        ndk_rt_adapter_id *out)
{
    if (address && address->sa_family != AF_INET && address->sa_family != AF_INET6)
        return STATUS_INVALID_ADDRESS;
    return find_adapter(rt, FIND_ADDRESS, address, provider, out);
}

NTSTATUS ndk_rt_find_adapter_by_ifname(ndk_rt *rt, const char *ifname, const char *provider, ndk_rt_adapter_id *out)
{
    return find_adapter(rt, FIND_IFNAME, ifname, provider, out);
}

NTSTATUS ndk_rt_find_adapter_by_ifindex(ndk_rt *rt, ULONG ifindex, const char *provider, ndk_rt_adapter_id *out)
{
    return find_adapter(rt, FIND_IFINDEX, (const void *)(uintptr_t)ifindex, provider, out);
}

/* rt->lock not held on entry; on success *pa is referenced (busy) and must be released. */
static NTSTATUS grab_adapter(ndk_rt *rt, ndk_rt_adapter_id id, struct rt_adapter **pa)
{
    pthread_mutex_lock(&rt->lock);
    struct rt_adapter *a = rt_registry_find_locked(rt, id);
    if (a)
        a->busy++;
    pthread_mutex_unlock(&rt->lock);
    *pa = a;
    return a ? STATUS_SUCCESS : STATUS_NO_SUCH_DEVICE;
}

/* The bottom of a filter stack: the provider's CLOSE_NDK_ADAPTER_HANDLER. May block. */
static void close_provider_adapter(void *ctx, NDK_ADAPTER *adapter)
{
    struct rt_adapter *a = ctx;
    a->prov->chars.NdkCharacteristics.CloseNDKAdapterHandler(a->miniport_context, adapter);
}

/* The filters of one open, outermost first: the caller's in-process ones, then the configured
 * ones. Returns how many (0: the consumer gets the provider's adapter), or a failure status in
 * *st. May block (nothing yet); no lock held. */
static int gather_filters(ndk_rt *rt, const ndk_rt_open_options *opts, struct ndk_filter_module ***out, NTSTATUS *st)
{
    *out = NULL;
    *st = STATUS_SUCCESS;
    ULONG inproc = opts ? opts->filter_count : 0;
    int configured = opts && opts->no_configured_filters ? 0 : rt->filter_count;
    if (!inproc && !configured)
        return 0;
    struct ndk_filter_module **mods = calloc(inproc + (size_t)configured, sizeof *mods);
    if (!mods) {
        *st = STATUS_INSUFFICIENT_RESOURCES;
        return -1;
    }
    int n = 0;
    for (ULONG i = 0; i < inproc; i++) {
        if (!(mods[n] = nf_module_inproc(rt, &opts->filters[i]))) {
            *st = STATUS_INVALID_PARAMETER;
            break;
        }
        n++;
    }
    struct ndk_list *it;
    if (NT_SUCCESS(*st) && configured) {
        ndk_list_for_each(it, &rt->filter_modules) {
            struct ndk_filter_module *m = ndk_list_entry(it, struct ndk_filter_module, link);
            if (!NT_SUCCESS(m->status)) {
                *st = m->status;   /* a named filter that is not there: refuse, never run without it */
                break;
            }
            mods[n++] = m;
        }
    }
    if (!NT_SUCCESS(*st)) {
        for (int i = 0; i < n; i++)
            if (mods[i]->inproc)
                nf_module_free(mods[i]);
        free(mods);
        return -1;
    }
    *out = mods;
    return n;
}

/* May block (the open handler runs at PASSIVE_LEVEL). */
NTSTATUS ndk_rt_open_adapter_ex(ndk_rt *rt, ndk_rt_adapter_id id, NDK_VERSION version,
                                const ndk_rt_open_options *opts, NDK_ADAPTER **out)
{
    if (!rt || !out || (opts && (opts->size < sizeof *opts || (opts->filter_count && !opts->filters))))
        return STATUS_INVALID_PARAMETER;
    *out = NULL;
    struct ndk_filter_module **mods;
    NTSTATUS st;
    int nmods = gather_filters(rt, opts, &mods, &st);
    if (nmods < 0)
        return st;
    struct rt_adapter *a;
    st = grab_adapter(rt, id, &a);
    struct rt_instance *inst = NT_SUCCESS(st) ? calloc(1, sizeof *inst) : NULL;
    if (NT_SUCCESS(st) && !inst) {
        rt_registry_release(a);
        st = STATUS_INSUFFICIENT_RESOURCES;
    }
    if (!NT_SUCCESS(st)) {
        for (int i = 0; i < nmods; i++)
            if (mods[i]->inproc)
                nf_module_free(mods[i]);
        free(mods);
        return st;
    }
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS params;
    memset(&params, 0, sizeof params);
    params.Version = version;
    NDK_ADAPTER *ndk = NULL;
    st = a->prov->chars.NdkCharacteristics.OpenNDKAdapterHandler(a->miniport_context, &params, &ndk);
    if (st == NDIS_STATUS_SUCCESS &&
        (!ndk || ndk->Header.ObjectType != NdkObjectTypeAdapter || !ndk->Dispatch)) {
        /* A provider bug; refuse to hand a malformed object to the consumer. */
        rt_log(rt, NDK_LOG_ERROR, "provider %s returned a malformed NDK_ADAPTER", a->prov->info.name);
        if (ndk)
            a->prov->chars.NdkCharacteristics.CloseNDKAdapterHandler(a->miniport_context, ndk);
        st = STATUS_INTERNAL_ERROR;
    }
    NDK_ADAPTER *top = ndk;
    if (st == NDIS_STATUS_SUCCESS && nmods > 0) {
        char name[NDK_PROVIDER_NAME_MAX + NDK_PROVIDER_IFNAME_MAX + 2];
        pthread_mutex_lock(&rt->lock);
        snprintf(name, sizeof name, "%s:%s", a->prov->info.name, a->netif.name);
        pthread_mutex_unlock(&rt->lock);
        st = nf_stack_open(rt, mods, nmods, ndk, close_provider_adapter, a, name, &inst->stack);
        if (NT_SUCCESS(st))
            top = nf_stack_top(inst->stack);
        else
            a->prov->chars.NdkCharacteristics.CloseNDKAdapterHandler(a->miniport_context, ndk);
    } else {
        for (int i = 0; i < nmods; i++)
            if (mods[i]->inproc)
                nf_module_free(mods[i]);
    }
    free(mods);
    if (st != NDIS_STATUS_SUCCESS) {
        free(inst);
        rt_registry_release(a);
        return st;
    }
    inst->ndk = ndk;
    inst->top = top;
    inst->adapter = a;
    pthread_mutex_lock(&rt->lock);
    a->open_instances++;
    __atomic_store_n(&a->sv->u.adapter.open_instances, (uint32_t)a->open_instances, __ATOMIC_RELAXED);
    ndk_list_add_tail(&rt->instances, &inst->link);
    pthread_mutex_unlock(&rt->lock);
    rt_registry_release(a);
    *out = top;
    return STATUS_SUCCESS;
}

NTSTATUS ndk_rt_open_adapter(ndk_rt *rt, ndk_rt_adapter_id id, NDK_VERSION version, NDK_ADAPTER **out)
{
    return ndk_rt_open_adapter_ex(rt, id, version, NULL, out);
}

/* May block until every callback of the instance has returned; never from an NDK callback. */
void ndk_rt_close_adapter(ndk_rt *rt, NDK_ADAPTER *adapter)
{
    if (!rt || !adapter)
        return;
    struct rt_instance *inst = NULL;
    struct ndk_list *it;
    pthread_mutex_lock(&rt->lock);
    ndk_list_for_each(it, &rt->instances) {
        struct rt_instance *c = ndk_list_entry(it, struct rt_instance, link);
        if (c->top == adapter) {
            inst = c;
            break;
        }
    }
    if (inst) {
        ndk_list_del(&inst->link);
        inst->adapter->busy++;
    }
    pthread_mutex_unlock(&rt->lock);
    if (!inst) {
        rt_log(rt, NDK_LOG_ERROR, "ndk_rt_close_adapter: %p is not an open NDK_ADAPTER of this runtime", (void *)adapter);
        return;
    }
    struct rt_adapter *a = inst->adapter;
    if (inst->stack)
        nf_stack_close(inst->stack);   /* through every filter, down to the provider's close */
    else
        a->prov->chars.NdkCharacteristics.CloseNDKAdapterHandler(a->miniport_context, adapter);
    free(inst);
    pthread_mutex_lock(&rt->lock);
    a->open_instances--;
    __atomic_store_n(&a->sv->u.adapter.open_instances, (uint32_t)a->open_instances, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&rt->lock);
    rt_registry_release(a);
}

/* May block (the provider's OID handler). */
static NTSTATUS oid_request(ndk_rt *rt, ndk_rt_adapter_id id, NDK_OID_REQUEST *req)
{
    struct rt_adapter *a;
    NTSTATUS st = grab_adapter(rt, id, &a);
    if (!NT_SUCCESS(st))
        return st;
    pthread_mutex_lock(&a->call_lock);
    st = a->prov->chars.OidRequestHandler(a->miniport_context, req);
    pthread_mutex_unlock(&a->call_lock);
    int whole = st == NDIS_STATUS_SUCCESS && !req->IsSet && req->Oid == OID_NDK_STATISTICS &&
                req->BytesWritten >= sizeof(NDIS_NDK_STATISTICS_INFO) &&
                (__atomic_load_n(&a->sv->u.adapter.flags, __ATOMIC_RELAXED) & NDK_SV_ADAPTER_COUNTERS);
    char provider[NDK_PROVIDER_NAME_MAX];
    snprintf(provider, sizeof provider, "%s", a->prov->info.name);
    uint32_t ifindex = a->sv->u.adapter.ifindex;
    rt_registry_release(a);
    if (whole) {
        /* As on Windows the adapter's counters are the machine's, not this process's. */
        uint64_t peers[NDK_SV_COUNTERS] = { 0 };
        rt_sysview_add_peers(provider, ifindex, peers);
        NDIS_NDK_STATISTICS_INFO *s = req->InformationBuffer;
        uint64_t c[NDK_SV_COUNTERS];
        memcpy(c, &s->CounterSet, sizeof c);
        for (int k = 0; k < NDK_SV_COUNTERS; k++)
            c[k] += peers[k];
        memcpy(&s->CounterSet, c, sizeof c);
    }
    if (st == NDIS_STATUS_PENDING) {
        /* OID_NDK_SET_STATE must not pend (§6.5); we do not support pending queries either. */
        rt_log(rt, NDK_LOG_ERROR, "provider returned NDIS_STATUS_PENDING for OID 0x%08x", req->Oid);
        st = STATUS_INTERNAL_ERROR;
    }
    return st;
}

NTSTATUS ndk_rt_set_state(ndk_rt *rt, ndk_rt_adapter_id id, BOOLEAN enable)
{
    if (!rt)
        return STATUS_INVALID_PARAMETER;
    BOOLEAN value = enable ? TRUE : FALSE;
    NDK_OID_REQUEST req;
    memset(&req, 0, sizeof req);
    req.Oid = OID_NDK_SET_STATE;
    req.IsSet = TRUE;
    req.InformationBuffer = &value;
    req.InformationBufferLength = sizeof value;
    return oid_request(rt, id, &req);
}

NTSTATUS ndk_rt_query_oid(ndk_rt *rt, ndk_rt_adapter_id id, NDIS_OID oid, void *buffer, ULONG length,
                          ULONG *bytes_written, ULONG *bytes_needed)
{
    if (!rt || (length && !buffer))
        return STATUS_INVALID_PARAMETER;
    NDK_OID_REQUEST req;
    memset(&req, 0, sizeof req);
    req.Oid = oid;
    req.InformationBuffer = buffer;
    req.InformationBufferLength = length;
    NTSTATUS st = oid_request(rt, id, &req);
    if (bytes_written)
        *bytes_written = req.BytesWritten;
    if (bytes_needed)
        *bytes_needed = req.BytesNeeded;
    return st;
}

NTSTATUS ndk_rt_register_pnp(ndk_rt *rt, ndk_rt_event_fn fn, void *ctx, ULONG *registration)
{
    if (!rt || !fn)
        return STATUS_INVALID_PARAMETER;
    struct rt_registration *r = calloc(1, sizeof *r);
    if (!r)
        return STATUS_INSUFFICIENT_RESOURCES;
    r->fn = fn;
    r->ctx = ctx;
    pthread_mutex_lock(&rt->lock);
    r->id = ++rt->next_registration_id;
    ndk_list_add_tail(&rt->registrations, &r->link);
    /* Tell the newcomer about what is already there, in order, on the event thread. */
    struct ndk_list *it;
    ndk_list_for_each(it, &rt->adapters) {
        struct rt_adapter *a = ndk_list_entry(it, struct rt_adapter, link);
        if (!a->removed)
            rt_pnp_queue_locked(rt, NDK_RT_EVENT_ADAPTER_ARRIVAL, a, r->id);
    }
    pthread_mutex_unlock(&rt->lock);
    rt_pnp_wake(rt);
    if (registration)
        *registration = r->id;
    return STATUS_SUCCESS;
}

/* May block until the registration's running callback returns, unless called from it. */
void ndk_rt_unregister_pnp(ndk_rt *rt, ULONG registration)
{
    if (!rt)
        return;
    pthread_mutex_lock(&rt->lock);
    struct ndk_list *it;
    ndk_list_for_each(it, &rt->registrations) {
        struct rt_registration *r = ndk_list_entry(it, struct rt_registration, link);
        if (r->id != registration)
            continue;
        r->dead = 1;
        if (!pthread_equal(pthread_self(), rt->thread) || !rt->thread_started)
            while (r->running)
                pthread_cond_wait(&rt->cond, &rt->lock);
        break;
    }
    pthread_mutex_unlock(&rt->lock);
    rt_pnp_wake(rt);
}

const char *ndk_rt_status_name(NTSTATUS status)
{
    static __thread char buf[24];
    const char *name = ndk_status_lookup_name(status);
    if (name)
        return name;
    snprintf(buf, sizeof buf, "0x%08X", (unsigned)status);
    return buf;
}

const char *ndk_rt_event_name(ndk_rt_event_type type)
{
    switch (type) {
    case NDK_RT_EVENT_ADAPTER_ARRIVAL: return "ADAPTER_ARRIVAL";
    case NDK_RT_EVENT_ADAPTER_REMOVAL: return "ADAPTER_REMOVAL";
    case NDK_RT_EVENT_ADDRESS_CHANGE: return "ADDRESS_CHANGE";
    case NDK_RT_EVENT_NDK_ENABLE: return "NDK_ENABLE";
    case NDK_RT_EVENT_NDK_DISABLE: return "NDK_DISABLE";
    }
    return "UNKNOWN";
}
