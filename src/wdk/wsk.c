/*
 * wsk.c - Winsock Kernel registration for kit drivers: WskRegister/WskDeregister, the provider
 * NPI (capture, release, characteristics) and WskControlClient, whose one supported code hands
 * out the NDK extension (wsk_ndk.c).
 *
 * Semantics follow Microsoft's pages "WskRegister function (wsk.h)", "WskCaptureProviderNPI
 * function (wsk.h)", "WskDeregister function (wsk.h)", "PFN_WSK_CONTROL_CLIENT callback function
 * (wsk.h)" and "Registering a Winsock Kernel Application". The WSK subsystem of the kit is always
 * ready, so a capture never waits. The first WskRegister opens the OpenNDK runtime the NDK
 * extension works through; the last WskDeregister closes it (docs/porting.md).
 */
#include "wsk_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "wdk_internal.h"

struct wdk_wsk_state wdk_wsk = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
    .regs = NDK_LIST_INIT(wdk_wsk.regs),
    .adapters = NDK_LIST_INIT(wdk_wsk.adapters),
    .abandoned = NDK_LIST_INIT(wdk_wsk.abandoned),
};

/* The only WSK version the kit speaks (the NDK extension needs nothing newer). */
#define WDK_WSK_VERSION MAKE_WSK_VERSION(1, 0)

void wdk_wsk_report(const char *rule, const void *call_site, const char *where, const char *format, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, format);
    vsnprintf(detail, sizeof detail, format, ap);
    va_end(ap);
    wdk_verify_report(rule, call_site ? wdk_site_from_ra(call_site) : where, "%s", detail);
}

BOOLEAN wdk_wsk_require_passive(const char *function, const void *call_site)
{
    KIRQL irql = KeGetCurrentIrql();
    if (irql == PASSIVE_LEVEL)
        return TRUE;
    wdk_wsk_report("WSK_IRQL_NOT_PASSIVE", call_site, NULL, "%s called at IRQL %u; it may be called at PASSIVE_LEVEL only",
                   function, (unsigned)irql);
    return FALSE;
}

/* The one place a registration changes state; undefined transitions are refused and logged.
 * Context: wdk_wsk.lock held. */
static BOOLEAN wsk_reg_transition(struct wdk_wsk_reg *reg, enum wdk_wsk_reg_state to)
{
    BOOLEAN ok = (reg->state == WDK_WSK_REG_ACTIVE && to == WDK_WSK_REG_DEREGISTERING) ||
                 (reg->state == WDK_WSK_REG_DEREGISTERING && to == WDK_WSK_REG_GONE);
    if (!ok) {
        wdk_log("WSK registration %p: refused state change %d -> %d", (void *)reg->owner, (int)reg->state, (int)to);
        return FALSE;
    }
    reg->state = to;
    return TRUE;
}

/* The record behind a driver's WSK_REGISTRATION, or NULL. Context: wdk_wsk.lock held. */
static struct wdk_wsk_reg *wsk_reg_of(PWSK_REGISTRATION r)
{
    struct wdk_wsk_reg *reg;
    struct ndk_list *pos;
    if (!r)
        return NULL;
    /* Looked up in our list rather than trusting the driver's storage: a block that was never
     * registered (or was deregistered) holds anything. */
    ndk_list_for_each(pos, &wdk_wsk.regs) {
        reg = ndk_list_entry(pos, struct wdk_wsk_reg, link);
        if (reg->owner == r && r->ReservedRegistrationContext == reg)
            return reg;
    }
    return NULL;
}

struct wdk_wsk_reg *wdk_wsk_client_get(PWSK_CLIENT client)
{
    struct wdk_wsk_reg *found = NULL;
    struct ndk_list *pos;
    pthread_mutex_lock(&wdk_wsk.lock);
    ndk_list_for_each(pos, &wdk_wsk.regs) {
        struct wdk_wsk_reg *reg = ndk_list_entry(pos, struct wdk_wsk_reg, link);
        if ((PWSK_CLIENT)reg == client && reg->magic == WDK_WSK_REG_MAGIC && reg->state == WDK_WSK_REG_ACTIVE) {
            reg->in_calls++;
            found = reg;
            break;
        }
    }
    pthread_mutex_unlock(&wdk_wsk.lock);
    return found;
}

