/* wdk_host.h - the host interface ndkdrv(1) drives (host.c). Single-threaded caller. */
#ifndef WDK_HOST_H
#define WDK_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <ndk/nt.h>

/* Loads the driver .so and prepares its DRIVER_OBJECT; -1 with a message in err. */
int wdk_host_load(const char *path, char *err, size_t errlen);
/* Adds a Parameters value ("NAME=VALUE", see registry.c); 0 or -errno. */
int wdk_host_param(const char *spec);
/* Runs DriverEntry on a PASSIVE_LEVEL thread; its status. */
NTSTATUS wdk_host_driver_entry(void);
/* 1 when no kit work is pending (work items, timers, DPCs, system threads, activity). */
int wdk_host_idle(void);
/* Waits until the kit is idle (1) or the monotonic deadline passes (0). */
int wdk_host_wait_idle(int64_t deadline_ns);
/* Calls DriverUnload (if call_unload) on a PASSIVE_LEVEL thread, then runs every unload check. */
void wdk_host_unload(int call_unload);
/* Verifier findings so far. */
unsigned wdk_host_findings(void);
const char *wdk_host_driver_name(void);
/* Monotonic clock in ns. */
int64_t wdk_mono_ns(void);

#endif
