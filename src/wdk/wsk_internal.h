/*
 * wsk_internal.h - what the kit's Winsock Kernel files share: the registration record behind a
 * WSK_REGISTRATION, the process-wide WSK state (the runtime the NDK extension opens adapters
 * through), and the IRQL filter that WSK-opened adapters get on top of their filter stack.
 *
 * Files: wsk.c (registration, the provider NPI, WskControlClient), wsk_ndk.c (the NDK
 * extension: WskOpenNdkAdapter/WskCloseNdkAdapter), wsk_filter.c (the in-process filter that runs
 * consumer callbacks at DISPATCH_LEVEL and counts objects), wsk_unsupported.c (the socket half
 * of WSK, refused).
 */
#ifndef WDK_WSK_INTERNAL_H
#define WDK_WSK_INTERNAL_H

#include <ntddk.h>
#include <wsk.h>
#include <wskndk.h>

#include <pthread.h>

#include <ndk/filter.h>
#include <ndk/runtime.h>

#include "ndk_list.h"

/* The life of one WskRegister (wdk_wsk_reg_transition() is the only place it changes). */
enum wdk_wsk_reg_state {
    WDK_WSK_REG_ACTIVE = 1,       /* registered; captures succeed */
    WDK_WSK_REG_DEREGISTERING,    /* WskDeregister waits for captures; new captures fail */
    WDK_WSK_REG_GONE              /* WskDeregister returned; the record is freed */
};

#define WDK_WSK_REG_MAGIC 0x4B53574Bu    /* "KWSK": tells our records from garbage */

/* One registration: what WSK_REGISTRATION.ReservedRegistrationContext points to, and what the
 * provider NPI hands out as PWSK_CLIENT. Fields below `lock` are guarded by wdk_wsk.lock. */
struct wdk_wsk_reg {
    ULONG                  magic;
    PWSK_REGISTRATION      owner;       /* the driver's block */
    WSK_CLIENT_NPI         client;      /* as the driver passed it (the dispatch stays its) */
    enum wdk_wsk_reg_state state;
    ULONG                  captures;    /* successful captures not yet released */
    ULONG                  in_calls;    /* calls into the provider dispatch under way */
    ULONG                  adapters;    /* NDK adapters open through this registration */
    struct ndk_list        link;        /* in wdk_wsk.regs */
};

/* The IRQL filter's state for one adapter instance (wsk_filter.c). lock: guards objs and count;
 * never held while a hook forwards a call or delivers a callback. */
struct wdk_wsk_flt_inst {
    pthread_mutex_t lock;
    struct ndk_list objs;           /* wrappers alive, the adapter excepted */
    ULONG           count;
    ULONG           ifindex;        /* for reports */
};

/* One NDK adapter WskOpenNdkAdapter handed out (tracked so that close and unload can check). */
struct wdk_wsk_adapter {
    NDK_ADAPTER            *adapter;    /* the top of the stack, as the driver holds it */
    struct wdk_wsk_reg     *reg;
    ULONG                   ifindex;
    struct wdk_wsk_flt_inst flt;        /* the IRQL filter's instance over this adapter */
    struct ndk_list         link;       /* in wdk_wsk.adapters */
};

/* Process-wide WSK state. lock: guards every field and every registration's counters; never
 * held across a runtime call that may block or call back (open/close of adapters, rt open). */
struct wdk_wsk_state {
    pthread_mutex_t lock;
    pthread_cond_t  cond;          /* a capture was released or a call returned */
    ndk_rt         *rt;            /* opened by the first WskRegister, closed by the last WskDeregister */
    ULONG           registrations;
    struct ndk_list regs;
    struct ndk_list adapters;
    struct ndk_list abandoned;     /* closed by the driver with objects open: left open, reported */
    BOOLEAN         hook_installed;
};
extern struct wdk_wsk_state wdk_wsk;

