/* Shared helpers for OpenNDK tests: checks that abort the test process with a located message,
 * skips with a reason (exit 77, reported by ctest as skipped), and child-process helpers.
 * Every test is its own executable; ctest gives each a timeout. */
#ifndef NDK_TESTLIB_H
#define NDK_TESTLIB_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/types.h>

#define NDK_TEST_SKIP_CODE 77

void ndk_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
void ndk_test_skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#define CHECK(cond) do { if (!(cond)) ndk_test_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond); } while (0)
#define CHECK_MSG(cond, ...) do { if (!(cond)) ndk_test_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
    if (_a != _b) ndk_test_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s): %lld != %lld", #a, #b, _a, _b); } while (0)
/* NTSTATUS comparison printing hex, since status codes are read in hex. */
#define CHECK_STATUS(a, b) do { uint32_t _a = (uint32_t)(a), _b = (uint32_t)(b); \
    if (_a != _b) ndk_test_fail(__FILE__, __LINE__, "CHECK_STATUS(%s, %s): 0x%08x != 0x%08x", #a, #b, _a, _b); } while (0)

/* Runs fn(arg) in a forked child; returns the child's pid. */
pid_t ndk_test_spawn(int (*fn)(void *), void *arg);
/* Waits for pid; fails the test unless it exited with status 0 within timeout_ms. */
void ndk_test_wait_ok(pid_t pid, int timeout_ms, const char *what);
/* Moves the calling process into a fresh network namespace (needs root or user namespaces);
 * skips the test with a reason when that is impossible. Brings lo up. */
void ndk_test_enter_netns(void);
/* Runs a shell command (for `ip` in a private netns); fails the test when it exits non-zero. */
void ndk_test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Monotonic milliseconds. */
uint64_t ndk_test_now_ms(void);
/* The shared payload pattern (src/common/ndk_pattern.h) of stream seed from position 0, and its
 * check (which prints the first differing byte). */
void ndk_test_fill(uint8_t *p, size_t n, uint32_t seed);
bool ndk_test_check(const uint8_t *p, size_t n, uint32_t seed);

#endif
