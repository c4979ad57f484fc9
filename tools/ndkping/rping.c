/* rping.c - ndkping --rping: rdma-core rping's message layout and sequence (the client
 * advertises its buffer, the server RDMA-Reads it and RDMA-Writes it back), so it talks to Linux
 * rping. */
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

/* The advertisement rping sends: buffer address, rkey and size, big-endian. */
struct rping_info {
    uint64_t buf;
    uint32_t rkey;
    uint32_t size;
} __attribute__((packed));
_Static_assert(sizeof(struct rping_info) == 16, "rping advertisement is 16 bytes");

/* The text rping's client puts in its buffer for ping number `ping`. */
static void rping_fill(uint8_t *buf, uint32_t size, unsigned ping)
{
    unsigned char c = (unsigned char)(65 + ping % 58);
    int cc = snprintf((char *)buf, size, "rdma-ping-%u: ", ping);
    for (uint32_t i = cc < 0 ? 0 : (uint32_t)cc; i < size; i++) {
        buf[i] = c;
        if (++c > 122)
            c = 65;
    }
    buf[size - 1] = 0;
}

/* Layout of an rping session's area (two 16-byte receive slots come before it). */
enum { RP_SEND = 0, RP_DATA = 64 };

static int rping_setup(struct session *s, ndk_tool_adapter *ad, uint32_t data_len, bool client)
{
    /* Client: start_buf and rdma_buf; server: rdma_buf only. */
    ndk_tool_session_cfg cfg = {
        .iq_depth = 16, .poll = ping_opt.cli.poll, .nrecv = 2, .rbuf = 16,
        .area_len = RP_DATA + (size_t)data_len * (client ? 2 : 1),
        .mr_flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
                    NDK_MR_FLAG_RDMA_READ_SINK,
    };
    NTSTATUS st = ndk_tool_session_open(&s->t, ad, &cfg);
    for (int k = 0; st == STATUS_SUCCESS && k < 2; k++)
        st = session_post_slot(s, k);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up the queue pair on %s failed: %s", ad->ifname, ndk_tool_status(st));
        return -1;
    }
    return 0;
}

/* Takes the next receive (16-byte advertisement or go-ahead) and posts its slot again. */
static struct rping_info rping_take_recv(struct session *s)
{
    ULONG got;
    int slot = session_take(s, &got);
    struct rping_info info;
    if (got != sizeof info)
        session_fail(s, "%s: received %u bytes, expected a %zu-byte rping message", s->t.where, got, sizeof info);
    memcpy(&info, ndk_tool_session_slot(&s->t, (uint32_t)slot), sizeof info);
    NTSTATUS st = session_post_slot(s, slot);
    if (st != STATUS_SUCCESS)
        session_fail(s, "%s: posting a receive failed: %s", s->t.where, ndk_tool_status(st));
    info.buf = be64toh(info.buf);
    info.rkey = be32toh(info.rkey);
    info.size = be32toh(info.size);
    return info;
}

static void rping_send_info(struct session *s, unsigned *sends, const uint8_t *buf, uint32_t rkey, uint32_t size)
{
    struct rping_info info;
    info.buf = htobe64((uint64_t)(uintptr_t)buf);
    info.rkey = htobe32(rkey);
    info.size = htobe32(size);
    memcpy(ndk_tool_session_area(&s->t) + RP_SEND, &info, sizeof info);
    NTSTATUS st = session_send(s, s->t.off_area + RP_SEND, sizeof info);
    if (st != STATUS_SUCCESS)
        session_fail(s, "%s: posting Send failed: %s", s->t.where, ndk_tool_status(st));
    ++*sends;
    session_wait(s, TAG_SEND, *sends, session_wait_ms(), "Send completion");
}

