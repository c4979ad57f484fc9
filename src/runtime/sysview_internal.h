/* sysview_internal.h - the runtime's side of the system view (sysview.c publishes,
 * sysview_read.c reads; format in ndk/sysview.h). */
#ifndef NDK_SYSVIEW_INTERNAL_H
#define NDK_SYSVIEW_INTERNAL_H

#include <ndk/sysview.h>
#include <stddef.h>
#include <sys/types.h>

#define RT_SV_PATH_MAX 256

struct ndk_rt;

/* ndk_rt_open / ndk_rt_close: the process publishes while any runtime is open. May block. */
void rt_sysview_acquire(struct ndk_rt *rt);
void rt_sysview_release(struct ndk_rt *rt);
/* SysviewAlloc / SysviewFree (ndk/provider.h). Any thread; a brief lock, never the data path. */
struct ndk_sv_rec *rt_sysview_alloc(struct ndk_rt *rt, uint64_t adapter, uint16_t type);
void rt_sysview_free(struct ndk_sv_rec *r);

/* OID_NDK_STATISTICS: adds other processes' counters of the same adapter (sysview_read.c).
 * May block (file I/O). */
void rt_sysview_add_peers(const char *provider, uint32_t ifindex, uint64_t counters[NDK_SV_COUNTERS]);

/* Helpers shared with the reader. Never block for long. */
int rt_sysview_default_dir(char *buf, size_t len);
int rt_sysview_file_locked(int fd);
int rt_sysview_own_file(dev_t *dev, ino_t *ino);
uint64_t rt_sysview_net_ns(void);

#endif /* NDK_SYSVIEW_INTERNAL_H */
