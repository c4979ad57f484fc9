/* scale_probe.c - see scale_probe.h. */
#define _GNU_SOURCE
#include "scale_probe.h"

#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

struct scale_probe_mem scale_probe_mem(void)
{
    struct scale_probe_mem m = { 0, 0, 0 };
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    m.rss = (double)res * (double)sysconf(_SC_PAGESIZE);
    /* mallinfo2: glibc's whole heap, arenas and mmapped chunks alike. */
    struct mallinfo2 mi = mallinfo2();
    m.heap = (double)mi.uordblks + (double)mi.hblkhd;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        while (readdir(d))
            m.fds++;
        closedir(d);
    }
    return m;
}

double scale_probe_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}
