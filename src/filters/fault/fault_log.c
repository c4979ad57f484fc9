/* fault_log: one line per injected fault (fault.path, default stderr), so that a run can be
 * read back and reproduced. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fault.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* log_lock: one line at a time. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = STDERR_FILENO;

/* At load; may block. "%p" in path is the pid (ndk_filter_open_path). */
int flt_fault_log_open(const char *path)
{
    int fd = ndk_filter_open_path(path);
    if (fd < 0)
        return fd;
    log_fd = fd;
    return 0;
}

void flt_fault_log_close(void)
{
    pthread_mutex_lock(&log_lock);
    if (log_fd != STDERR_FILENO)
        close(log_fd);
    log_fd = STDERR_FILENO;
    pthread_mutex_unlock(&log_lock);
}

/* Any thread; log_lock around the write. */
void flt_fault_log(uint64_t seed, unsigned rule_index, const struct flt_fault_rule *rule, uint64_t call_index,
                   const char *object, const char *slot, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char line[640];
    int n = snprintf(line, sizeof line, "ndk-fault: seed %llu rule %u '%s' call %llu: %s %s: %s\n",
                     (unsigned long long)seed, rule_index + 1, rule ? rule->text : "-",
                     (unsigned long long)call_index, object ? object : "-", slot ? slot : "-", what);
    if (n <= 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    pthread_mutex_lock(&log_lock);
    ssize_t w = write(log_fd, line, len);
    (void)w;
    pthread_mutex_unlock(&log_lock);
}
