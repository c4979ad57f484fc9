/* scale_probe.h - what a process holding many connections costs, read the same way for ours
 * (tests/iwarp/test_iw_scale's bench mode) and plain TCP (bench/tcp_scale), so that the scale
 * table's columns compare like with like. Any thread, no lock; reads /proc/self. */
#ifndef SCALE_PROBE_H
#define SCALE_PROBE_H

struct scale_probe_mem {
    double rss, heap, fds;        /* bytes resident, bytes of malloc heap in use, open descriptors */
};

struct scale_probe_mem scale_probe_mem(void);
/* User + system CPU seconds of the process so far. */
double scale_probe_cpu(void);

#endif
