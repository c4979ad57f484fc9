/* session.c - ndkping's session: an ndk_tool_session with its completions booked by tag and its
 * receives in order (ndkping.h). Main thread. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ndk_sync_time.h"
#include "ndk_tool.h"
#include "ndkping.h"

const char *const session_tag_name[TAG_COUNT] = { "?", "Send", "RDMA Read", "RDMA Write", "Receive" };

static ULONG tag_of(const NDK_RESULT *r)
{
    uintptr_t tag = (uintptr_t)r->RequestContext;
    if (tag >= TAG_RECV0 && tag < TAG_RECV0 + PING_SLOTS)
        return TAG_RECV0;
    return tag > 0 && tag < TAG_COUNT ? (ULONG)tag : 0;
}

static unsigned sum(const unsigned *v)
{
    unsigned n = 0;
    for (int t = 1; t < TAG_COUNT; t++)
        n += v[t];
    return n;
}

/* Main thread. Flushes (NdkFlush completes what is queued, §2.9) and polls until every posted
 * request has completed, at most 5 s. */
static void session_drain(struct session *s)
{
    NDK_QP *qp = s->t.conn.qp;
    qp->Dispatch->NdkFlush(qp);
    uint64_t end = ndk_sync_time_now_ns() + 5000000000ull;
    while (sum(s->completed) < sum(s->posted) && ndk_sync_time_now_ns() < end) {
        NDK_RESULT r[16];
        NTSTATUS st;
        ULONG n = ndk_tool_cq_wait(s->t.conn.cq, r, 16, 100, &st);
        for (ULONG i = 0; i < n; i++)
            s->completed[tag_of(&r[i])]++;
    }
}

void session_fail(struct session *s, const char *fmt, ...)
{
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ndk_tool_err("%s", line);
    if (s && s->who && s->t.conn.qp && s->t.conn.established) {
        session_drain(s);
        unsigned twice = 0;
        for (int t = 1; t < TAG_COUNT; t++)
            twice += s->completed[t] > s->posted[t] ? s->completed[t] - s->posted[t] : 0;
        /* The provider tells of a connection it lost on its own thread, maybe only now. */
        uint64_t until = ndk_sync_time_now_ns() + 2000000000ull;
        while (!__atomic_load_n(&s->t.conn.cq->disconnected, __ATOMIC_ACQUIRE) && ndk_sync_time_now_ns() < until) {
            struct timespec ts = { 0, 10000000 };
            nanosleep(&ts, NULL);
        }
        int disc = __atomic_load_n(&s->t.conn.cq->disconnected, __ATOMIC_ACQUIRE);
        unsigned posted = sum(s->posted), completed = sum(s->completed);
        ndk_tool_session_close(&s->t);
        if (s->ad)
            ndk_tool_adapter_close(s->ad);
        printf("%s: connection lost at ping %u: %s; disconnect events %d; requests posted %u, completed %u "
               "(twice %u); closed\n",
               s->who, s->ping, line, disc, posted, completed, twice);
    }
    fflush(stdout);
    _exit(1);
}

/* One batch, booked whole: a completion behind a failed one in the batch is counted too.
 * Work requests of the two queues complete in no mutual order: when the peer leaves, a posted
 * receive may be flushed before a Send it already took completes. So a failed receive is kept
 * in s->recv_fail for session_pump, and a wait for another request is not ended by it; the
 * first other failure is returned. */
static NTSTATUS pump(struct session *s, int timeout_ms, int *failed_tag)
{
    NDK_RESULT r[16];
    NTSTATUS st, fail = STATUS_SUCCESS;
    ULONG n = ndk_tool_cq_wait(s->t.conn.cq, r, 16, timeout_ms, &st);
    *failed_tag = 0;
    if (!n)
        return st;
    for (ULONG i = 0; i < n; i++) {
        int tag = (int)tag_of(&r[i]);
        int slot = tag == TAG_RECV0 ? (int)((uintptr_t)r[i].RequestContext - TAG_RECV0) : 0;
        s->completed[tag]++;
        if (r[i].Status != STATUS_SUCCESS) {
            if (tag == TAG_RECV0) {
                if (s->recv_fail == STATUS_SUCCESS)
                    s->recv_fail = r[i].Status;
            } else if (fail == STATUS_SUCCESS) {
                *failed_tag = tag;
                fail = r[i].Status;
            }
            continue;
        }
        s->done[tag]++;
        if (tag == TAG_RECV0) {
            unsigned k = s->rq_tail++ % 64;
            s->rq_slot[k] = slot;
            s->rq_bytes[k] = r[i].BytesTransferred;
        }
    }
    return fail;
}

