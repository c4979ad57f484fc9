#define _GNU_SOURCE
#include "testlib.h"

#include "ndk_pattern.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void ndk_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(NULL);
    _exit(1);
}

void ndk_test_skip(const char *fmt, ...)
{
    va_list ap;
    printf("SKIP: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(NULL);
    exit(NDK_TEST_SKIP_CODE);
}

pid_t ndk_test_spawn(int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK_MSG(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* A child that outlives its parent must not linger: die with it. */
        int rc = fn(arg);
        fflush(NULL);
        _exit(rc);
    }
    return pid;
}

uint64_t ndk_test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ndk_test_wait_ok(pid_t pid, int timeout_ms, const char *what)
{
    uint64_t deadline = ndk_test_now_ms() + (uint64_t)timeout_ms;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        CHECK_MSG(r == 0, "waitpid(%s): %s", what, strerror(errno));
        if (ndk_test_now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            ndk_test_fail(__FILE__, __LINE__, "%s: timed out after %d ms", what, timeout_ms);
        }
        usleep(2000);
    }
    if (WIFSIGNALED(status))
        ndk_test_fail(__FILE__, __LINE__, "%s: killed by signal %d", what, WTERMSIG(status));
    if (WEXITSTATUS(status) != 0)
        ndk_test_fail(__FILE__, __LINE__, "%s: exit status %d", what, WEXITSTATUS(status));
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

void ndk_test_enter_netns(void)
{
    if (unshare(CLONE_NEWNET) != 0) {
        /* Unprivileged: a user namespace grants CAP_NET_ADMIN inside, once we map ourselves to
         * root there (without the map, `ip` would run as nobody without capabilities). */
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
            ndk_test_skip("cannot create a network namespace (unshare: %s); run as root", strerror(errno));
        char map[64];
        snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
        int rc = write_file("/proc/self/uid_map", map);
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
        rc |= write_file("/proc/self/gid_map", map);
        if (rc != 0)
            ndk_test_skip("cannot map the test user into its user namespace (%s); run as root", strerror(errno));
    }
    if (system("ip link set lo up") != 0)
        ndk_test_skip("the 'ip' command (iproute2) is not available in the test namespace");
}

void ndk_test_sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "command failed (%d): %s", rc, cmd);
}

void ndk_test_fill(uint8_t *p, size_t n, uint32_t seed)
{
    ndk_pattern_fill(p, n, seed, 0);
}

bool ndk_test_check(const uint8_t *p, size_t n, uint32_t seed)
{
    size_t at = ndk_pattern_check(p, n, seed, 0);
    if (at == n)
        return true;
    fprintf(stderr, "byte %zu of %zu differs: %02x, expected %02x\n", at, n, p[at], ndk_pattern_byte(seed, at));
    return false;
}
