/* registry.c - binds adapters to network interfaces: one adapter per (provider, interface) that
 * the provider accepts in its InitializeHandler (MiniportInitializeEx). An interface is offered
 * while it is up, has at least one usable IPv4/IPv6 address and passes the configured interface
 * list; when it stops qualifying, its adapters are removed (consumers are told) and halted once
 * their last NDK_ADAPTER instance is closed. */
#define _GNU_SOURCE
#include "rt_internal.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndk_status.h"

/* Tentative (DAD running) and DAD-failed addresses cannot be bound, so they are not offered. */
static void keep_usable_addresses(struct ndk_netif *n)
{
    size_t w = 0;
    for (size_t r = 0; r < n->naddrs; r++) {
        if (n->addrs[r].flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED))
            continue;
        n->addrs[w++] = n->addrs[r];
    }
    n->naddrs = w;
}

static int eligible(const struct ndk_rt *rt, const struct ndk_netif *n)
{
    return (n->flags & IFF_UP) && n->naddrs > 0 && rt_list_contains(rt->interfaces_filter, n->name);
}

static int same_address_set(const struct ndk_netif *a, const struct ndk_netif *b)
{
    if (a->naddrs != b->naddrs)
        return 0;
    for (size_t i = 0; i < a->naddrs; i++) {
        size_t j;
        for (j = 0; j < b->naddrs; j++)
            if (ndk_netif_addr_equal((const struct sockaddr *)&a->addrs[i].addr,
                                     (const struct sockaddr *)&b->addrs[j].addr))
                break;
        if (j == b->naddrs)
            return 0;
    }
    return 1;
}

/* Builds the provider's view of an interface; addrs must hold NDK_NETIF_MAX_ADDRS entries. */
static void to_provider_interface(const struct ndk_netif *n, NDK_PROVIDER_INTERFACE *pi, SOCKADDR_INET *addrs)
{
    memset(pi, 0, sizeof *pi);
    pi->IfIndex = (ULONG)n->ifindex;
    snprintf(pi->IfName, sizeof pi->IfName, "%s", n->name);
    pi->Mtu = n->mtu;
    pi->IsLoopback = (n->flags & IFF_LOOPBACK) != 0;
    pi->IsUp = (n->flags & IFF_UP) != 0;
    for (size_t i = 0; i < n->naddrs; i++) {
        memset(&addrs[i], 0, sizeof addrs[i]);
        if (n->addrs[i].addr.ss_family == AF_INET)
            memcpy(&addrs[i].Ipv4, &n->addrs[i].addr, sizeof addrs[i].Ipv4);
        else
            memcpy(&addrs[i].Ipv6, &n->addrs[i].addr, sizeof addrs[i].Ipv6);
        addrs[i].Ipv4.sin_port = 0;
    }
    pi->AddressCount = (ULONG)n->naddrs;
    pi->Addresses = addrs;
}

/* rt->lock held. */
struct rt_adapter *rt_registry_find_locked(struct ndk_rt *rt, ndk_rt_adapter_id id)
{
    struct ndk_list *it;
    ndk_list_for_each(it, &rt->adapters) {
        struct rt_adapter *a = ndk_list_entry(it, struct rt_adapter, link);
        if (a->id == id && !a->removed)
            return a;
    }
    return NULL;
}

/* rt->lock held. */
void rt_adapter_fill_info(const struct rt_adapter *a, ndk_rt_adapter_info *out)
{
    memset(out, 0, sizeof *out);
    out->id = a->id;
    snprintf(out->provider, sizeof out->provider, "%s", a->prov->info.name);
    snprintf(out->ifname, sizeof out->ifname, "%s", a->netif.name);
    out->ifindex = (ULONG)a->netif.ifindex;
    out->mtu = a->netif.mtu;
    out->is_loopback = (a->netif.flags & IFF_LOOPBACK) != 0;
    out->enabled = a->enabled;
    out->open_instances = (ULONG)a->open_instances;
    NDK_PROVIDER_INTERFACE pi;
    to_provider_interface(&a->netif, &pi, out->addresses);
    out->address_count = pi.AddressCount;
    out->capabilities = a->caps;
    out->info = a->info;
    out->capabilities.NdkInfo = &out->info;
}

