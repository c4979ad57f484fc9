/*
 * wsk_ndk.c - the NDK extension of WSK (<wskndk.h>): WskOpenNdkAdapter and WskCloseNdkAdapter,
 * mapped onto the OpenNDK runtime's public API so that the filters the configuration names apply
 * to drivers exactly as to user-space consumers.
 *
 * Microsoft documents the extension only by its header. Our decisions (docs/porting.md, "The NDK
 * extension of WSK"):
 *   - IfIndex is a Linux interface index of the driver's network namespace; the adapter is the
 *     runtime's adapter on that interface (NDK_PROVIDERS picks the provider when several bind it).
 *   - Version: the major must be one the provider implements, the minor is the lowest the driver
 *     accepts; the instance runs at the provider's highest minor of that major (read it with
 *     NdkQueryAdapterInfo), as on the miniport side ("OPEN_NDK_ADAPTER_HANDLER"). An unsupported
 *     version fails with STATUS_NDIS_BAD_VERSION, the NTSTATUS twin of NDIS_STATUS_BAD_VERSION:
 *     WSK is an NTSTATUS interface.
 *   - An index no interface has: STATUS_NOT_FOUND. An interface without an NDK adapter (down,
 *     or no provider binds it): STATUS_NOT_SUPPORTED. NDK disabled on it:
 *     STATUS_NDIS_ADAPTER_NOT_READY.
 *   - Both calls are PASSIVE_LEVEL only (the header's annotation); at a higher IRQL the kit
 *     reports a verifier finding and refuses (open: STATUS_INVALID_DEVICE_STATE; close: nothing
 *     is closed), since the runtime's open and close block.
 * Every adapter opened here gets the kit's IRQL filter (wsk_filter.c) on top of its stack.
 */
#include "wsk_internal.h"

#include <net/if.h>
#include <stdlib.h>

#include "wdk_internal.h"

/* The NTSTATUS a WSK caller receives for an NDIS_STATUS from the runtime's open. Either numbering
 * of the NDIS codes may arrive (ndis.h's 0xC001xxxx or ntstatus.h's 0xC023xxxx twins). */
static NTSTATUS wsk_ndk_status(NTSTATUS st)
{
    if (st == NDIS_STATUS_BAD_VERSION || st == STATUS_NDIS_BAD_VERSION)
        return STATUS_NDIS_BAD_VERSION;
    if (st == NDIS_STATUS_ADAPTER_NOT_READY || st == STATUS_NDIS_ADAPTER_NOT_READY)
        return STATUS_NDIS_ADAPTER_NOT_READY;
    if (st == NDIS_STATUS_RESOURCES)
        return STATUS_INSUFFICIENT_RESOURCES;
    if (st == STATUS_NO_SUCH_DEVICE || st == STATUS_OBJECT_NAME_NOT_FOUND)
        return STATUS_NOT_SUPPORTED;     /* the adapter went away between lookup and open */
    return st;
}

/* The adapter the runtime binds on IfIndex. Context: PASSIVE, no lock held. */
static NTSTATUS wsk_ndk_find(ndk_rt *rt, NET_IFINDEX IfIndex, ndk_rt_adapter_id *id)
{
    char name[IF_NAMESIZE];
    NTSTATUS st = ndk_rt_find_adapter_by_ifindex(rt, IfIndex, NULL, id);
    if (st == STATUS_SUCCESS)
        return st;
    if (IfIndex == 0 || !if_indextoname(IfIndex, name)) {
        wdk_log("WskOpenNdkAdapter: no interface has index %u (STATUS_NOT_FOUND)", (unsigned)IfIndex);
        return STATUS_NOT_FOUND;
    }
    wdk_log("WskOpenNdkAdapter: interface %s (index %u) has no NDK adapter: it is down or no provider binds it "
            "(STATUS_NOT_SUPPORTED)", name, (unsigned)IfIndex);
    return STATUS_NOT_SUPPORTED;
}

/* PFN_WSK_NDK_OPEN_ADAPTER. Context: PASSIVE; blocks (the provider's open handler). */
static NTSTATUS WSKAPI wsk_ndk_open_adapter(PWSK_CLIENT Client, NDK_VERSION NdkVersion, NET_IFINDEX IfIndex,
                                            NDK_ADAPTER **ppNdkAdapter)
{
    const void *site = __builtin_return_address(0);
    struct wdk_wsk_adapter *rec;
    struct wdk_wsk_reg *reg;
    ndk_rt_adapter_id id;
    NTSTATUS st;

    if (!wdk_wsk_require_passive("WskOpenNdkAdapter", site))
        return STATUS_INVALID_DEVICE_STATE;
    if (!ppNdkAdapter)
        return STATUS_INVALID_PARAMETER;
    *ppNdkAdapter = NULL;
    reg = wdk_wsk_client_get(Client);
    if (!reg)
        return STATUS_INVALID_PARAMETER;
    /* The runtime stays open while a registration holds a call reference. */
    pthread_mutex_lock(&wdk_wsk.lock);
    ndk_rt *rt = wdk_wsk.rt;
    pthread_mutex_unlock(&wdk_wsk.lock);

    st = wsk_ndk_find(rt, IfIndex, &id);
    if (st != STATUS_SUCCESS)
        goto out;
    rec = calloc(1, sizeof *rec);
    if (!rec) {
        st = STATUS_INSUFFICIENT_RESOURCES;
        goto out;
    }
    rec->reg = reg;
    rec->ifindex = IfIndex;
    wdk_wsk_flt_inst_init(&rec->flt, IfIndex);
    /* The kit's filter goes on top of whatever the configuration stacks (ndk-filter(3)). */
    ndk_filter_inproc flt = { .ops = &wdk_wsk_flt_ops, .context = &rec->flt };
    ndk_rt_open_options opts;
    memset(&opts, 0, sizeof opts);
    opts.size = sizeof opts;
    opts.filter_count = 1;
    opts.filters = &flt;
    st = ndk_rt_open_adapter_ex(rt, id, NdkVersion, &opts, &rec->adapter);
    if (st != STATUS_SUCCESS) {
        st = wsk_ndk_status(st);
        if (st == STATUS_NDIS_BAD_VERSION)
            wdk_log("WskOpenNdkAdapter: NDK version %u.%u is not supported on interface index %u "
                    "(STATUS_NDIS_BAD_VERSION)", NdkVersion.Major, NdkVersion.Minor, (unsigned)IfIndex);
        wdk_wsk_flt_inst_fini(&rec->flt);
        free(rec);
        goto out;
    }
    pthread_mutex_lock(&wdk_wsk.lock);
    ndk_list_add_tail(&wdk_wsk.adapters, &rec->link);
    reg->adapters++;
    pthread_mutex_unlock(&wdk_wsk.lock);
    *ppNdkAdapter = rec->adapter;
out:
    wdk_wsk_client_put(reg);
    return st;
}

