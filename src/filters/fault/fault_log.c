/* fault_log: one line per injected fault (fault.path, default stderr), so that a run can be
 * read back and reproduced. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* log_lock: one line at a time. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = STDERR_FILENO;

/* At load; may block. "%p" in path is the pid. */
int flt_fault_log_open(const char *path)
{
    if (!path || !*path || !strcmp(path, "-"))
        return 0;
    char real[4096];
    size_t o = 0;
    for (const char *p = path; *p && o + 24 < sizeof real; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(real + o, sizeof real - o, "%ld", (long)getpid());
            p++;
        } else {
            real[o++] = *p;
        }
    }
    real[o] = '\0';
    int fd = open(real, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
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
