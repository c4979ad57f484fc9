/*
 * ndkping.h - what ndkping's modes share: the options, a session with its completion
 * bookkeeping (session.c), and the entry point of each mode:
 *   ping.c     the plain Send/Receive ping-pong (client and server)
 *   rping.c    rdma-core rping's message layout and sequence
 *   cmatose.c  rdma-core (u)cmatose's Send/Receive exchange
 *   rdmacm.c   librdmacm's rdma_server / rdma_client examples
 * ndkping.c holds the command line and the server loop of the ping and rping modes.
 * Everything runs on the main thread; the CQ is waited on, never handed to its callback.
 */
#ifndef NDKPING_H
#define NDKPING_H

#include "ndk_tool_adapter.h"
#include "ndk_tool_cli.h"
#include "ndk_tool_server.h"
#include "ndk_tool_session.h"

#define PING_DEFAULT_PORT    7174
#define PING_MAX_SIZE        (16u << 20)
#define RPING_MAX_SIZE       65535u
#define CMATOSE_DEFAULT_PORT 7471
#define CMATOSE_MAX_CONNS    64
#define RDMACM_DEFAULT_PORT  7471
/* The ping and rping servers serve one client at a time: one that connects and sends nothing
 * for this long is closed. */
#define PING_IDLE_MS         30000

/* ---- options (ndkping.c) ---- */
struct ping_opts {
    /* the shared options; addr: -s / -c argument, rping's -a; local: -a (ping), -I (rping),
     * -b (cmatose) */
    ndk_tool_cli cli;
    bool        rping, cmatose, rdmacm, once, quiet, persistent, validate;
    unsigned    connections;    /* cmatose -c */
    const char *pdata;          /* cmatose --pdata */
    uint16_t    port;
    uint32_t    size;
    uint64_t    count;
    double      interval;
    double      wait_s;
};
extern struct ping_opts ping_opt;

/* ---- a session plus completion bookkeeping (session.c) ---- */

/* RequestContext tags of our work requests. Receives carry TAG_RECV0 + slot (slots
 * 0..PING_SLOTS-1) and are all booked under TAG_RECV0. */
enum ping_tag { TAG_SEND = 1, TAG_READ, TAG_WRITE, TAG_RECV0, TAG_COUNT };
#define PING_SLOTS 4
extern const char *const session_tag_name[TAG_COUNT];

struct session {
    ndk_tool_session t;
    unsigned         done[TAG_COUNT];
    /* For the report of a broken session (session_fail): requests posted and completions of
     * any status, per tag; who we are ("ndkping --rping client"), the adapter to close and the
     * ping in progress. */
    unsigned         posted[TAG_COUNT], completed[TAG_COUNT];
    const char      *who;
    ndk_tool_adapter *ad;
    unsigned         ping;
    /* receive completions, in order: which slot and how many bytes */
    unsigned         rq_head, rq_tail;
    int              rq_slot[64];   /* a pump books at most 16 at a time; callers consume them */
    ULONG            rq_bytes[64];
    /* The first receive that failed (flushed: the peer went away), kept until session_pump
     * reports it: a wait for another request, which completes on its own, goes on without it. */
    NTSTATUS         recv_fail;
};

/* Prints the reason and exits 1. Once connected (s->who set), it first flushes the QP, waits up
 * to 5 s for every posted request to complete and up to 2 s for a disconnect event, closes the
 * session and s->ad, and prints one line with the disconnect events and the requests posted and
 * completed (any completed twice). */
void session_fail(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* Waits for one batch of completions and books them all; STATUS_SUCCESS or why the first failed
 * one failed (*failed_tag: which request). Blocks. */
NTSTATUS session_pump(struct session *s, int timeout_ms, int *failed_tag);
/* Waits until `want` completions of tag have been booked in total; exits on failure. Blocks. */
void session_wait(struct session *s, int tag, unsigned want, int timeout_ms, const char *what);
/* Posts receive slot `slot` (tag TAG_RECV0 + slot). */
NTSTATUS session_post_slot(struct session *s, int slot);
/* Sends len bytes from offset off of the session's registration (tag TAG_SEND). */
NTSTATUS session_send(struct session *s, size_t off, ULONG len);
/* The next booked receive: its slot and length. */
int session_take(struct session *s, ULONG *bytes);
/* -W: how long to wait for each answer. */
int session_wait_ms(void);
/* Connects the opened session s on ad to dst (one read each way). On failure prints why,
 * closes the session and the adapter and returns 1; 0 when connected. Blocks. */
int session_connect(struct session *s, ndk_tool_adapter *ad, const SOCKADDR_INET *src, const SOCKADDR_INET *dst,
                    const void *pdata, ULONG pdata_len);
/* Accepts incoming on the opened session s (one read each way) and names the peer in
 * s->t.where. On failure prints why, closes the session and returns 1; 0 when connected. */
int session_accept(struct session *s, NDK_CONNECTOR *incoming, const void *pdata, ULONG pdata_len);
/* Listens on ip (NULL: the wildcard of family, AF_INET or AF_UNSPEC for both) at ping_opt.port.
 * Returns 0, or 2 (bad address) / 1 (cannot listen) after printing why. */
int session_listen(ndk_rt *rt, const char *ip, int family, ndk_tool_server **srv);

/* ---- modes ---- */
int ping_client(ndk_rt *rt);
int ping_serve_one(NDK_CONNECTOR *incoming, ndk_tool_adapter *ad);
int rping_client(ndk_rt *rt);
int rping_serve_one(NDK_CONNECTOR *incoming, ndk_tool_adapter *ad);
int cmatose_client(ndk_rt *rt);
int cmatose_server(ndk_rt *rt);
int rdmacm_client(ndk_rt *rt);
int rdmacm_server(ndk_rt *rt);

#endif /* NDKPING_H */
