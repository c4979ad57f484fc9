/*
 * wdk_internal.h - what the pieces of libndkwdk (the OpenNDK WDK kit) share: the emulated IRQL
 * of each thread, the verifier's report, the dispatcher lock, tracked allocations, kit threads
 * and the host's hooks. Not installed; drivers see only the WDK headers of include/wdk.
 *
 * The kit's model is described in openndk-wdk(7): each thread carries an IRQL (kit threads set
 * it, threads the kit did not create read DISPATCH_LEVEL), pool and other driver-visible
 * allocations are tracked per tag and reported at unload, DPCs, timers and work items run on kit
 * threads.
 */
#ifndef WDK_INTERNAL_H
#define WDK_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <wdm.h>

/* ---- IRQL (irql.c) ---- */
/* Current thread's emulated IRQL; DISPATCH_LEVEL on threads the kit did not create. Any IRQL. */
KIRQL wdk_irql_get(void);
/* Sets the current thread's emulated IRQL without any check. Any IRQL. */
void wdk_irql_set(KIRQL irql);

/* ---- verifier (verifier.c) ---- */
/* Prints one line "ndkdrv: VERIFIER <rule>: <message> at <site>" to stderr, counts a finding
 * and aborts when NDK_WDK_VERIFY=abort. Any IRQL; takes no kit lock. */