/* Never blocks for long. The adapter's system-view record, before InitializeHandler (the
 * provider may keep its counters in it from then on). */
static void publish_adapter(struct rt_adapter *a)
{
    a->sv = rt_sysview_alloc(a->rt, 0, NDK_SV_ADAPTER);
    if (!a->sv) {
        a->sv = &a->sv_private;
        a->sv->type = NDK_SV_ADAPTER;
    }
    ndk_sv_begin(a->sv);
    snprintf(a->sv->u.adapter.provider, sizeof a->sv->u.adapter.provider, "%s", a->prov->info.name);
    snprintf(a->sv->u.adapter.ifname, sizeof a->sv->u.adapter.ifname, "%s", a->netif.name);
    a->sv->u.adapter.ifindex = (uint32_t)a->netif.ifindex;
    ndk_sv_end(a->sv);
}

/* After the provider let go of the adapter (halted, or Initialize failed). */
static void free_adapter(struct rt_adapter *a)
{
    if (a->sv != &a->sv_private)
        rt_sysview_free(a->sv);
    pthread_mutex_destroy(&a->call_lock);
    free(a);
}

/* May block (provider halt); rt->lock not held; a is already unlinked and idle. */
static void halt_adapter(struct rt_adapter *a)
{
    pthread_mutex_lock(&a->call_lock);
    a->prov->chars.HaltHandler(a->miniport_context);
    pthread_mutex_unlock(&a->call_lock);
    rt_log(a->rt, NDK_LOG_INFO, "adapter %u (%s on %s) halted", a->id, a->prov->info.name, a->netif.name);
    free_adapter(a);
}

/* rt->lock held: marks a removed and returns 1 if the caller must halt it now (after unlocking). */
static int remove_locked(struct rt_adapter *a)
{
    if (!a->removed) {
        a->removed = 1;
        rt_pnp_queue_locked(a->rt, NDK_RT_EVENT_ADAPTER_REMOVAL, a, 0);
    }
    if (!a->halted && a->busy == 0 && a->open_instances == 0) {
        a->halted = 1;
        ndk_list_del(&a->link);
        pthread_cond_broadcast(&a->rt->cond);
        return 1;
    }
    return 0;
}

/* rt->lock not held. Drops one in-flight API call and halts a removed adapter once idle. */
void rt_registry_release(struct rt_adapter *a)
{
    struct ndk_rt *rt = a->rt;
    pthread_mutex_lock(&rt->lock);
    a->busy--;
    int halt = a->removed ? remove_locked(a) : 0;
    pthread_cond_broadcast(&rt->cond);
    pthread_mutex_unlock(&rt->lock);
    if (halt)
        halt_adapter(a);
}