/* PFN_WSK_NDK_CLOSE_ADAPTER. Context: PASSIVE; blocks until every callback of the instance has
 * returned (ndk_rt_close_adapter). */
static VOID WSKAPI wsk_ndk_close_adapter(PWSK_CLIENT Client, NDK_ADAPTER *pNdkAdapter)
{
    const void *site = __builtin_return_address(0);
    struct wdk_wsk_adapter *rec = NULL;
    struct ndk_list *pos;
    ndk_rt *rt, *close_rt = NULL;

    if (!wdk_wsk_require_passive("WskCloseNdkAdapter", site))
        return;   /* closing here would block inside a callback; the unload check names it */
    pthread_mutex_lock(&wdk_wsk.lock);
    ndk_list_for_each(pos, &wdk_wsk.adapters) {
        struct wdk_wsk_adapter *a = ndk_list_entry(pos, struct wdk_wsk_adapter, link);
        if (a->adapter == pNdkAdapter) {
            rec = a;
            ndk_list_del(&a->link);
            break;
        }
    }
    rt = wdk_wsk.rt;
    pthread_mutex_unlock(&wdk_wsk.lock);
    if (!rec) {
        wdk_wsk_report("WSK_CLOSE_UNKNOWN_ADAPTER", site, NULL,
                       "WskCloseNdkAdapter(%p): not an adapter WskOpenNdkAdapter returned, or closed twice",
                       (void *)pNdkAdapter);
        return;
    }
    (void)Client;   /* any registration of the driver may close it, as on Windows */
    char names[256];
    ULONG open_objects = wdk_wsk_flt_open_objects(&rec->flt, names, sizeof names);
    if (open_objects) {
        /* The provider's close waits for every object to be closed, which would never happen:
         * report, and leave the adapter open (the process ends with it) instead of hanging. */
        wdk_wsk_report("NDK_OBJECT_LEFT_OPEN", site, NULL,
                       "WskCloseNdkAdapter (interface index %u) with %u NDK object(s) still open: %s; the adapter "
                       "is left open", rec->ifindex, open_objects, names);
        pthread_mutex_lock(&wdk_wsk.lock);
        if (rec->reg)
            rec->reg->adapters--;
        rec->reg = NULL;
        ndk_list_add_tail(&wdk_wsk.abandoned, &rec->link);   /* the runtime must stay open for it */
        pthread_mutex_unlock(&wdk_wsk.lock);
        return;
    }
    ndk_rt_close_adapter(rt, rec->adapter);

    pthread_mutex_lock(&wdk_wsk.lock);
    if (rec->reg)   /* NULL when the opener deregistered first (WskDeregister clears it) */
        rec->reg->adapters--;
    if (wdk_wsk.registrations == 0 && ndk_list_empty(&wdk_wsk.adapters) && ndk_list_empty(&wdk_wsk.abandoned)) {
        close_rt = wdk_wsk.rt;     /* WskDeregister left it open for this adapter */
        wdk_wsk.rt = NULL;
    }
    pthread_mutex_unlock(&wdk_wsk.lock);
    wdk_wsk_flt_inst_fini(&rec->flt);
    free(rec);
    if (close_rt)
        ndk_rt_close(close_rt);
}

const WSK_PROVIDER_NDK_DISPATCH wdk_wsk_ndk_dispatch = {
    .WskOpenNdkAdapter = wsk_ndk_open_adapter,
    .WskCloseNdkAdapter = wsk_ndk_close_adapter,
};

ULONG wdk_wsk_ndk_check_unload(void)
{
    struct ndk_list *pos;
    ULONG n = 0;
    char names[256];
    pthread_mutex_lock(&wdk_wsk.lock);
    ndk_list_for_each(pos, &wdk_wsk.adapters) {
        struct wdk_wsk_adapter *a = ndk_list_entry(pos, struct wdk_wsk_adapter, link);
        ULONG objs = wdk_wsk_flt_open_objects(&a->flt, names, sizeof names);
        wdk_wsk_report("NDK_OBJECT_LEFT_OPEN", NULL, "unload",
                       "NDK adapter %p (WskOpenNdkAdapter, interface index %u) still open at unload, with %u object(s) "
                       "open on it%s%s", (void *)a->adapter, a->ifindex, objs, objs ? ": " : "", objs ? names : "");
        n++;
    }
    pthread_mutex_unlock(&wdk_wsk.lock);
    return n;
}
