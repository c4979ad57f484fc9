/* vfy_report: violation lines, backtraces, per-rule counters and the summary. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "vfy_report.h"

#include <ndk/filter.h>

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* report_lock: keeps one violation's line and backtrace together in the output. */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static int report_fd = STDERR_FILENO;
static enum flt_verify_action report_action;
static bool report_backtraces = true;
static atomic_ulong counts[VFY_RULE_COUNT];

/* Lines written per rule; later violations of the rule are only counted. */
#define VFY_REPORT_LINES_PER_RULE 20

/* At load; may block (opens a file). */
int flt_verify_report_open(const char *path, enum flt_verify_action action, bool backtraces)
{
    report_action = action;
    report_backtraces = backtraces;
    int fd = ndk_filter_open_path(path);
    if (fd < 0)
        return fd;
    report_fd = fd;
    return 0;
}

/* At unload. */
void flt_verify_report_close(void)
{
    pthread_mutex_lock(&report_lock);
    if (report_fd != STDERR_FILENO)
        close(report_fd);
    report_fd = STDERR_FILENO;
    pthread_mutex_unlock(&report_lock);
}

static void write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* Any thread; takes report_lock around the write only. */
void flt_verify_report(enum flt_verify_rule rule, const char *object, const char *call, const char *fmt, ...)
{
    const struct flt_verify_rule_info *r = flt_verify_rule_info(rule);
    unsigned long nth = atomic_fetch_add(&counts[rule], 1) + 1;
    if (nth > VFY_REPORT_LINES_PER_RULE) {
        /* A rule broken in a loop would flood the output: the summary still counts it. */
        if (report_action == VFY_ACTION_ABORT && r->severity == VFY_ERROR)
            abort();
        return;
    }
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    char line[1024];
    int n = snprintf(line, sizeof line, "ndk-verify: %s %s [%s: %s] %s %s: %s%s\n",
                     r->severity == VFY_ERROR ? "error" : "warning", r->id, r->section, r->page,
                     object ? object : "-", call ? call : "-", detail,
                     nth == VFY_REPORT_LINES_PER_RULE ? " (further violations of this rule are only counted)" : "");
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = (int)sizeof line - 1;
    void *frames[32];
    int depth = report_backtraces ? backtrace(frames, 32) : 0;
    pthread_mutex_lock(&report_lock);
    write_all(report_fd, line, (size_t)n);
    if (depth > 1)
        backtrace_symbols_fd(frames + 1, depth - 1, report_fd);
    pthread_mutex_unlock(&report_lock);
    if (report_action == VFY_ACTION_ABORT && r->severity == VFY_ERROR)
        abort();
}

unsigned long flt_verify_report_count(enum flt_verify_rule rule)
{
    return (unsigned)rule < VFY_RULE_COUNT ? atomic_load(&counts[rule]) : 0;
}

/* Any thread; takes report_lock. */
void flt_verify_report_summary(const char *what)
{
    char line[256];
    unsigned long total = 0;
    pthread_mutex_lock(&report_lock);
    for (int i = 0; i < VFY_RULE_COUNT; i++) {
        unsigned long c = atomic_load(&counts[i]);
        if (!c)
            continue;
        total += c;
        const struct flt_verify_rule_info *r = flt_verify_rule_info((enum flt_verify_rule)i);
        int n = snprintf(line, sizeof line, "ndk-verify: summary %s: %s %s [%s: %s]: %lu\n", what,
                         r->severity == VFY_ERROR ? "error" : "warning", r->id, r->section, r->page, c);
        if (n > 0)
            write_all(report_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    if (!total) {
        int n = snprintf(line, sizeof line, "ndk-verify: summary %s: no violations\n", what);
        if (n > 0)
            write_all(report_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    pthread_mutex_unlock(&report_lock);
}