void wdk_wsk_client_put(struct wdk_wsk_reg *reg)
{
    pthread_mutex_lock(&wdk_wsk.lock);
    reg->in_calls--;
    pthread_cond_broadcast(&wdk_wsk.cond);
    pthread_mutex_unlock(&wdk_wsk.lock);
}

/* The kit's unload check (runs after DriverUnload): registrations the driver never
 * deregistered and NDK adapters it never closed. */
static void wsk_check_unload(void *ctx)
{
    (void)ctx;
    struct ndk_list *pos;
    pthread_mutex_lock(&wdk_wsk.lock);
    ndk_list_for_each(pos, &wdk_wsk.regs) {
        struct wdk_wsk_reg *reg = ndk_list_entry(pos, struct wdk_wsk_reg, link);
        wdk_wsk_report("WSK_REGISTRATION_AT_UNLOAD", NULL, "unload",
                       "WSK registration %p (WskRegister) was not deregistered before unload (%u capture(s) held)",
                       (void *)reg->owner, reg->captures);
    }
    pthread_mutex_unlock(&wdk_wsk.lock);
    wdk_wsk_ndk_check_unload();
}

/* Opens the runtime for the first registration. Context: PASSIVE, may block; called without
 * wdk_wsk.lock (the runtime loads providers and reads netlink). */
static NTSTATUS wsk_rt_open(ndk_rt **out)
{
    ndk_rt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    /* Adapters are bound once: kit drivers use interfaces that exist when they load. */
    cfg.no_monitor = TRUE;
    return ndk_rt_open(&cfg, out);
}

NTSTATUS WSKAPI WskRegister(PWSK_CLIENT_NPI WskClientNpi, PWSK_REGISTRATION WskRegistration)
{
    const void *site = __builtin_return_address(0);
    struct wdk_wsk_reg *reg;
    ndk_rt *rt = NULL;
    NTSTATUS st;

    if (!wdk_wsk_require_passive("WskRegister", site))
        return STATUS_INVALID_DEVICE_STATE;
    if (!WskClientNpi || !WskClientNpi->Dispatch || !WskRegistration)
        return STATUS_INVALID_PARAMETER;

    pthread_mutex_lock(&wdk_wsk.lock);
    if (wsk_reg_of(WskRegistration)) {
        pthread_mutex_unlock(&wdk_wsk.lock);
        wdk_wsk_report("WSK_REGISTRATION_REUSED", site, NULL, "WskRegister with a WSK_REGISTRATION that is still registered");
        return STATUS_INVALID_PARAMETER;
    }
    BOOLEAN need_rt = wdk_wsk.rt == NULL;
    if (!wdk_wsk.hook_installed) {
        wdk_unload_check_register(wsk_check_unload, NULL);
        wdk_wsk.hook_installed = TRUE;
    }
    pthread_mutex_unlock(&wdk_wsk.lock);

    if (need_rt) {
        st = wsk_rt_open(&rt);
        if (st != STATUS_SUCCESS) {
            wdk_log("WskRegister: the OpenNDK runtime did not open (0x%08X)", (unsigned)st);
            return st;
        }
    }
    reg = calloc(1, sizeof *reg);
    if (!reg) {
        if (rt)
            ndk_rt_close(rt);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    reg->magic = WDK_WSK_REG_MAGIC;
    reg->owner = WskRegistration;
    reg->client = *WskClientNpi;
    reg->state = WDK_WSK_REG_ACTIVE;

    pthread_mutex_lock(&wdk_wsk.lock);
    if (rt && !wdk_wsk.rt) {
        wdk_wsk.rt = rt;
        rt = NULL;
    }
    WskRegistration->ReservedRegistrationState = WDK_WSK_REG_ACTIVE;
    WskRegistration->ReservedRegistrationContext = reg;
    ndk_list_add_tail(&wdk_wsk.regs, &reg->link);
    wdk_wsk.registrations++;
    pthread_mutex_unlock(&wdk_wsk.lock);
    if (rt)   /* another registration opened one meanwhile */
        ndk_rt_close(rt);
    return STATUS_SUCCESS;
}

NTSTATUS WSKAPI WskCaptureProviderNPI(PWSK_REGISTRATION WskRegistration, ULONG WaitTimeout,
                                      PWSK_PROVIDER_NPI WskProviderNpi)
{
    const void *site = __builtin_return_address(0);
    struct wdk_wsk_reg *reg;
    USHORT version = 0;
    NTSTATUS st;

    /* With a wait, PASSIVE only; WSK_NO_WAIT is allowed up to DISPATCH. */
    if (WaitTimeout != WSK_NO_WAIT && !wdk_wsk_require_passive("WskCaptureProviderNPI (with a wait)", site))
        return STATUS_INVALID_DEVICE_STATE;
    if (!WskProviderNpi)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&wdk_wsk.lock);
    reg = wsk_reg_of(WskRegistration);
    if (!reg || reg->state != WDK_WSK_REG_ACTIVE) {
        /* The documented answer after WskDeregister (and for a block never registered). */
        st = STATUS_DEVICE_NOT_READY;
    } else if (WSK_MAJOR_VERSION(reg->client.Dispatch->Version) != WSK_MAJOR_VERSION(WDK_WSK_VERSION)) {
        version = reg->client.Dispatch->Version;
        st = STATUS_NOINTERFACE;
    } else {
        reg->captures++;
        WskProviderNpi->Client = (PWSK_CLIENT)reg;
        WskProviderNpi->Dispatch = &wdk_wsk_provider_dispatch;
        st = STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&wdk_wsk.lock);
    if (st == STATUS_NOINTERFACE)
        wdk_log("WskCaptureProviderNPI: client WSK version %u.%u is not supported (the kit speaks 1.0)",
                WSK_MAJOR_VERSION(version), WSK_MINOR_VERSION(version));
    return st;
}

