/* ping.c - ndkping's plain mode: a Send/Receive ping-pong with per-ping round-trip times and a
 * min/avg/max/mdev summary, like ping; the server echoes every message from its own slot. */
#define _GNU_SOURCE
#include <ctype.h>
#include <endian.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ndk_pattern.h"
#include "ndk_sync_time.h"
#include "ndk_tool.h"
#include "ndkping.h"

#define PING_MAGIC   "NDKPING"
#define PING_VERSION 1

/* Connect private data of the plain ping mode (big-endian fields). */
struct ping_hello {
    char     magic[8];
    uint32_t version;
    uint32_t size;
    uint32_t count;
    uint32_t flags;
};

int ping_client(ndk_rt *rt)
{
    char why[256] = "", dst_s[NDK_TOOL_ADDR_STRLEN], src_s[NDK_TOOL_ADDR_STRLEN];
    SOCKADDR_INET dst, local, src;
    ndk_tool_adapter ad;
    struct session s;
    NTSTATUS st;

    memset(&s, 0, sizeof s);
    if (ndk_tool_addr_parse(ping_opt.cli.addr, ping_opt.port, &dst, why, sizeof why) != 0 ||
        dst.si_family == AF_UNSPEC) {
        ndk_tool_err("bad destination %s", dst.si_family == AF_UNSPEC && !why[0] ? "(no address)" : why);
        return 2;
    }
    if (ping_opt.cli.local && ndk_tool_addr_parse_ip(ping_opt.cli.local, &local) != 0) {
        ndk_tool_err("bad local address '%s'", ping_opt.cli.local);
        return 2;
    }
    ndk_tool_addr_str(&dst, true, dst_s, sizeof dst_s);
    if (ndk_tool_adapter_client(rt, ping_opt.cli.local ? &local : NULL, &dst, ping_opt.cli.provider, 0, &ad, &src) !=
        STATUS_SUCCESS)
        return 1;
    if (ping_opt.size > ad.info.MaxTransferLength) {
        ndk_tool_err("payload size %u exceeds the adapter's MaxTransferLength %u", ping_opt.size, ad.info.MaxTransferLength);
        ndk_tool_adapter_close(&ad);
        return 2;
    }
    snprintf(s.t.where, sizeof s.t.where, "%s", dst_s);
    /* Slot 0 receives the reply; the area holds the request. */
    ndk_tool_session_cfg cfg = { .rq_depth = 2, .iq_depth = 2, .poll = ping_opt.cli.poll, .nrecv = 1, .rbuf = ping_opt.size,
                                 .area_len = ping_opt.size };
    st = ndk_tool_session_open(&s.t, &ad, &cfg);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up the queue pair on %s failed: %s", ad.ifname, ndk_tool_status(st));
        ndk_tool_session_close(&s.t);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    uint8_t *tx = ndk_tool_session_area(&s.t), *rx = ndk_tool_session_slot(&s.t, 0);
    st = session_post_slot(&s, 0);
    if (st != STATUS_SUCCESS)
        session_fail(&s, "posting a receive failed: %s", ndk_tool_status(st));

    struct ping_hello h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PING_MAGIC, sizeof PING_MAGIC);
    h.version = htobe32(PING_VERSION);
    h.size = htobe32(ping_opt.size);
    h.count = htobe32((uint32_t)ping_opt.count);
    uint64_t t_conn = ndk_sync_time_now_ns();
    st = ndk_tool_conn_connect(&s.t.conn, &src, &dst, 1, 1, &h, sizeof h, NDK_TOOL_CONN_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("connect to %s failed: %s", dst_s, ndk_tool_status(st));
        ndk_tool_session_close(&s.t);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    double conn_ms = (double)(ndk_sync_time_now_ns() - t_conn) / 1e6;
    if (s.t.conn.peer_data_len < sizeof h || memcmp(s.t.conn.peer_data, PING_MAGIC, sizeof PING_MAGIC) != 0)
        session_fail(&s, "%s accepted but is not an ndkping server (no ndkping reply in the private data)", dst_s);

    if (!ping_opt.quiet)
        printf("NDKPING %s from %s via %s (%s, adapter %u): %u data bytes, connected in %.3f ms\n", dst_s,
               ndk_tool_addr_str(&s.t.conn.local, true, src_s, sizeof src_s), ad.ifname, ad.provider, ad.id, ping_opt.size,
               conn_ms);
    fflush(stdout);

    uint64_t n = 0, sum = 0, min = UINT64_MAX, max = 0;
    double sumsq = 0;
    uint64_t t_start = ndk_sync_time_now_ns();
    for (uint64_t seq = 1; ping_opt.count == 0 || seq <= ping_opt.count; seq++) {
        if (ndk_tool_stopped())
            break;
        ndk_pattern_fill(tx, ping_opt.size, seq, 0);
        uint64_t t0 = ndk_sync_time_now_ns();
        st = session_send(&s, s.t.off_area, ping_opt.size);
        if (st != STATUS_SUCCESS)
            session_fail(&s, "%s: posting Send seq=%llu failed: %s", dst_s, (unsigned long long)seq, ndk_tool_status(st));
        session_wait(&s, TAG_RECV0, (unsigned)seq, session_wait_ms(), "reply");
        uint64_t rtt = ndk_sync_time_now_ns() - t0;
        session_wait(&s, TAG_SEND, (unsigned)seq, session_wait_ms(), "Send completion");
        ULONG got;
        session_take(&s, &got);
        if (got != ping_opt.size)
            session_fail(&s, "%s: reply seq=%llu has %u bytes, expected %u", dst_s, (unsigned long long)seq, got,
                         ping_opt.size);
        size_t at = ndk_pattern_check(rx, ping_opt.size, seq, 0);
        if (at != ping_opt.size)
            session_fail(&s, "%s: reply seq=%llu differs from the request at byte %zu", dst_s, (unsigned long long)seq,
                         at);
        memset(rx, 0, ping_opt.size);
        st = session_post_slot(&s, 0);
        if (st != STATUS_SUCCESS)
            session_fail(&s, "posting a receive failed: %s", ndk_tool_status(st));
        n++;
        sum += rtt;
        sumsq += (double)rtt * (double)rtt;
        if (rtt < min)
            min = rtt;
        if (rtt > max)
            max = rtt;
        if (!ping_opt.quiet) {
            printf("%u bytes from %s: seq=%llu time=%.3f ms\n", ping_opt.size, dst_s, (unsigned long long)seq,
                   (double)rtt / 1e6);
            fflush(stdout);
        }
        if (ping_opt.count && seq == ping_opt.count)
            break;
        /* Sleep the interval, waking for Ctrl-C. */
        uint64_t until = ndk_sync_time_now_ns() + (uint64_t)(ping_opt.interval * 1e9);
        while (!ndk_tool_stopped()) {
            uint64_t now = ndk_sync_time_now_ns();
            if (now >= until)
                break;
            uint64_t d = until - now > 50000000u ? 50000000u : until - now;
            struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
            nanosleep(&ts, NULL);
        }
    }
    uint64_t elapsed = ndk_sync_time_now_ns() - t_start;
    ndk_tool_session_close(&s.t);
    ndk_tool_adapter_close(&ad);

    printf("--- %s ndkping statistics ---\n", dst_s);
    printf("%llu pings transmitted, %llu received, 0%% loss, time %llums\n", (unsigned long long)n,
           (unsigned long long)n, (unsigned long long)(elapsed / 1000000u));
    if (n) {
        double avg = (double)sum / (double)n;
        double var = sumsq / (double)n - avg * avg;
        printf("rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms\n", (double)min / 1e6, avg / 1e6, (double)max / 1e6,
               sqrt(var > 0 ? var : 0) / 1e6);
    }
    fflush(stdout);
    if (n == 0) {
        ndk_tool_err("%s: no ping completed", dst_s);
        return 1;
    }
    return 0;
}

