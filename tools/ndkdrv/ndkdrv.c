/*
 * ndkdrv - the driver host of the OpenNDK WDK kit (ndkdrv(1)): loads a Windows kernel driver
 * built with the kit as a shared object, runs DriverEntry at PASSIVE_LEVEL with the --param
 * values as its Parameters key, keeps it loaded until its work ends (or a time or signal),
 * runs DriverUnload and the kit's verifier checks. Exit status: 0 when DriverEntry succeeded and
 * no check fired, 1 otherwise, 2 for a usage or load error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ndk/runtime.h>
#include "wdk_host.h"

static volatile sig_atomic_t waiting, signalled;

static void on_signal(int sig)
{
    if (waiting) {
        signalled = 1;
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ndkdrv run DRIVER.so [--param NAME=VALUE]... [--unload-after SECONDS | --wait-signal]\n"
            "  Loads a driver built with the OpenNDK WDK kit, calls DriverEntry at PASSIVE_LEVEL, waits until\n"
            "  its work ends, calls DriverUnload and reports what the kit's verifier found.\n"
            "  --param NAME=VALUE     a value of the driver's Parameters key: REG_DWORD for a number,\n"
            "                         REG_SZ otherwise; prefixes sz:, dword:, qword:, multi_sz:, binary:\n"
            "  --unload-after SECONDS unload after this long instead of when the work ends\n"
            "  --wait-signal          unload on SIGINT, SIGTERM or SIGHUP\n"
            "  Environment: NDK_WDK_VERIFY=abort makes every verifier report fatal.\n");
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc < 3 || strcmp(argv[1], "run")) {
        usage(stderr);
        return 2;
    }
    const char *driver = argv[2];
    double unload_after = -1;
    int wait_signal = 0;

    /* SIGINT, SIGTERM and SIGHUP end the wait for the driver's work (then DriverUnload runs); during
     * DriverEntry or DriverUnload they stop the host as usual. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    char err[512];
    if (wdk_host_load(driver, err, sizeof err)) {
        fprintf(stderr, "ndkdrv: %s\n", err);
        return 2;
    }
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--param") && i + 1 < argc) {
            if (wdk_host_param(argv[++i])) {
                fprintf(stderr, "ndkdrv: --param %s: expected NAME=VALUE with a valid typed value\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--unload-after") && i + 1 < argc) {
            char *end;
            unload_after = strtod(argv[++i], &end);
            if (*end || unload_after < 0) {
                fprintf(stderr, "ndkdrv: --unload-after %s: expected a number of seconds\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--wait-signal")) {
            wait_signal = 1;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (wait_signal && unload_after >= 0) {
        fprintf(stderr, "ndkdrv: --unload-after and --wait-signal exclude each other\n");
        return 2;
    }

    NTSTATUS st = wdk_host_driver_entry();
    int entry_ok = NT_SUCCESS(st);
    if (!entry_ok) {
        fprintf(stderr, "ndkdrv: %s: DriverEntry returned %s (0x%08X)\n", wdk_host_driver_name(),
                ndk_rt_status_name(st), (unsigned)st);
    } else {
        /* Until the signal, the time, or the end of the work (the default). */
        waiting = 1;
        int64_t deadline = unload_after >= 0 ? wdk_mono_ns() + (int64_t)(unload_after * 1e9) : INT64_MAX;
        while (!signalled) {
            if (!wait_signal && unload_after < 0 && wdk_host_wait_idle(wdk_mono_ns() + 100 * 1000 * 1000))
                break;
            if (wdk_mono_ns() >= deadline)
                break;
            if (wait_signal || unload_after >= 0) {
                struct timespec ts = { 0, 20 * 1000 * 1000 };
                nanosleep(&ts, NULL);
            }
        }
        waiting = 0;
    }
    wdk_host_unload(entry_ok);
    unsigned findings = wdk_host_findings();
    if (findings)
        fprintf(stderr, "ndkdrv: %s: %u verifier finding%s\n", wdk_host_driver_name(), findings,
                findings == 1 ? "" : "s");
    fflush(stderr);
    /* Kit threads (workers, DPC and timer threads) are still parked: leave without unwinding. */
    _exit(entry_ok && !findings ? 0 : 1);
}