VOID WSKAPI WskReleaseProviderNPI(PWSK_REGISTRATION WskRegistration)
{
    const void *site = __builtin_return_address(0);
    BOOLEAN released = FALSE;
    pthread_mutex_lock(&wdk_wsk.lock);
    struct wdk_wsk_reg *reg = wsk_reg_of(WskRegistration);
    if (reg && reg->captures > 0) {
        reg->captures--;
        released = TRUE;
        pthread_cond_broadcast(&wdk_wsk.cond);
    }
    pthread_mutex_unlock(&wdk_wsk.lock);
    if (!released)
        wdk_wsk_report("WSK_RELEASE_WITHOUT_CAPTURE", site, NULL, "WskReleaseProviderNPI without a capture to release");
}

NTSTATUS WSKAPI WskQueryProviderCharacteristics(PWSK_REGISTRATION WskRegistration,
                                                PWSK_PROVIDER_CHARACTERISTICS WskProviderCharacteristics)
{
    if (!WskProviderCharacteristics)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&wdk_wsk.lock);
    struct wdk_wsk_reg *reg = wsk_reg_of(WskRegistration);
    pthread_mutex_unlock(&wdk_wsk.lock);
    if (!reg)
        return STATUS_DEVICE_NOT_READY;
    WskProviderCharacteristics->HighestVersion = WDK_WSK_VERSION;
    WskProviderCharacteristics->LowestVersion = WDK_WSK_VERSION;
    return STATUS_SUCCESS;
}