/* Serves one plain-ping connection: echo every message back. */
int ping_serve_one(NDK_CONNECTOR *incoming, ndk_tool_adapter *ad)
{
    struct ping_hello h;
    ULONG ird = 0, ord = 0, len = sizeof h;
    struct session s;
    char peer[NDK_TOOL_ADDR_STRLEN];
    NTSTATUS st;

    memset(&s, 0, sizeof s);
    memset(&h, 0, sizeof h);
    st = ndk_tool_conn_data(incoming, &ird, &ord, &h, &len);
    uint32_t size = be32toh(h.size);
    if (st != STATUS_SUCCESS || len < sizeof h || memcmp(h.magic, PING_MAGIC, sizeof PING_MAGIC) != 0 ||
        size == 0 || size > PING_MAX_SIZE || size > ad->info.MaxTransferLength) {
        ndk_tool_err("rejecting a connection that is not a valid ndkping request");
        ndk_tool_conn_reject(incoming, NULL, 0);
        return 1;
    }
    /* Spare slots: a ping may land before the previous echo's completion was reaped. */
    ndk_tool_session_cfg cfg = { .iq_depth = PING_SLOTS, .poll = ping_opt.cli.poll, .nrecv = PING_SLOTS, .rbuf = size };
    st = ndk_tool_session_open(&s.t, ad, &cfg);
    for (int k = 0; st == STATUS_SUCCESS && k < PING_SLOTS; k++)
        st = session_post_slot(&s, k);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up a queue pair failed: %s", ndk_tool_status(st));
        ndk_tool_conn_reject(incoming, NULL, 0);
        ndk_tool_session_close(&s.t);
        return 1;
    }
    struct ping_hello reply = h;
    reply.flags = 0;
    if (session_accept(&s, incoming, &reply, sizeof reply) != 0)
        return 1;
    snprintf(peer, sizeof peer, "%s", s.t.where);
    if (!ping_opt.quiet) {
        printf("connection from %s on %s: %u-byte pings\n", peer, ad->ifname, size);
        fflush(stdout);
    }
    unsigned echoed = 0, sends_posted = 0;
    int rc = 0;
    int pending_slot[PING_SLOTS];       /* slots whose echo Send is in flight, in order */
    for (;;) {
        int failed;
        /* A client that never sends its first ping does not hold the server. */
        st = session_pump(&s, s.done[TAG_RECV0] ? NDK_TOOL_INFINITE : PING_IDLE_MS, &failed);
        if (st == STATUS_IO_TIMEOUT && !failed) {
            ndk_tool_err("%s: closing the connection: the client sent nothing within %d s", peer, PING_IDLE_MS / 1000);
            rc = 1;
            break;
        }
        if (st != STATUS_SUCCESS) {
            if (st == STATUS_CONNECTION_DISCONNECTED || (st == STATUS_CANCELLED && failed) ||
                (failed && ndk_tool_conn_disconnected(&s.t.conn)))
                break;                     /* the client is done */
            if (st == STATUS_CANCELLED) {
                rc = 1;
                break;                     /* we are interrupted */
            }
            ndk_tool_err("%s: %s%s%s", peer, failed ? session_tag_name[failed] : "waiting for completions",
                         failed ? " completed with " : ": ", ndk_tool_status(st));
            rc = 1;
            break;
        }
        /* Echo every new receive back from its own slot. */
        while (s.rq_head != s.rq_tail) {
            ULONG got;
            int slot = session_take(&s, &got);
            st = session_send(&s, (size_t)slot * size, got);
            if (st != STATUS_SUCCESS) {
                ndk_tool_err("%s: posting the echo failed: %s", peer, ndk_tool_status(st));
                rc = 1;
                goto out;
            }
            pending_slot[sends_posted++ % PING_SLOTS] = slot;
        }
        /* A finished echo gives its slot back to the receive queue. */
        while (echoed < s.done[TAG_SEND]) {
            int slot = pending_slot[echoed++ % PING_SLOTS];
            st = session_post_slot(&s, slot);
            if (st != STATUS_SUCCESS) {
                ndk_tool_err("%s: posting a receive failed: %s", peer, ndk_tool_status(st));
                rc = 1;
                goto out;
            }
        }
    }
out:
    if (!ping_opt.quiet) {
        printf("%s: %u pings echoed\n", peer, echoed);
        fflush(stdout);
    }
    ndk_tool_session_close(&s.t);
    return rc;
}

