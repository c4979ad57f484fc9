/*
 * sysio.h - the socket and wait calls of the data path and the progress thread, made as plain
 * system calls instead of through the C library's wrappers.
 *
 * glibc's recv, send, recvmsg, sendmsg and epoll_wait are cancellation points: each one turns
 * asynchronous cancellation on and off around its system call, some 30 of the 60 instructions
 * it costs (two to seven such calls make a small message's round trip, docs/performance.md).
 * The engines make these calls holding rx_owned or tx_owned, where a consumer thread cancelled
 * inside one would leave the engine locked for good, so they must not be cancellation points
 * in the first place; and nothing in an NDK consumer is ever cancelled (kernel code has no such
 * thing).
 *
 * Sanitizer builds keep the library calls, whose interceptors the sanitizers need: TSan's are
 * how it sees a descriptor handed from one thread to another (epoll_ctl before epoll_wait, a
 * socket's reads moving between the progress thread and a poller), ASan's check that what a
 * read wrote lies inside the buffers the RX engine laid out (fuzz_rx runs under it). IW_TSAN
 * tells TSan builds apart; the data path's wire sync (datapath.h) uses it too.
 *
 * Includes only system headers (sysio.c holds iw_sys_send). Every function: any thread, no
 * lock needed, never blocks unless the caller's arguments ask it to (epoll_wait's timeout);
 * errno as the library call would set it.
 */
#ifndef IWARP_SYSIO_H
#define IWARP_SYSIO_H

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define IW_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IW_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define IW_SYSIO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IW_SYSIO_ASAN 1
#endif
#endif

#if !defined(IW_TSAN) && !defined(IW_SYSIO_ASAN) && defined(SYS_recvfrom) && defined(SYS_sendto) && \
    defined(SYS_recvmsg) && defined(SYS_sendmsg) && defined(SYS_epoll_pwait)
#define IW_SYSIO_RAW 1
#endif

static inline ssize_t iw_sys_recv(int fd, void *buf, size_t len, int flags)
{
#ifdef IW_SYSIO_RAW
    return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
#else
    return recv(fd, buf, len, flags);
#endif
}

static inline ssize_t iw_sys_recvmsg(int fd, struct msghdr *m, int flags)
{
#ifdef IW_SYSIO_RAW
    return syscall(SYS_recvmsg, fd, m, flags);
#else
    return recvmsg(fd, m, flags);
#endif
}

/* Out of line and weak (sysio.c): tests/datapath/test_dp_txlean.c replaces it with its own, to
 * force short writes and EAGAIN on the TX engine's sends. */
ssize_t iw_sys_send(int fd, const void *buf, size_t len, int flags);

static inline ssize_t iw_sys_sendmsg(int fd, const struct msghdr *m, int flags)
{
#ifdef IW_SYSIO_RAW
    return syscall(SYS_sendmsg, fd, m, flags);
#else
    return sendmsg(fd, m, flags);
#endif
}

/* epoll_pwait without a signal mask is epoll_wait (the only form some architectures have). */
static inline int iw_sys_epoll_wait(int ep, struct epoll_event *evs, int max, int timeout)
{
#ifdef IW_SYSIO_RAW
    return (int)syscall(SYS_epoll_pwait, ep, evs, max, timeout, NULL, 0);
#else
    return epoll_wait(ep, evs, max, timeout);
#endif
}

#endif