/* May block (provider Initialize); rt->lock not held. Offers one interface to one provider. */
static void try_bind(struct ndk_rt *rt, struct rt_provider *p, const struct ndk_netif *n)
{
    struct rt_adapter *a = calloc(1, sizeof *a);
    if (!a)
        return;
    a->rt = rt;
    a->prov = p;
    a->netif = *n;
    pthread_mutex_init(&a->call_lock, NULL);
    publish_adapter(a);

    SOCKADDR_INET addrs[NDK_NETIF_MAX_ADDRS];
    NDK_PROVIDER_INTERFACE pi;
    to_provider_interface(n, &pi, addrs);
    NDIS_MINIPORT_ADAPTER_NDK_ATTRIBUTES attrs;
    memset(&attrs, 0, sizeof attrs);

    /* The adapter is not findable yet, so the provider's services calls during Initialize (e.g.
     * AdapterHasAddress) must not depend on the list: they use the handle directly. */
    pthread_mutex_lock(&a->call_lock);
    NDIS_STATUS st = p->chars.InitializeHandler(p->driver_context, (NDIS_HANDLE)a, &pi, &a->miniport_context, &attrs);
    pthread_mutex_unlock(&a->call_lock);
    if (st == NDIS_STATUS_NOT_SUPPORTED || st == STATUS_NOT_SUPPORTED) {
        free_adapter(a);
        return;
    }
    const char *bad = NULL;
    if (!NT_SUCCESS(st) || st == STATUS_PENDING)
        bad = "InitializeHandler failed";
    else if (attrs.Header.Type != NDIS_OBJECT_TYPE_MINIPORT_ADAPTER_NDK_ATTRIBUTES || !attrs.NdkCapabilities ||
             !attrs.NdkCapabilities->NdkInfo)
        bad = "NDK attributes missing or malformed (capabilities are required even when disabled, §6.4)";
    if (bad) {
        rt_log(rt, NDK_LOG_WARNING, "provider %s on %s: %s (%s)", p->info.name, n->name, bad, ndk_rt_status_name(st));
        if (NT_SUCCESS(st) && st != STATUS_PENDING) {
            pthread_mutex_lock(&a->call_lock);
            p->chars.HaltHandler(a->miniport_context);
            pthread_mutex_unlock(&a->call_lock);
        }
        free_adapter(a);
        return;
    }
    a->caps = *attrs.NdkCapabilities;
    a->info = *attrs.NdkCapabilities->NdkInfo;
    a->caps.NdkInfo = &a->info;
    a->enabled = attrs.Enabled;
    /* The system view's readers must not show a counter the provider does not keep as 0. */
    ndk_sv_begin(a->sv);
    a->sv->u.adapter.missing = (uint32_t)(a->caps.MissingCounterMask & ((1ull << NDK_SV_COUNTERS) - 1));
    ndk_sv_end(a->sv);

    pthread_mutex_lock(&rt->lock);
    a->id = ++rt->next_adapter_id;
    ndk_list_add_tail(&rt->adapters, &a->link);
    rt_pnp_queue_locked(rt, NDK_RT_EVENT_ADAPTER_ARRIVAL, a, 0);
    pthread_mutex_unlock(&rt->lock);
    rt_log(rt, NDK_LOG_INFO, "adapter %u: %s bound to %s (ifindex %d, %zu addresses)", a->id, p->info.name, n->name,
           n->ifindex, n->naddrs);
}

/* May block; rt->lock not held. Called at open and then only from the event thread, so two
 * syncs never run at once. */
