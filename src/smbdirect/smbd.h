/*
 * smbd.h - an MS-SMBD (SMB Direct) client transport on the public NDKPI.
 *
 * The caller hands in an open NDK_ADAPTER (as NDIS would give a kernel consumer) and drives one
 * connection from one thread at a time: smbd_send and smbd_recv block, each bounded by the
 * connection's timeout, and progress the connection's single CQ (receives, send completions,
 * fast registers and invalidations) while they wait. Any NDK error, a protocol violation by
 * the peer, a vanished peer or an expired timer moves the connection to FAILED: every later
 * call returns the first error, and smbd_close tears it down without waiting for the peer
 * longer than a bounded time.
 *
 * Functions return 0 or a negative errno: -EPROTO (the peer broke MS-SMBD), -ECONNRESET (the
 * connection is gone), -ETIMEDOUT, -EMSGSIZE (message above the negotiated maximum), -ENOMEM,
 * -EINVAL (misuse), -EIO (an NDK request failed; smbd_last_status names it).
 */
#ifndef SMBD_H
#define SMBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ndkpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct smbd_conn smbd_conn;

/* SMB Direct over iWARP listens on 5445 (MS-SMBD 1.9). */
#define SMBD_DEFAULT_PORT 5445

typedef struct smbd_params {
    uint16_t send_credit_target;     /* CreditsRequested we send (255) */
    uint16_t recv_credit_max;        /* receives we post (255) */
    uint32_t max_send_size;          /* PreferredSendSize (1364) */
    uint32_t max_recv_size;          /* MaxReceiveSize (1364) */
    uint32_t max_fragmented_size;    /* MaxFragmentedSize we reassemble (1 MiB) */
    uint32_t max_read_write_size;    /* local RDMA I/O limit (8 MiB) */
    uint32_t ird, ord;               /* MPA read limits to offer (ird >= 1: the server reads us) */
    uint32_t send_slots;             /* sends in flight (64) */
    uint32_t mr_count;               /* fast-register MRs in the pool (32) */
    int      timeout_ms;             /* bound on any single wait (connect, credit, response) */
    int      keepalive_ms;           /* idle time before a RESPONSE_REQUESTED probe; 0 = none */
    bool     no_invalidate;          /* ask for RDMA_V1 (local invalidation) only */
} smbd_params;

/* Fills p with the defaults above. */
void smbd_params_default(smbd_params *p);

/* What the negotiation settled (MS-SMBD 3.1.5.7). */
typedef struct smbd_negotiated {
    uint32_t max_send_size;
    uint32_t max_recv_size;
    uint32_t max_fragmented_send;    /* the peer's MaxFragmentedSize */
    uint32_t max_fragmented_recv;
    uint32_t max_read_write_size;
    uint16_t recv_credit_target;     /* the peer's CreditsRequested */
    uint16_t initial_send_credits;
    uint32_t ird, ord;               /* from NdkGetConnectionData */
} smbd_negotiated;

/* Connects from src to dst (port 5445 for iWARP) and runs the SMBD negotiation. Blocks. */
int smbd_connect(NDK_ADAPTER *adapter, const SOCKADDR_INET *src, const SOCKADDR_INET *dst,
                 const smbd_params *params, smbd_conn **out);
const smbd_negotiated *smbd_negotiated_info(const smbd_conn *c);

/* Sends one upper-layer message, fragmented into data transfer messages. Blocks until every
 * fragment is posted (waits for send credits, bounded by the timeout). */
int smbd_send(smbd_conn *c, const void *msg, size_t len);
/* Receives one reassembled upper-layer message into a malloc'd buffer the caller frees.
 * *invalidated receives the token a Send-with-Invalidate carried (0 if none). Blocks up to
 * timeout_ms (-1: the connection's timeout). */
int smbd_recv(smbd_conn *c, uint8_t **msg, size_t *len, uint32_t *invalidated, int timeout_ms);

/* ---- buffers for SMB2 RDMA channel transfers (MS-SMBD 3.1.4.3-3.1.4.6) ---- */

typedef struct smbd_buffer_desc {
    uint64_t offset;
    uint32_t token;
    uint32_t length;
} smbd_buffer_desc;

#define SMBD_MAX_DESCS 16
typedef struct smbd_mr smbd_mr;

/* Fast-registers len bytes at buf for the peer to RDMA-write into (peer_writes) or to
 * RDMA-read from. Fills up to SMBD_MAX_DESCS descriptors (more than one when the buffer needs
 * more pages than one MR holds) and returns their count in *ndesc. */
int smbd_mr_register(smbd_conn *c, void *buf, size_t len, bool peer_writes, smbd_mr **out,
                     smbd_buffer_desc *descs, unsigned *ndesc);
/* Invalidates locally every region of mr except one the peer already invalidated (the token
 * from smbd_recv; 0 = none), then returns the MRs to the pool. A token that names none of mr's
 * regions means the peer invalidated something else: the connection fails (-EPROTO) after the
 * local invalidations. On a failed connection the regions are just dropped. */
int smbd_mr_release(smbd_conn *c, smbd_mr *mr, uint32_t invalidated);
/* Whether the peer may be asked to invalidate remotely (SMB2_CHANNEL_RDMA_V1_INVALIDATE). */
bool smbd_remote_invalidate_ok(const smbd_conn *c);

/* First error, or 0; and the NTSTATUS behind an -EIO. */
int smbd_error(const smbd_conn *c);
NTSTATUS smbd_last_status(const smbd_conn *c);
const char *smbd_error_text(const smbd_conn *c);

typedef struct smbd_stats {
    uint64_t msgs_sent, msgs_recv, frags_sent, frags_recv;
    uint64_t credit_waits;           /* sends that had to wait for a grant */
    uint64_t empty_sent, empty_recv; /* credit-only and keep-alive messages */
    uint64_t remote_invalidations, local_invalidations;
    uint64_t missed_notifications;   /* completions found by the periodic look, not notified */
    uint32_t send_credits, recv_posted;
} smbd_stats;
void smbd_get_stats(const smbd_conn *c, smbd_stats *out);

/* Disconnects (bounded: never waits long for an unresponsive peer) and frees everything. */
void smbd_close(smbd_conn *c);

#ifdef __cplusplus
}
#endif

#endif /* SMBD_H */
