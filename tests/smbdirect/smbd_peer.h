/* smbd_peer: a scripted MS-SMBD server for the transport tests, on the public NDKPI through
 * the tools' plumbing: it listens on loopback, accepts one connection at a time, and lets a
 * scenario send and receive raw SMBD messages, RDMA-read/write the client's buffers and
 * Send-with-Invalidate. Runs on its own thread; every wait is bounded. */
#ifndef SMBD_PEER_H
#define SMBD_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "ndk_sync_mem.h"
#include "ndk_tool_conn.h"
#include "ndk_tool_server.h"

#define PEER_TMO 10000
#define PEER_RECV_SIZE 2048
#define PEER_RECVS 256

typedef struct peer {
    ndk_rt          *rt;
    ndk_tool_server *srv;
    SOCKADDR_INET    addr;
    ndk_tool_conn    conn;
    ndk_sync_mem     rmem, smem, dmem;  /* receives, sends, RDMA data */
    uint32_t         credits_granted;   /* client's send credits as the peer granted them */
    uint32_t         client_granted;    /* credits the client gave the peer */
    uint32_t         violations;        /* client messages beyond our grants */
    uint32_t         last_credit_violations;
    uint8_t          last[PEER_RECV_SIZE];
    uint32_t         last_len;
} peer;

/* Listens on 127.0.0.1 at a free port (stored in p->addr). */
void peer_start(peer *p);
void peer_stop(peer *p);
/* Accepts the next connection (receives posted first). */
bool peer_accept(peer *p);
/* Receives one raw message into p->last; false on timeout or error. Reposts the buffer and
 * checks the client's credit use. */
bool peer_recv(peer *p, int timeout_ms);
/* Sends raw bytes, optionally with invalidation of token (inv != 0). */
bool peer_send_raw(peer *p, const void *m, uint32_t len, uint32_t inv);
/* Data message with the given fields; payload may be NULL with len 0. */
bool peer_send_data(peer *p, uint16_t granted, uint16_t flags, uint32_t remaining, const void *payload,
                    uint32_t len, uint32_t inv);
/* A Negotiate Response with the usual values (max_rw 8 MiB, 1364 sizes). */
void peer_negresp(uint8_t out[32], uint16_t granted, uint32_t preferred_send, uint32_t max_recv,
                  uint32_t max_frag);
/* RDMA Write (to_client true) or Read of len bytes between p->dmem+off and the client. */
bool peer_rdma(peer *p, bool to_client, size_t off, uint64_t raddr, uint32_t token, uint32_t len);
/* Disconnects and frees the connection. */
void peer_drop(peer *p);

#endif