void wdk_verify_report(const char *rule, const char *site, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Findings reported so far. */
unsigned wdk_verify_findings(void);
/* "module!symbol+0xoff" for a code address, interned (stable pointer). Any IRQL. */
const char *wdk_site_from_ra(const void *ra);
#define WDK_CALLER wdk_site_from_ra(__builtin_return_address(0))
/* A line "ndkdrv: <message>" on stderr (not a finding). */
void wdk_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "not supported by the OpenNDK kit: <api>: <advice>" once per api. */
void wdk_unsupported(const char *api, const char *advice);
/* Formats a pool tag as poolmon shows it (memory order, e.g. 'tseT' -> "Test"). */
const char *wdk_tag_str(ULONG tag, char buf[8]);

/* At-unload checks registered by other parts of the kit (e.g. WSK: NDK objects left open).
 * Run by the host on its PASSIVE unload thread after DriverUnload, in registration order,
 * before the kit's own leak checks. */
typedef void (*wdk_unload_check_fn)(void *ctx);
void wdk_unload_check_register(wdk_unload_check_fn fn, void *ctx);
void wdk_unload_checks_run(void);

/* ---- dispatcher (dispatcher.c) ---- */
/* wdk_ke_lock guards every dispatcher object's state, the timer list, the DPC queue and the
 * work queue; wdk_ke_cond (CLOCK_MONOTONIC) is broadcast whenever any of them changes. Never
 * held while driver code runs. */
extern pthread_mutex_t wdk_ke_lock;
extern pthread_cond_t wdk_ke_cond;
void wdk_ke_init(void);
/* Monotonic and system (100 ns since 1601) clocks. */
int64_t wdk_mono_ns(void);
LONGLONG wdk_system_time(void);
/* Converts a WDK timeout (NULL forever, 0 poll, <0 relative, >0 absolute) to a monotonic
 * deadline in ns; INT64_MAX for forever. */
int64_t wdk_deadline_ns(const LARGE_INTEGER *timeout);
/* Waits on wdk_ke_cond (lock held) until deadline_ns; returns 0 or ETIMEDOUT. */
int wdk_ke_wait_until(int64_t deadline_ns);
/* Dispatcher object types kept in DISPATCHER_HEADER.Type (the kernel's numbering). */
enum {
    WDK_OBJ_EVENT_NOTIFICATION = 0,
    WDK_OBJ_EVENT_SYNCHRONIZATION = 1,
    WDK_OBJ_MUTANT = 2,
    WDK_OBJ_SEMAPHORE = 5,
    WDK_OBJ_THREAD = 6,
    WDK_OBJ_TIMER_NOTIFICATION = 8,
    WDK_OBJ_TIMER_SYNCHRONIZATION = 9,
};
/* Signal state, read and written under wdk_ke_lock (atomic so that racy readers such as
 * KeReadStateEvent stay defined). */
static inline LONG wdk_signal_get(const DISPATCHER_HEADER *h)
{
    return __atomic_load_n(&h->SignalState, __ATOMIC_ACQUIRE);
}
static inline void wdk_signal_set(DISPATCHER_HEADER *h, LONG v)
{
    __atomic_store_n(&h->SignalState, v, __ATOMIC_RELEASE);
}
/* Checks the wait rules (a blocking wait at DISPATCH_LEVEL or above). */
void wdk_wait_check(const char *api, const LARGE_INTEGER *timeout, const char *site);

/* ---- threads (thread.c) ---- */
struct _KTHREAD {
    DISPATCHER_HEADER Header;          /* signaled when the thread has ended */
    uint32_t magic;
    int refs;                          /* under wdk_ke_lock */
    int system;                        /* created by PsCreateSystemThread */
    pthread_t tid;
    PKSTART_ROUTINE start;
    PVOID context;
    const char *site;
    struct _KTHREAD *next;             /* live system threads, under wdk_ke_lock */
};
/* The calling thread's KTHREAD (kit or foreign). */
struct _KTHREAD *wdk_thread_self(void);
/* Starts a detached kit thread at the given IRQL; 0 or -errno. */
int wdk_kit_thread_start(void (*fn)(void *), void *arg, KIRQL irql);
/* System threads still running; under no lock. */
unsigned wdk_system_threads_alive(void);
void wdk_system_threads_check(void);

/* ---- tracked allocations (pool.c) ---- */
enum wdk_mem_kind { WDK_MEM_POOL, WDK_MEM_MDL, WDK_MEM_WORKITEM, WDK_MEM_LOOKASIDE, WDK_MEM_DEVICE, WDK_MEM_IRP,
                    WDK_MEM_KIT };
/* Allocates size bytes (16-byte aligned, page aligned from PAGE_SIZE up), tracked under kind and
 * tag with the allocating API and site. NULL on failure. Any IRQL. */
void *wdk_mem_alloc(size_t size, int zero, ULONG tag, enum wdk_mem_kind kind, const char *api, const char *site);
/* Frees a tracked block; -ENOENT when p is not a live block of that kind (nothing freed). */
int wdk_mem_free(void *p, enum wdk_mem_kind kind, ULONG *tag_out);
/* Size of a live tracked block, 0 if unknown. */
size_t wdk_mem_size(const void *p);
/* Reports every block still allocated (one line per kind and tag). */
void wdk_mem_check_leaks(void);
/* Called with [p, p+size) before that memory is freed, so objects living in it (timers, DPCs,
 * rundown references) can be forgotten or reported. */
typedef void (*wdk_forget_fn)(const char *lo, const char *hi);
void wdk_forget_register(wdk_forget_fn fn);
void wdk_forget_range(const void *p, size_t size);

/* ---- work, DPCs, timers (workitem.c, dpc.c, timer.c) ---- */
unsigned wdk_work_pending(void);
unsigned wdk_dpc_pending(void);
unsigned wdk_timers_set(void);
void wdk_timers_check(void);
void wdk_dpc_check(void);
void wdk_work_drain(int64_t deadline_ns);
/* Work the host should wait for before it unloads the driver (e.g. an NDK request in flight). */
void wdk_activity_begin(void);
void wdk_activity_end(void);
unsigned wdk_activity_pending(void);

/* ---- other unload checks ---- */
void wdk_lookaside_check(void);
void wdk_rundown_check(void);
void wdk_devices_check(void);

/* ---- driver and registry (driver.c, registry.c, dbgprint.c) ---- */
extern DRIVER_OBJECT *wdk_driver;
/* The loaded driver's name (the .so's base name), the prefix of its DbgPrint lines. */
extern char wdk_driver_name[64];
/* Builds the DRIVER_OBJECT of the driver named name; NULL when out of memory. */
DRIVER_OBJECT *wdk_driver_create(const char *name, PDRIVER_INITIALIZE entry, void *start);
void wdk_registry_set_service(const char *name);
int wdk_registry_param(const char *spec);
const WCHAR *wdk_registry_path(void);
void wdk_registry_reset(void);

/* ---- strings (rtl_string.c) ---- */
size_t wdk_wcslen(const WCHAR *s);
/* UTF-16 -> UTF-8 into buf (always terminated); returns bytes needed without the NUL. */
size_t wdk_utf16_to_utf8(const WCHAR *s, size_t n, char *buf, size_t cap);
/* UTF-8 -> UTF-16 into buf (always terminated when cap > 0); returns units needed without NUL. */
size_t wdk_utf8_to_utf16(const char *s, size_t n, WCHAR *buf, size_t cap);

/* ---- Windows printf (format.c) ---- */
/* Formats like the kernel's printf family into a narrow (UTF-8) or wide (UTF-16) buffer of cap
 * units; returns the units the full result needs (without NUL); the buffer holds a truncated,
 * terminated result when cap > 0. wide_fmt: the format is WCHAR (and %s/%c mean wide). */
size_t wdk_vformat(void *buf, size_t cap, int wide_out, const void *fmt, int wide_fmt, va_list ap);

#endif