VOID WSKAPI WskDeregister(PWSK_REGISTRATION WskRegistration)
{
    const void *site = __builtin_return_address(0);
    ndk_rt *rt = NULL;
    struct ndk_list *pos;
    ULONG adapters;

    wdk_wsk_require_passive("WskDeregister", site);   /* reported; deregistering anyway is safer */
    pthread_mutex_lock(&wdk_wsk.lock);
    struct wdk_wsk_reg *reg = wsk_reg_of(WskRegistration);
    if (!reg || !wsk_reg_transition(reg, WDK_WSK_REG_DEREGISTERING)) {
        pthread_mutex_unlock(&wdk_wsk.lock);
        wdk_wsk_report("WSK_DEREGISTER_UNREGISTERED", site, NULL, "WskDeregister of a WSK_REGISTRATION that is not registered");
        return;
    }
    /* "Blocks until all captured instances are released and all calls have returned". */
    while (reg->captures > 0 || reg->in_calls > 0)
        pthread_cond_wait(&wdk_wsk.cond, &wdk_wsk.lock);
    adapters = reg->adapters;
    ndk_list_for_each(pos, &wdk_wsk.adapters) {   /* those outlive the record: unlink them */
        struct wdk_wsk_adapter *a = ndk_list_entry(pos, struct wdk_wsk_adapter, link);
        if (a->reg == reg)
            a->reg = NULL;
    }
    wsk_reg_transition(reg, WDK_WSK_REG_GONE);
    ndk_list_del(&reg->link);
    WskRegistration->ReservedRegistrationState = WDK_WSK_REG_GONE;
    WskRegistration->ReservedRegistrationContext = NULL;
    wdk_wsk.registrations--;
    /* The runtime may close only when no adapter is open in it; else it stays (and the
     * unload check names the adapters). */
    if (wdk_wsk.registrations == 0 && ndk_list_empty(&wdk_wsk.adapters) && ndk_list_empty(&wdk_wsk.abandoned)) {
        rt = wdk_wsk.rt;
        wdk_wsk.rt = NULL;
    }
    pthread_mutex_unlock(&wdk_wsk.lock);
    reg->magic = 0;
    free(reg);
    if (adapters)
        wdk_wsk_report("NDK_ADAPTER_OPEN_AT_DEREGISTER", site, NULL,
                       "WskDeregister while %u NDK adapter(s) opened through it are still open (WskCloseNdkAdapter first)",
                       adapters);
    if (rt)
        ndk_rt_close(rt);
}

/* PFN_WSK_CONTROL_CLIENT: the NDK extension's code copies the dispatch structure out; the
 * documented WSK codes are refused (the kit has no TCP/IP socket layer). Context: <= DISPATCH. */
static NTSTATUS WSKAPI wsk_control_client(PWSK_CLIENT Client, ULONG ControlCode, SIZE_T InputSize, PVOID InputBuffer,
                                          SIZE_T OutputSize, PVOID OutputBuffer, SIZE_T *OutputSizeReturned, PIRP Irp)
{
    struct wdk_wsk_reg *reg = wdk_wsk_client_get(Client);
    NTSTATUS st;
    SIZE_T returned = 0;

    if (!reg) {
        st = STATUS_INVALID_PARAMETER;
    } else if (ControlCode == WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH) {
        /* The output is the structure itself; a pointer-sized buffer is a known consumer
         * mistake and gets STATUS_INVALID_PARAMETER, as Windows answers it. */
        if (OutputSize != sizeof(WSK_PROVIDER_NDK_DISPATCH) || !OutputBuffer || InputSize != 0) {
            st = STATUS_INVALID_PARAMETER;
        } else {
            memcpy(OutputBuffer, &wdk_wsk_ndk_dispatch, sizeof wdk_wsk_ndk_dispatch);
            returned = sizeof wdk_wsk_ndk_dispatch;
            st = STATUS_SUCCESS;
        }
    } else {
        wdk_log("WskControlClient(code %u): not supported: the kit implements WSK only for the NDK extension "
                "(WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH)", (unsigned)ControlCode);
        st = STATUS_NOT_SUPPORTED;
    }
    (void)InputBuffer;
    if (reg)
        wdk_wsk_client_put(reg);
    if (Irp) {
        /* With an IRP the result goes there (OutputSizeReturned is ignored). */
        Irp->IoStatus.Status = st;
        Irp->IoStatus.Information = returned;
        IoCompleteRequest(Irp, IO_NO_INCREMENT);
        return st;
    }
    if (OutputSizeReturned)
        *OutputSizeReturned = returned;
    return st;
}

const WSK_PROVIDER_DISPATCH wdk_wsk_provider_dispatch = {
    .Version = WDK_WSK_VERSION,
    .Reserved = 0,
    .WskSocket = wdk_wsk_socket,
    .WskSocketConnect = wdk_wsk_socket_connect,
    .WskControlClient = wsk_control_client,
    .WskGetAddressInfo = wdk_wsk_get_address_info,
    .WskFreeAddressInfo = wdk_wsk_free_address_info,
    .WskGetNameInfo = wdk_wsk_get_name_info,
};
