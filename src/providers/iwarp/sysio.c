/* sysio.c - the one call of sysio.h that is out of line: iw_sys_send, weak so that a test
 * linked with the provider's objects can replace it (sysio.h says why). */
#include "sysio.h"

__attribute__((weak)) ssize_t iw_sys_send(int fd, const void *buf, size_t len, int flags)
{
#ifdef IW_SYSIO_RAW
    return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
#else
    return send(fd, buf, len, flags);
#endif
}
