/* services.c - what the runtime offers providers (NDK_RUNTIME_SERVICES): the NDIS functions a
 * miniport calls. Handles are the runtime's own objects: DriverHandle is a struct rt_provider,
 * MiniportAdapterHandle a struct rt_adapter. */
#define _GNU_SOURCE
#include "rt_internal.h"

#include <stdarg.h>
#include <string.h>

/* NdisMNetPnPEvent for NetEventNDKEnable/Disable. Never blocks: the event thread delivers.
 * Any provider thread; must not be called with a lock held that a PnP callback path needs. */
static VOID svc_net_pnp_event(NDIS_HANDLE adapter_handle, ULONG net_event)
{
    struct rt_adapter *a = adapter_handle;
    struct ndk_rt *rt = a->rt;
    if (net_event != NetEventNDKEnable && net_event != NetEventNDKDisable) {
        rt_log(rt, NDK_LOG_WARNING, "provider %s raised unknown PnP event %u", a->prov->info.name, net_event);
        return;
    }
    pthread_mutex_lock(&rt->lock);
    BOOLEAN enable = net_event == NetEventNDKEnable;
    a->enabled = enable;
    /* During InitializeHandler the adapter has no id yet; its attributes carry the state. */
    if (a->id != 0)
        rt_pnp_queue_locked(rt, enable ? NDK_RT_EVENT_NDK_ENABLE : NDK_RT_EVENT_NDK_DISABLE, a, 0);
    pthread_mutex_unlock(&rt->lock);
    rt_pnp_wake(rt);
}

/* Never blocks for long (takes rt->lock briefly); any thread, including inside handlers. */
static BOOLEAN svc_adapter_has_address(NDIS_HANDLE adapter_handle, const struct sockaddr *address)
{
    struct rt_adapter *a = adapter_handle;
    BOOLEAN found = FALSE;
    if (!address)
        return FALSE;
    pthread_mutex_lock(&a->rt->lock);
    for (size_t i = 0; i < a->netif.naddrs && !found; i++)
        found = ndk_netif_addr_equal((const struct sockaddr *)&a->netif.addrs[i].addr, address) ? TRUE : FALSE;
    pthread_mutex_unlock(&a->rt->lock);
    return found;
}

static VOID svc_log(NDIS_HANDLE driver_handle, int level, const char *format, ...)
{
    struct rt_provider *p = driver_handle;
    va_list ap;
    va_start(ap, format);
    rt_vlog(p->rt, level, p->info.name, format, ap);
    va_end(ap);
}

static const char *svc_get_config(NDIS_HANDLE driver_handle, const char *key)
{
    return rt_config_provider_get((struct rt_provider *)driver_handle, key);
}

/* Any thread; a brief lock (object create and close, never the data path). */
static struct ndk_sv_rec *svc_sysview_alloc(NDIS_HANDLE adapter_handle, uint16_t type)
{
    struct rt_adapter *a = adapter_handle;
    if (type == NDK_SV_FREE || type == NDK_SV_ADAPTER || type >= NDK_SV_TYPE_COUNT)
        return NULL;
    return rt_sysview_alloc(a->rt, a->sv->id, type);
}

static VOID svc_sysview_free(NDIS_HANDLE adapter_handle, struct ndk_sv_rec *rec)
{
    struct rt_adapter *a = adapter_handle;
    if (rec && rec != a->sv)
        rt_sysview_free(rec);
}

static struct ndk_sv_rec *svc_sysview_adapter(NDIS_HANDLE adapter_handle)
{
    return ((struct rt_adapter *)adapter_handle)->sv;
}

void rt_services_init(NDK_RUNTIME_SERVICES *s)
{
    memset(s, 0, sizeof *s);
    s->Size = sizeof *s;
    s->AbiVersion = NDK_PROVIDER_ABI_VERSION;
    s->NetPnPEvent = svc_net_pnp_event;
    s->AdapterHasAddress = svc_adapter_has_address;
    s->Log = svc_log;
    s->GetConfig = svc_get_config;
    s->SysviewAlloc = svc_sysview_alloc;
    s->SysviewFree = svc_sysview_free;
    s->SysviewAdapter = svc_sysview_adapter;
}