/* ---- wsk.c ---- */
/* The provider dispatch the NPI points at (WskSocket & co. from wsk_unsupported.c). */
extern const WSK_PROVIDER_DISPATCH wdk_wsk_provider_dispatch;
/* The registration behind a PWSK_CLIENT, or NULL when it is not a live one. Takes a call
 * reference (wdk_wsk_client_put() releases it) so WskDeregister waits for the call. Any IRQL. */
struct wdk_wsk_reg *wdk_wsk_client_get(PWSK_CLIENT client);
void wdk_wsk_client_put(struct wdk_wsk_reg *reg);
/* Reports a Driver Verifier-style finding: rule name, call site (a driver address from
 * __builtin_return_address in a WSK entry point, or NULL with `where` naming the occasion) and
 * one line of detail. */
void wdk_wsk_report(const char *rule, const void *call_site, const char *where, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
/* TRUE at PASSIVE_LEVEL; otherwise reports rule "WSK_IRQL_NOT_PASSIVE" for the function. */
BOOLEAN wdk_wsk_require_passive(const char *function, const void *call_site);

/* ---- wsk_unsupported.c: the socket half of the provider dispatch, refused with a message ---- */
NTSTATUS WSKAPI wdk_wsk_socket(PWSK_CLIENT Client, ADDRESS_FAMILY AddressFamily, USHORT SocketType, ULONG Protocol,
                               ULONG Flags, PVOID SocketContext, const VOID *Dispatch, PEPROCESS OwningProcess,
                               PETHREAD OwningThread, PSECURITY_DESCRIPTOR SecurityDescriptor, PIRP Irp);
NTSTATUS WSKAPI wdk_wsk_socket_connect(PWSK_CLIENT Client, USHORT SocketType, ULONG Protocol, PSOCKADDR LocalAddress,
                                       PSOCKADDR RemoteAddress, ULONG Flags, PVOID SocketContext,
                                       const WSK_CLIENT_CONNECTION_DISPATCH *Dispatch, PEPROCESS OwningProcess,
                                       PETHREAD OwningThread, PSECURITY_DESCRIPTOR SecurityDescriptor, PIRP Irp);
NTSTATUS WSKAPI wdk_wsk_get_address_info(PWSK_CLIENT Client, PUNICODE_STRING NodeName, PUNICODE_STRING ServiceName,
                                         ULONG NameSpace, GUID *Provider, PADDRINFOEXW Hints, PADDRINFOEXW *Result,
                                         PEPROCESS OwningProcess, PETHREAD OwningThread, PIRP Irp);
VOID WSKAPI wdk_wsk_free_address_info(PWSK_CLIENT Client, PADDRINFOEXW AddrInfo);
NTSTATUS WSKAPI wdk_wsk_get_name_info(PWSK_CLIENT Client, PSOCKADDR SockAddr, ULONG SockAddrLength,
                                      PUNICODE_STRING NodeName, PUNICODE_STRING ServiceName, ULONG Flags,
                                      PEPROCESS OwningProcess, PETHREAD OwningThread, PIRP Irp);

/* ---- wsk_ndk.c ---- */
extern const WSK_PROVIDER_NDK_DISPATCH wdk_wsk_ndk_dispatch;
/* At unload: reports every adapter still open (rule "NDK_OBJECT_LEFT_OPEN"). Returns the
 * number reported. Takes wdk_wsk.lock. */
ULONG wdk_wsk_ndk_check_unload(void);

/* ---- wsk_filter.c: the kit's in-process filter on WSK-opened adapters ---- */
extern const ndk_filter_ops wdk_wsk_flt_ops;
void wdk_wsk_flt_inst_init(struct wdk_wsk_flt_inst *inst, ULONG ifindex);
void wdk_wsk_flt_inst_fini(struct wdk_wsk_flt_inst *inst);
/* Objects (not counting the adapter) the instance has open now; writes their names
 * ("qp#3 cq#1 ...", cut to size) into buf. Never blocks for long (the instance lock only). */
ULONG wdk_wsk_flt_open_objects(struct wdk_wsk_flt_inst *inst, char *buf, size_t size);

#endif /* WDK_WSK_INTERNAL_H */
