/*
 * host.c - the driver host behind ndkdrv(1): loads a driver built with the kit as a shared
 * object, runs DriverEntry on a PASSIVE_LEVEL kit thread, waits for the end of the driver's
 * work, runs DriverUnload on a PASSIVE_LEVEL thread, then the unload checks. "The work ends" when
 * no work item is queued or running, no timer is set, no DPC is queued or running, no system
 * thread is alive and no kit activity (e.g. an NDK request the WSK layer knows is pending) is
 * outstanding, observed twice 20 ms apart.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "wdk_internal.h"
#include "wdk_host.h"

static void *module;
static PDRIVER_INITIALIZE entry;
static UNICODE_STRING registry_path;

int wdk_host_load(const char *path, char *err, size_t errlen)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(wdk_driver_name, sizeof wdk_driver_name, "%s", base);
    char *dot = strstr(wdk_driver_name, ".so");
    if (dot)
        *dot = 0;
    for (char *p = wdk_driver_name; *p; p++)
        if (*p == '\\')
            *p = '_';
    wdk_registry_set_service(wdk_driver_name);
    module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!module) {
        snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    entry = (PDRIVER_INITIALIZE)dlsym(module, "DriverEntry");
    if (!entry) {
        snprintf(err, errlen, "%s has no DriverEntry symbol (declare it with DRIVER_INITIALIZE and build with "
                 "openndk_add_driver)", path);
        return -1;
    }
    Dl_info info;
    void *start = NULL;
    if (dladdr((void *)(uintptr_t)entry, &info))
        start = info.dli_fbase;
    if (!wdk_driver_create(wdk_driver_name, entry, start)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int wdk_host_param(const char *spec)
{
    return wdk_registry_param(spec);
}

struct call {
    int unload;
    NTSTATUS status;
    int done;
};

static void call_thread(void *p)
{
    struct call *c = p;
    if (c->unload) {
        if (wdk_driver->DriverUnload)
            wdk_driver->DriverUnload(wdk_driver);
    } else {
        /* The registry path buffer is valid only during DriverEntry, as on Windows. */
        const WCHAR *path = wdk_registry_path();
        size_t n = wdk_wcslen(path);
        registry_path.Buffer = malloc((n + 1) * sizeof(WCHAR));
        if (registry_path.Buffer) {
            memcpy(registry_path.Buffer, path, (n + 1) * sizeof(WCHAR));
            registry_path.Length = (USHORT)(n * sizeof(WCHAR));
            registry_path.MaximumLength = (USHORT)((n + 1) * sizeof(WCHAR));
        }
        c->status = entry(wdk_driver, &registry_path);
    }
    KIRQL irql = wdk_irql_get();
    if (irql != PASSIVE_LEVEL)
        wdk_verify_report("IRQL_NOT_RESTORED", c->unload ? "DriverUnload" : "DriverEntry",
                          "returned at IRQL %u", irql);
    pthread_mutex_lock(&wdk_ke_lock);
    c->done = 1;
    pthread_cond_broadcast(&wdk_ke_cond);
    pthread_mutex_unlock(&wdk_ke_lock);
}

/* Runs DriverEntry or DriverUnload on a new PASSIVE_LEVEL kit thread and waits for it. */
static NTSTATUS run_on_passive_thread(int unload)
{
    struct call c = { .unload = unload, .status = STATUS_SUCCESS };
    if (wdk_kit_thread_start(call_thread, &c, PASSIVE_LEVEL))
        return STATUS_INSUFFICIENT_RESOURCES;
    pthread_mutex_lock(&wdk_ke_lock);
    while (!c.done)
        wdk_ke_wait_until(INT64_MAX);
    pthread_mutex_unlock(&wdk_ke_lock);
    return c.status;
}

NTSTATUS wdk_host_driver_entry(void)
{
    NTSTATUS st = run_on_passive_thread(0);
    return st;
}

int wdk_host_idle(void)
{
    return !wdk_work_pending() && !wdk_dpc_pending() && !wdk_timers_set() && !wdk_system_threads_alive() &&
           !wdk_activity_pending();
}

int wdk_host_wait_idle(int64_t deadline_ns)
{
    int quiet = 0;
    while (wdk_mono_ns() < deadline_ns) {
        quiet = wdk_host_idle() ? quiet + 1 : 0;
        if (quiet >= 2)
            return 1;
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return 0;
}

void wdk_host_unload(int call_unload)
{
    if (call_unload) {
        if (!wdk_driver->DriverUnload)
            wdk_log("%s has no DriverUnload routine: on Windows it could not be unloaded", wdk_driver_name);
        else
            run_on_passive_thread(1);
    }
    /* Work queued before or during unload keeps the driver in memory until it has run. */
    wdk_work_drain(wdk_mono_ns() + 5LL * 1000000000);
    int64_t until = wdk_mono_ns() + 1000000000LL;
    while (wdk_system_threads_alive() && wdk_mono_ns() < until) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    wdk_unload_checks_run();
    wdk_timers_check();
    wdk_dpc_check();
    wdk_system_threads_check();
    wdk_lookaside_check();
    wdk_rundown_check();
    wdk_devices_check();
    wdk_mem_check_leaks();
}

unsigned wdk_host_findings(void)
{
    return wdk_verify_findings();
}

const char *wdk_host_driver_name(void)
{
    return wdk_driver_name;
}