NTSTATUS session_pump(struct session *s, int timeout_ms, int *failed_tag)
{
    NTSTATUS st = STATUS_SUCCESS;

    *failed_tag = 0;
    if (s->recv_fail == STATUS_SUCCESS)
        st = pump(s, timeout_ms, failed_tag);
    if (st == STATUS_SUCCESS && s->recv_fail != STATUS_SUCCESS) {
        st = s->recv_fail;
        s->recv_fail = STATUS_SUCCESS;
        *failed_tag = TAG_RECV0;
    }
    return st;
}

NTSTATUS session_post_slot(struct session *s, int slot)
{
    NTSTATUS st = ndk_tool_session_post_slot(&s->t, (uint32_t)slot, (PVOID)(uintptr_t)(TAG_RECV0 + slot));
    s->posted[TAG_RECV0] += st == STATUS_SUCCESS;
    return st;
}

NTSTATUS session_send(struct session *s, size_t off, ULONG len)
{
    NTSTATUS st = ndk_tool_session_send(&s->t, (PVOID)(uintptr_t)TAG_SEND, off, len, 0);
    s->posted[TAG_SEND] += st == STATUS_SUCCESS;
    return st;
}

int session_take(struct session *s, ULONG *bytes)
{
    unsigned k = s->rq_head++ % 64;
    *bytes = s->rq_bytes[k];
    return s->rq_slot[k];
}

void session_wait(struct session *s, int tag, unsigned want, int timeout_ms, const char *what)
{
    while (s->done[tag] < want) {
        int failed;
        NTSTATUS st = tag == TAG_RECV0 ? session_pump(s, timeout_ms, &failed) : pump(s, timeout_ms, &failed);
        if (st == STATUS_SUCCESS)
            continue;
        if (failed)
            session_fail(s, "%s: %s completed with %s", s->t.where, session_tag_name[failed], ndk_tool_status(st));
        if (st == STATUS_IO_TIMEOUT)
            session_fail(s, "%s: no %s within %d ms", s->t.where, what, timeout_ms);
        if (st == STATUS_CONNECTION_DISCONNECTED)
            session_fail(s, "%s: peer disconnected while waiting for %s", s->t.where, what);
        if (st == STATUS_CANCELLED)
            session_fail(s, "interrupted");
        session_fail(s, "%s: waiting for %s: %s", s->t.where, what, ndk_tool_status(st));
    }
}

int session_wait_ms(void) { return (int)(ping_opt.wait_s * 1000.0); }

int session_connect(struct session *s, ndk_tool_adapter *ad, const SOCKADDR_INET *src, const SOCKADDR_INET *dst,
                    const void *pdata, ULONG pdata_len)
{
    char dst_s[NDK_TOOL_ADDR_STRLEN];
    NTSTATUS st = ndk_tool_conn_connect(&s->t.conn, src, dst, 1, 1, pdata, pdata_len, NDK_TOOL_CONN_TIMEOUT_MS);
    if (st == STATUS_SUCCESS)
        return 0;
    ndk_tool_err("connect to %s failed: %s", ndk_tool_addr_str(dst, true, dst_s, sizeof dst_s), ndk_tool_status(st));
    ndk_tool_session_close(&s->t);
    ndk_tool_adapter_close(ad);
    return 1;
}

int session_listen(ndk_rt *rt, const char *ip, int family, ndk_tool_server **srv)
{
    char why[256];
    SOCKADDR_INET addr;
    memset(&addr, 0, sizeof addr);
    addr.si_family = (ADDRESS_FAMILY)family;
    if (ip && ndk_tool_addr_parse_ip(ip, &addr) != 0) {
        ndk_tool_err("bad address '%s'", ip);
        return 2;
    }
    ndk_tool_addr_set_port(&addr, ping_opt.port);
    if (ndk_tool_server_start(rt, &addr, ping_opt.cli.provider, 0, srv, why, sizeof why) != STATUS_SUCCESS) {
        ndk_tool_err("%s", why);
        return 1;
    }
    return 0;
}

int session_accept(struct session *s, NDK_CONNECTOR *incoming, const void *pdata, ULONG pdata_len)
{
    NTSTATUS st = ndk_tool_conn_accept(&s->t.conn, incoming, 1, 1, pdata, pdata_len, NDK_TOOL_CONN_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("accept failed: %s", ndk_tool_status(st));
        ndk_tool_session_close(&s->t);
        return 1;
    }
    ndk_tool_addr_str(&s->t.conn.peer, true, s->t.where, sizeof s->t.where);
    return 0;
}
