/* filter_path.c - ndk_filter_open_path(): the output file of a filter's <filter>.path setting
 * (trace, verify and fault write their records there), with %p expanded to the process id so
 * that every process of a run writes its own file. May block (open). */
#define _GNU_SOURCE
#pragma GCC visibility push(default)
#include <ndk/filter.h>
#pragma GCC visibility pop

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int ndk_filter_open_path(const char *path)
{
    if (!path || !*path || strcmp(path, "-") == 0)
        return STDERR_FILENO;
    char name[4096];
    size_t o = 0;
    for (const char *c = path; *c; c++) {
        if (o >= sizeof name - 24)
            return -ENAMETOOLONG;
        if (c[0] == '%' && c[1] == 'p') {
            o += (size_t)snprintf(name + o, sizeof name - o, "%d", (int)getpid());
            c++;
        } else {
            name[o++] = *c;
        }
    }
    name[o] = '\0';
    int fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return fd < 0 ? -errno : fd;
}
