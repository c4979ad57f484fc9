/* perf.c - ndkperf's test connections (a session with a control ring and a data area),
 * control messages, payload patterns and output (ndkperf.h). */
#define _GNU_SOURCE
#include <endian.h>
#include <stdarg.h>
#include <string.h>

#include "ndk_pattern.h"
#include "ndk_sync_time.h"
#include "ndkperf.h"

const char *const perf_op_name[] = { "?", "write", "read", "send" };
const char *const perf_op_title[] = { "?", "RDMA_Write", "RDMA_Read", "Send" };

void perf_out(const char *fmt, ...)
{
    va_list ap;
    if (!perf_opt.cli.json) {
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
    }
    if (perf_log) {
        va_start(ap, fmt);
        vfprintf(perf_log, fmt, ap);
        va_end(ap);
    }
}

/* ---- payload patterns ---- */

void perf_fill(uint8_t *p, uint64_t len, uint64_t seed)
{
    ndk_pattern_fill(p, len, seed, 0);
    if (len)
        p[0] |= 0x80;
}

bool perf_check(const uint8_t *p, uint64_t len, uint64_t seed, uint64_t *bad_at)
{
    if (len && p[0] != (ndk_pattern_byte(seed, 0) | 0x80)) {
        *bad_at = 0;
        return false;
    }
    size_t at = len ? ndk_pattern_check(p + 1, len - 1, seed, 1) + 1 : 0;
    if (at == len)
        return true;
    *bad_at = at;
    return false;
}

#define PERF_READ_SEED 0xABCDEFull

void perf_read_fill(uint8_t *p, uint64_t off, uint64_t len) { ndk_pattern_fill(p, len, PERF_READ_SEED, off); }

bool perf_read_check(const uint8_t *p, uint64_t off, uint64_t len, uint64_t *bad_at)
{
    size_t at = ndk_pattern_check(p, len, PERF_READ_SEED, off);
    if (at == len)
        return true;
    *bad_at = at;
    return false;
}

void perf_last_byte_fill(uint8_t *p, uint64_t len, uint64_t seq)
{
    perf_fill(p, len, seq);
    p[len - 1] = (uint8_t)seq;
}

/* The polled buffer is written by the adapter the way a NIC's DMA writes memory: no lock or
 * atomic of ours orders it with these reads (in-order placement does), so ThreadSanitizer
 * would call every read a race; these two functions are the only readers and it skips them. */
__attribute__((no_sanitize("thread"))) uint8_t perf_peek(const volatile uint8_t *p)
{
    return *p;
}

__attribute__((no_sanitize("thread"))) static void perf_snapshot(uint8_t *dst, const volatile uint8_t *p, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        dst[i] = p[i];
}

bool perf_last_byte_check(const volatile uint8_t *p, uint64_t len, uint64_t seq, uint8_t *scratch)
{
    uint64_t deadline = 0, bad;
    for (;;) {
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        perf_snapshot(scratch, p, len);
        if (scratch[len - 1] == (uint8_t)seq && (len == 1 || perf_check(scratch, len - 1, seq, &bad)))
            return true;
        uint64_t now = ndk_sync_time_now_ns();
        if (!deadline)
            deadline = now + 100000000u;
        else if (now >= deadline)
            return false;
    }
}

bool perf_is_ctl(const uint8_t *p, ULONG n)
{
    return n == CTL_SIZE && memcmp(p, CTL_MAGIC, sizeof CTL_MAGIC) == 0;
}

/* ---- a test connection ---- */

NTSTATUS perf_conn_open(struct perf_conn *pc, ndk_tool_adapter *ad, uint32_t nrecv, uint32_t rbuf, ULONG iq_depth,
                        ULONG inline_size, uint64_t data_len)
{
    ndk_tool_session_cfg cfg = {
        .iq_depth = iq_depth, .inline_size = inline_size, .poll = perf_opt.cli.poll, .nrecv = nrecv, .rbuf = rbuf,
        .area_len = PERF_CTL_AREA + data_len,
        .mr_flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
                    NDK_MR_FLAG_RDMA_READ_SINK,
    };
    _Static_assert(CTL_RING * CTL_SIZE <= PERF_CTL_AREA, "the control ring fits before the data");
    pc->data_len = data_len;
    NTSTATUS st = ndk_tool_session_open(&pc->s, ad, &cfg);
    pc->off_ctl = pc->s.off_area;
    pc->off_data = pc->s.off_area + PERF_CTL_AREA;
    return st;
}

NTSTATUS perf_post_recv(struct perf_conn *pc, uint32_t k)
{
    return ndk_tool_session_post_slot(&pc->s, k, TAG(K_RECV, k));
}

void perf_fail(struct perf_conn *pc, const char *fmt, ...)
{
    if (pc->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pc->error, sizeof pc->error, fmt, ap);
    va_end(ap);
}

void perf_note(struct perf_conn *pc, const char *fmt, ...)
{
    if (!perf_opt.cli.verbose || pc->note[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pc->note, sizeof pc->note, fmt, ap);
    va_end(ap);
}

const char *perf_kind_name(int kind, enum perf_op op)
{
    switch (kind) {
    case K_DATA: return op == OP_WRITE ? "RDMA Write" : op == OP_READ ? "RDMA Read" : "Send";
    case K_RECV: return "Receive";
    case K_CTL: return "control Send";
    case K_SIGNAL: return "signal Send";
    case K_ECHO: return "echo Send";
    case K_WB: return "RDMA Write back";
    default: return "request";
    }
}

NTSTATUS perf_send_ctl(struct perf_conn *pc, uint32_t type, uint32_t status, uint64_t a, uint64_t b, uint64_t c,
                       uint64_t d)
{
    struct perf_ctl m;
    memset(&m, 0, sizeof m);
    memcpy(m.magic, CTL_MAGIC, sizeof CTL_MAGIC);
    m.type = htobe32(type);
    m.status = htobe32(status);
    m.a = htobe64(a);
    m.b = htobe64(b);
    m.c = htobe64(c);
    m.d = htobe64(d);
    size_t off = pc->off_ctl + (size_t)(pc->ctl_sent % CTL_RING) * CTL_SIZE;
    memcpy(pc->s.mem.buf + off, &m, sizeof m);
    NTSTATUS st = ndk_tool_session_send(&pc->s, TAG(K_CTL, pc->ctl_sent), off, CTL_SIZE, 0);
    if (st == STATUS_SUCCESS)
        pc->ctl_sent++;
    return st;
}
