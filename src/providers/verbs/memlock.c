/* memlock.c - the locked-memory limit that registrations count against (map §1.3). Every
 * registration pins its pages and the kernel charges them to RLIMIT_MEMLOCK. ib_umem_get (rxe,
 * mlx5, irdma) exempts a process with CAP_IPC_LOCK; siw_umem_get does not (siw_mem.c:399-401,
 * Linux 6.1: the limit is checked with no capable()), so on siw even root fails a registration
 * past the default 8 MiB, e.g. SMB Direct's nine 1 MiB fast registers at queue depth 16.
 * An NDK consumer registers as a kernel one would, unbounded, so on such a device the provider
 * lifts the limit for a process that holds CAP_IPC_LOCK (what the other devices grant it), and
 * otherwise raises the soft limit to the hard one (what the process may do itself). */
#include "verbs.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool vb_memlock_capable(void)
{
    struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct d[2];

    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &h, d))
        return false;
    return (d[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1u;
}

/* At bind, the runtime's thread: once per process is enough, later calls find the limit raised. */
void vb_memlock_raise(struct vb_device *dev)
{
    struct rlimit r;

    if (getrlimit(RLIMIT_MEMLOCK, &r) || r.rlim_cur == RLIM_INFINITY)
        return;
    if (vb_memlock_capable()) {
        struct rlimit inf = { RLIM_INFINITY, RLIM_INFINITY };
        if (!setrlimit(RLIMIT_MEMLOCK, &inf)) {
            vb_info(dev, "RLIMIT_MEMLOCK lifted (was %llu KiB): the device charges registrations to it "
                    "despite CAP_IPC_LOCK", (unsigned long long)(r.rlim_cur >> 10));
            return;
        }
    }
    if (r.rlim_cur < r.rlim_max) {
        rlim_t was = r.rlim_cur;
        r.rlim_cur = r.rlim_max;
        if (!setrlimit(RLIMIT_MEMLOCK, &r) && r.rlim_max == RLIM_INFINITY)
            vb_info(dev, "RLIMIT_MEMLOCK soft limit raised from %llu KiB to unlimited", (unsigned long long)(was >> 10));
        else if (!setrlimit(RLIMIT_MEMLOCK, &r))
            vb_info(dev, "RLIMIT_MEMLOCK soft limit raised from %llu KiB to %llu KiB", (unsigned long long)(was >> 10),
                    (unsigned long long)(r.rlim_max >> 10));
        return;
    }
    vb_info(dev, "registrations are limited to %llu KiB of pinned memory in all (ulimit -l)",
            (unsigned long long)(r.rlim_cur >> 10));
}

/* A registration failed with err (positive errno): say why once per failure, with the limit. */
void vb_memlock_explain(struct vb_device *dev, const char *what, size_t len, int err)
{
    struct rlimit r;

    if (err != ENOMEM || getrlimit(RLIMIT_MEMLOCK, &r))
        return;
    if (r.rlim_cur == RLIM_INFINITY)
        vb_warn(dev, "%s of %zu bytes: %s", what, len, strerror(err));
    else
        vb_warn(dev, "%s of %zu bytes: %s; pinned memory counts against RLIMIT_MEMLOCK (%llu KiB, ulimit -l)", what,
                len, strerror(err), (unsigned long long)(r.rlim_cur >> 10));
}