int rping_client(ndk_rt *rt)
{
    char why[256], dst_s[NDK_TOOL_ADDR_STRLEN];
    SOCKADDR_INET dst, local, src;
    ndk_tool_adapter ad;
    struct session s;
    NTSTATUS st;

    memset(&s, 0, sizeof s);
    if (!ping_opt.cli.addr) {
        ndk_tool_err("--rping client needs the server address (-a)");
        return 2;
    }
    if (ndk_tool_addr_parse_ip(ping_opt.cli.addr, &dst) != 0) {
        ndk_tool_err("bad server address '%s'", ping_opt.cli.addr);
        return 2;
    }
    ndk_tool_addr_set_port(&dst, ping_opt.port);
    if (ping_opt.cli.local && ndk_tool_addr_parse_ip(ping_opt.cli.local, &local) != 0) {
        ndk_tool_err("bad source address '%s'", ping_opt.cli.local);
        return 2;
    }
    ndk_tool_addr_str(&dst, true, dst_s, sizeof dst_s);
    snprintf(s.t.where, sizeof s.t.where, "%s", dst_s);
    if (ndk_tool_adapter_client(rt, ping_opt.cli.local ? &local : NULL, &dst, ping_opt.cli.provider, 0, &ad, &src) !=
        STATUS_SUCCESS)
        return 1;
    if (rping_setup(&s, &ad, ping_opt.size, true) != 0) {
        ndk_tool_session_close(&s.t);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    /* rping asks for one read each way and sends no private data. */
    if (session_connect(&s, &ad, &src, &dst, NULL, 0) != 0)
        return 1;
    s.who = "ndkping --rping client";
    s.ad = &ad;
    if (ping_opt.cli.verbose > 1 || (!ping_opt.quiet && ping_opt.cli.verbose))
        fprintf(stderr, "%s: connected to %s from %s via %s (%s)\n", ndk_tool_progname(), dst_s,
                ndk_tool_addr_str(&s.t.conn.local, true, why, sizeof why), ad.ifname, ad.provider);
    uint8_t *start_buf = ndk_tool_session_area(&s.t) + RP_DATA, *rdma_buf = start_buf + ping_opt.size;
    unsigned sends = 0, recvs = 0, ping;
    uint64_t t0 = ndk_sync_time_now_ns();
    for (ping = 0; ping_opt.count == 0 || ping < ping_opt.count; ping++) {
        if (ndk_tool_stopped())
            break;
        s.ping = ping;
        rping_fill(start_buf, ping_opt.size, ping);
        memset(rdma_buf, 0, ping_opt.size);
        /* 1. Advertise the source; the server RDMA-Reads it and says go ahead. */
        rping_send_info(&s, &sends, start_buf, s.t.mem.rtoken, ping_opt.size);
        while (s.done[TAG_RECV0] < recvs + 1) {
            int failed;
            st = session_pump(&s, session_wait_ms(), &failed);
            if (st != STATUS_SUCCESS)
                session_fail(&s, "%s: ping %u: waiting for the server's go-ahead after its RDMA Read: %s%s%s", dst_s,
                          ping, failed ? session_tag_name[failed] : "", failed ? " completed with " : "", ndk_tool_status(st));
        }
        recvs++;
        rping_take_recv(&s);
        /* 2. Advertise the sink; the server RDMA-Writes the data back and says go ahead. */
        rping_send_info(&s, &sends, rdma_buf, s.t.mem.rtoken, ping_opt.size);
        while (s.done[TAG_RECV0] < recvs + 1) {
            int failed;
            st = session_pump(&s, session_wait_ms(), &failed);
            if (st != STATUS_SUCCESS)
                session_fail(&s, "%s: ping %u: waiting for the server's go-ahead after its RDMA Write: %s%s%s", dst_s,
                          ping, failed ? session_tag_name[failed] : "", failed ? " completed with " : "", ndk_tool_status(st));
        }
        recvs++;
        rping_take_recv(&s);
        if (memcmp(start_buf, rdma_buf, ping_opt.size) != 0) {
            uint32_t at = 0;
            while (at < ping_opt.size && start_buf[at] == rdma_buf[at])
                at++;
            session_fail(&s, "%s: data mismatch in ping %u at byte %u of %u", dst_s, ping, at, ping_opt.size);
        }
        if (ping_opt.cli.verbose)
            printf("ping data: %s\n", (const char *)rdma_buf);
    }
    double secs = (double)(ndk_sync_time_now_ns() - t0) / 1e9;
    ndk_tool_session_close(&s.t);
    ndk_tool_adapter_close(&ad);
    if (!ping_opt.quiet)
        printf("ndkping --rping client: %u pings of %u bytes with %s, data compared byte for byte: ok (%.3f s)\n",
               ping, ping_opt.size, dst_s, secs);
    fflush(stdout);
    return 0;
}

/* The rping server side on one accepted connection. Returns 0 when the client finished. */
int rping_serve_one(NDK_CONNECTOR *incoming, ndk_tool_adapter *ad)
{
    char peer[NDK_TOOL_ADDR_STRLEN];
    struct session s;
    NTSTATUS st;
    const uint32_t cap = ping_opt.size > RPING_MAX_SIZE + 1 ? ping_opt.size : RPING_MAX_SIZE + 1;

    memset(&s, 0, sizeof s);
    if (rping_setup(&s, ad, cap, false) != 0) {
        ndk_tool_conn_reject(incoming, NULL, 0);
        ndk_tool_session_close(&s.t);
        return 1;
    }
    if (session_accept(&s, incoming, NULL, 0) != 0)
        return 1;
    snprintf(peer, sizeof peer, "%s", s.t.where);
    /* The adapter is the server's, which still listens on it: a broken session closes only its own
     * objects (s.ad stays NULL). */
    s.who = "ndkping --rping server";
    if (ping_opt.cli.verbose)
        fprintf(stderr, "%s: connection from %s\n", ndk_tool_progname(), peer);
    uint8_t *rdma_buf = ndk_tool_session_area(&s.t) + RP_DATA;
    uint8_t *expect = malloc(cap);
    unsigned sends = 0, recvs = 0, ping = 0, reads = 0, writes = 0;
    uint64_t bytes = 0, mismatches = 0;
    uint32_t last_size = 0;
    int rc = 0;
    if (!expect)
        session_fail(&s, "out of memory");
    for (;;) {
        /* Wait for the client's source advertisement, or its disconnect. */
        bool gone = false;
        while (s.done[TAG_RECV0] < recvs + 1) {
            int failed;
            /* A client that never sends its first advertisement does not hold the server. */
            st = session_pump(&s, ping ? NDK_TOOL_INFINITE : PING_IDLE_MS, &failed);
            if (st == STATUS_SUCCESS)
                continue;
            if (st == STATUS_IO_TIMEOUT && !failed) {
                ndk_tool_err("%s: closing the connection: the client sent nothing within %d s", peer,
                             PING_IDLE_MS / 1000);
                rc = 1;
                goto out;
            }
            if (st == STATUS_CONNECTION_DISCONNECTED || ndk_tool_conn_disconnected(&s.t.conn) ||
                (failed && (st == STATUS_CANCELLED || st == STATUS_CONNECTION_DISCONNECTED ||
                            st == STATUS_CONNECTION_RESET || st == STATUS_CONNECTION_ABORTED))) {
                gone = true;
                break;
            }
            ndk_tool_err("%s: ping %u: waiting for the client's advertisement: %s%s%s", peer, ping,
                         failed ? session_tag_name[failed] : "", failed ? " completed with " : "", ndk_tool_status(st));
            rc = 1;
            goto out;
        }
        if (gone)
            break;
        recvs++;
        s.ping = ping;
        struct rping_info src = rping_take_recv(&s);
        if (src.size == 0 || src.size > cap)
            session_fail(&s, "%s: ping %u: client advertised %u bytes; this server takes 1..%u", peer, ping, src.size,
                      cap);
        /* RDMA Read the client's data. */
        NDK_SGE sge = ndk_sync_mem_sge(&s.t.mem, s.t.off_area + RP_DATA, src.size);
        st = s.t.conn.qp->Dispatch->NdkRead(s.t.conn.qp, (PVOID)(uintptr_t)TAG_READ, &sge, 1, src.buf, src.rkey, 0);
        s.posted[TAG_READ] += st == STATUS_SUCCESS;
        if (st != STATUS_SUCCESS)
            session_fail(&s, "%s: posting RDMA Read failed: %s", peer, ndk_tool_status(st));
        session_wait(&s, TAG_READ, ++reads, session_wait_ms(), "RDMA Read completion");
        rping_fill(expect, src.size, ping);
        if (memcmp(expect, rdma_buf, src.size) != 0) {
            mismatches++;
            if (ping_opt.cli.verbose)
                fprintf(stderr, "%s: ping %u: data read from %s is not rping's pattern\n", ndk_tool_progname(), ping,
                        peer);
        }
        if (ping_opt.cli.verbose)
            printf("server ping data: %.*s\n", (int)strnlen((const char *)rdma_buf, src.size),
                   (const char *)rdma_buf);
        /* Go ahead: a 16-byte Send (rping's server sends its untouched message buffer). */
        memset(ndk_tool_session_area(&s.t) + RP_SEND, 0, 16);
        st = session_send(&s, s.t.off_area + RP_SEND, 16);
        if (st != STATUS_SUCCESS)
            session_fail(&s, "%s: posting Send failed: %s", peer, ndk_tool_status(st));
        session_wait(&s, TAG_SEND, ++sends, session_wait_ms(), "Send completion");
        /* The client's sink advertisement. */
        while (s.done[TAG_RECV0] < recvs + 1) {
            int failed;
            st = session_pump(&s, session_wait_ms(), &failed);
            if (st != STATUS_SUCCESS)
                session_fail(&s, "%s: ping %u: waiting for the sink advertisement: %s%s%s", peer, ping,
                          failed ? session_tag_name[failed] : "", failed ? " completed with " : "", ndk_tool_status(st));
        }
        recvs++;
        struct rping_info dst = rping_take_recv(&s);
        /* rping writes back strlen(data) + 1 bytes. */
        uint32_t wlen = (uint32_t)strnlen((const char *)rdma_buf, src.size) + 1;
        if (wlen > src.size)
            wlen = src.size;
        if (wlen > dst.size)
            session_fail(&s, "%s: ping %u: sink of %u bytes is smaller than the %u bytes to write back", peer, ping,
                      dst.size, wlen);
        sge = ndk_sync_mem_sge(&s.t.mem, s.t.off_area + RP_DATA, wlen);
        st = s.t.conn.qp->Dispatch->NdkWrite(s.t.conn.qp, (PVOID)(uintptr_t)TAG_WRITE, &sge, 1, dst.buf, dst.rkey, 0);
        s.posted[TAG_WRITE] += st == STATUS_SUCCESS;
        if (st != STATUS_SUCCESS)
            session_fail(&s, "%s: posting RDMA Write failed: %s", peer, ndk_tool_status(st));
        session_wait(&s, TAG_WRITE, ++writes, session_wait_ms(), "RDMA Write completion");
        st = session_send(&s, s.t.off_area + RP_SEND, 16);
        if (st != STATUS_SUCCESS)
            session_fail(&s, "%s: posting Send failed: %s", peer, ndk_tool_status(st));
        session_wait(&s, TAG_SEND, ++sends, session_wait_ms(), "Send completion");
        bytes += src.size;
        last_size = src.size;
        ping++;
    }
    /* The client went away between pings. Linux rping's client disconnects only after its
     * last ping, so that is a complete session unless no ping was ever completed; a client
     * that dies in the middle of a ping fails one of the waits above. */
    if (ping == 0) {
        ndk_tool_err("%s: the client disconnected before completing a ping (incomplete rping session)", peer);
        rc = 1;
    }
out:
    free(expect);
    ndk_tool_session_close(&s.t);
    if (rc == 0 && !ping_opt.quiet) {
        if (mismatches)
            printf("ndkping --rping server: %u pings (%llu bytes) from %s; %llu did not carry rping's pattern\n", ping,
                   (unsigned long long)bytes, peer, (unsigned long long)mismatches);
        else
            printf("ndkping --rping server: %u pings of %u bytes from %s, data compared byte for byte: ok\n", ping,
                   last_size, peer);
    }
    fflush(stdout);
    return rc;
}


