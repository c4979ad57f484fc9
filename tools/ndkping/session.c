/* session.c - ndkping's session: an ndk_tool_session with its completions booked by tag and its
 * receives in order (ndkping.h). Main thread. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "ndkping.h"

const char *const session_tag_name[TAG_COUNT] = { "?", "Send", "RDMA Read", "RDMA Write", "Receive" };

void session_fail(struct session *s, const char *fmt, ...)
{
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ndk_tool_err("%s", line);
    (void)s;
    fflush(stdout);
    _exit(1);
}

NTSTATUS session_pump(struct session *s, int timeout_ms, int *failed_tag)
{
    NDK_RESULT r[16];
    NTSTATUS st;
    ULONG n = ndk_tool_cq_wait(s->t.conn.cq, r, 16, timeout_ms, &st);
    *failed_tag = 0;
    if (!n)
        return st;
    for (ULONG i = 0; i < n; i++) {
        int tag = (int)(uintptr_t)r[i].RequestContext, slot = 0;
        if (tag >= TAG_RECV0 && tag < TAG_RECV0 + PING_SLOTS) {
            slot = tag - TAG_RECV0;
            tag = TAG_RECV0;
        } else if (tag <= 0 || tag >= TAG_COUNT) {
            tag = 0;
        }
        if (r[i].Status != STATUS_SUCCESS) {
            *failed_tag = tag;
            return r[i].Status;
        }
        s->done[tag]++;
        if (tag == TAG_RECV0) {
            unsigned k = s->rq_tail++ % 64;
            s->rq_slot[k] = slot;
            s->rq_bytes[k] = r[i].BytesTransferred;
        }
    }
    return STATUS_SUCCESS;
}

NTSTATUS session_post_slot(struct session *s, int slot)
{
    return ndk_tool_session_post_slot(&s->t, (uint32_t)slot, (PVOID)(uintptr_t)(TAG_RECV0 + slot));
}

NTSTATUS session_send(struct session *s, size_t off, ULONG len)
{
    return ndk_tool_session_send(&s->t, (PVOID)(uintptr_t)TAG_SEND, off, len, 0);
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
        NTSTATUS st = session_pump(s, timeout_ms, &failed);
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