void rt_registry_sync(struct ndk_rt *rt)
{
    struct ndk_netif *ifs = NULL;
    size_t count = 0;
    int rc = ndk_netif_snapshot(&ifs, &count);
    if (rc < 0) {
        rt_log(rt, NDK_LOG_ERROR, "cannot read network interfaces: %s", strerror(-rc));
        return;
    }
    for (size_t i = 0; i < count; i++)
        keep_usable_addresses(&ifs[i]);

    /* 1. Existing adapters: removed, changed or unchanged. */
    struct ndk_list halt_list;
    ndk_list_init(&halt_list);
    struct {
        struct rt_adapter *a;
        struct ndk_netif   n;
    } *changed = calloc(rt->next_adapter_id + 1, sizeof *changed);
    size_t nchanged = 0;
    pthread_mutex_lock(&rt->lock);
    struct ndk_list *it, *tmp;
    ndk_list_for_each_safe(it, tmp, &rt->adapters) {
        struct rt_adapter *a = ndk_list_entry(it, struct rt_adapter, link);
        if (a->removed)
            continue;
        const struct ndk_netif *now = NULL;
        for (size_t i = 0; i < count; i++)
            if (ifs[i].ifindex == a->netif.ifindex)
                now = &ifs[i];
        if (!now || !eligible(rt, now)) {
            if (remove_locked(a))
                ndk_list_add_tail(&halt_list, &a->link);
            continue;
        }
        if (ndk_netif_differs(&a->netif, now) && changed) {
            int addr_change = !same_address_set(&a->netif, now);
            a->netif = *now;
            if (addr_change)
                rt_pnp_queue_locked(rt, NDK_RT_EVENT_ADDRESS_CHANGE, a, 0);
            a->busy++;
            changed[nchanged].a = a;
            changed[nchanged].n = *now;
            nchanged++;
        }
    }
    pthread_mutex_unlock(&rt->lock);

    while (!ndk_list_empty(&halt_list)) {
        struct rt_adapter *a = ndk_list_entry(halt_list.next, struct rt_adapter, link);
        ndk_list_del(&a->link);
        halt_adapter(a);
    }
    for (size_t i = 0; i < nchanged; i++) {
        struct rt_adapter *a = changed[i].a;
        if (a->prov->chars.InterfaceChangeHandler) {
            SOCKADDR_INET addrs[NDK_NETIF_MAX_ADDRS];
            NDK_PROVIDER_INTERFACE pi;
            to_provider_interface(&changed[i].n, &pi, addrs);
            pthread_mutex_lock(&a->call_lock);
            a->prov->chars.InterfaceChangeHandler(a->miniport_context, &pi);
            pthread_mutex_unlock(&a->call_lock);
        }
        rt_registry_release(a);
    }
    free(changed);

    /* 2. Interfaces that qualify but have no adapter of some loaded provider yet. */
    for (size_t i = 0; i < count; i++) {
        if (!eligible(rt, &ifs[i]))
            continue;
        pthread_mutex_lock(&rt->lock);
        ndk_list_for_each(it, &rt->providers) {
            struct rt_provider *p = ndk_list_entry(it, struct rt_provider, link);
            if (!p->dl)
                continue;
            int bound = 0;
            struct ndk_list *jt;
            ndk_list_for_each(jt, &rt->adapters) {
                struct rt_adapter *a = ndk_list_entry(jt, struct rt_adapter, link);
                if (a->prov == p && a->netif.ifindex == ifs[i].ifindex && !a->removed)
                    bound = 1;
            }
            if (bound)
                continue;
            /* Providers are never freed while the runtime is open, so p stays valid unlocked. */
            pthread_mutex_unlock(&rt->lock);
            try_bind(rt, p, &ifs[i]);
            pthread_mutex_lock(&rt->lock);
        }
        pthread_mutex_unlock(&rt->lock);
    }
    free(ifs);
    rt_pnp_wake(rt);
}

/* May block; rt->lock not held. Closes leftover instances (a consumer bug, logged) and halts. */
void rt_registry_halt_all(struct ndk_rt *rt)
{
    for (;;) {
        pthread_mutex_lock(&rt->lock);
        if (!ndk_list_empty(&rt->instances)) {
            struct rt_instance *inst = ndk_list_entry(rt->instances.next, struct rt_instance, link);
            ndk_list_del(&inst->link);
            struct rt_adapter *a = inst->adapter;
            a->busy++;
            pthread_mutex_unlock(&rt->lock);
            rt_log(rt, NDK_LOG_ERROR, "runtime closing with an NDK_ADAPTER still open on adapter %u; closing it", a->id);
            a->prov->chars.NdkCharacteristics.CloseNDKAdapterHandler(a->miniport_context, inst->ndk);
            free(inst);
            pthread_mutex_lock(&rt->lock);
            a->open_instances--;
            pthread_mutex_unlock(&rt->lock);
            rt_registry_release(a);
            continue;
        }
        struct rt_adapter *victim = NULL;
        if (!ndk_list_empty(&rt->adapters)) {
            victim = ndk_list_entry(rt->adapters.next, struct rt_adapter, link);
            while (victim->busy > 0)
                pthread_cond_wait(&rt->cond, &rt->lock);
            victim->removed = 1;
            victim->halted = 1;
            ndk_list_del(&victim->link);
        }
        pthread_mutex_unlock(&rt->lock);
        if (!victim)
            return;
        halt_adapter(victim);
    }
}
