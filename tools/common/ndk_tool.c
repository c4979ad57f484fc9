/*
 * ndk_tool.c - the tool process: its name, error lines, status names, the stop flag and the
 * runtime it opens (ndk_tool.h).
 */
#include "ndk_tool.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *tool_progname = "ndktool";
volatile sig_atomic_t ndk_tool_stop;

void ndk_tool_set_progname(const char *name) { tool_progname = name; }
const char *ndk_tool_progname(void) { return tool_progname; }

void ndk_tool_err(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", tool_progname, line);
    fflush(stderr);
}

const char *ndk_tool_status(NTSTATUS st) { return ndk_rt_status_name(st); }

static void tool_on_signal(int sig)
{
    (void)sig;
    __atomic_store_n(&ndk_tool_stop, 1, __ATOMIC_RELAXED);
}

bool ndk_tool_stopped(void) { return __atomic_load_n(&ndk_tool_stop, __ATOMIC_RELAXED) != 0; }

void ndk_tool_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tool_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

NTSTATUS ndk_tool_rt_open(ndk_rt **out)
{
    ndk_rt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.no_monitor = TRUE;
    return ndk_rt_open(&cfg, out);
}
