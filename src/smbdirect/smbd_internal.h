/*
 * smbd_internal.h - the SMB Direct connection object shared by the transport's files:
 * smbd_conn.c (lifecycle, state machine, negotiation, CQ progress), smbd_send.c (credits and
 * fragmentation), smbd_recv.c (validation and reassembly), smbd_mr.c (RDMA buffer
 * registration).
 */
#ifndef SMBD_INTERNAL_H
#define SMBD_INTERNAL_H

#include <pthread.h>

#include <ndk/runtime.h>

#include "ndk_sync.h"
#include "ndk_sync_mem.h"
#include "ndk_sync_time.h"
#include "smbd.h"

/* STATUS_INVALID_NETWORK_RESPONSE: what a peer's protocol violation is reported as. */
#define SMBD_STATUS_BAD_MESSAGE ((NTSTATUS)0xC00000C3L)

/* Connection states (MS-SMBD 3.1.1.1); smbd_set_state rejects undefined transitions. */
typedef enum smbd_state {
    SMBD_ST_INIT = 0,
    SMBD_ST_CONNECTING,
    SMBD_ST_NEGOTIATING,
    SMBD_ST_CONNECTED,
    SMBD_ST_FAILED,
    SMBD_ST_CLOSED
} smbd_state;

/* What a completion's RequestContext points at. */
typedef enum smbd_wr_kind { SMBD_WR_RECV = 1, SMBD_WR_SEND, SMBD_WR_REG, SMBD_WR_INV } smbd_wr_kind;

typedef struct smbd_recv_slot {
    smbd_wr_kind kind;
    unsigned     index;
} smbd_recv_slot;

typedef struct smbd_send_slot {
    smbd_wr_kind kind;
    unsigned     index;
    bool         busy;
} smbd_send_slot;

/* One fast-register MR of the pool; kind tells a registration from an invalidation. */
typedef struct smbd_frmr {
    smbd_wr_kind kind;
    NDK_MR      *mr;
    bool         in_use;
    bool         broken;         /* a request on it failed: never reused */
    int          pending;        /* fast-register or invalidate requests in flight */
    NTSTATUS     wr_status;
    MDL         *mdl;
    NDK_LOGICAL_ADDRESS_MAPPING *lam;
    uint32_t     token;
    void        *va;
    uint32_t     length;
} smbd_frmr;

struct smbd_mr {
    unsigned   count;
    smbd_frmr *frmr[SMBD_MAX_DESCS];
};

/* A reassembled upper-layer message waiting for smbd_recv. */
typedef struct smbd_msg {
    struct smbd_msg *next;
    uint8_t         *data;
    size_t           len;
    uint32_t         invalidated;
} smbd_msg;

struct smbd_conn {
    smbd_params     p;
    smbd_negotiated neg;
    smbd_state      state;
    int             error;           /* first error (negative errno), 0 while healthy */
    NTSTATUS        last_status;
    char            error_text[160];

    struct {
        NDK_ADAPTER     *adapter;    /* borrowed from the caller */
        NDK_ADAPTER_INFO info;       /* queried here */
    } ad;
    NDK_PD          *pd;
    NDK_CQ          *cq;
    NDK_QP          *qp;
    NDK_CONNECTOR   *connector;
    bool             established;

    /* lock: the CQ-notification and disconnect callbacks signal the waiting thread through
     * events/cond; everything else belongs to the one calling thread. */
    pthread_mutex_t  lock;
    pthread_cond_t   cond;
    uint64_t         events;
    int              disconnected;   /* atomic: the disconnect event arrived */
    NTSTATUS         cq_error;

    /* receive side */
    ndk_sync_mem     recv_mem;
    smbd_recv_slot  *recv_slots;
    unsigned         recv_count;
    uint32_t         recv_posted;    /* receives on the QP */
    uint32_t         granted;        /* of those, granted to the peer and not yet used */
    uint16_t         peer_target;    /* the peer's CreditsRequested */
    uint64_t         last_recv_ns;
    bool             keepalive_sent;
    bool             response_requested;
    uint8_t         *reasm;          /* partial message */
    size_t           reasm_len, reasm_total;
    uint32_t         reasm_inv;
    smbd_msg        *rxq_head, *rxq_tail;

    /* send side */
    ndk_sync_mem     send_mem;
    smbd_send_slot  *send_slots;
    unsigned         send_free;
    uint32_t         send_credits;

    smbd_frmr       *frmrs;
    unsigned         frmr_count;
    ULONG            frmr_pages;

    smbd_stats       st;
};

/* smbd_conn.c */
void smbd_set_state(smbd_conn *c, smbd_state to);
/* Records the first error, moves to FAILED and returns err. */
int smbd_fail(smbd_conn *c, int err, NTSTATUS st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Waits up to timeout_ms for completions and handles them all; 0 when something was handled,
 * -ETIMEDOUT when nothing came, or the connection's error. Calling thread; blocks. */
int smbd_progress(smbd_conn *c, int timeout_ms);

/* smbd_recv.c */
int smbd_recv_post(smbd_conn *c, unsigned index);
int smbd_recv_complete(smbd_conn *c, const NDK_RESULT_EX *r);
void smbd_rxq_free(smbd_conn *c);

/* smbd_send.c */
/* Credits we can grant now without exceeding the peer's target (3.1.5.9 credit manager). */
uint16_t smbd_grant_now(smbd_conn *c);
/* Posts one data transfer message; flags may hold RESPONSE_REQUESTED. Waits for a credit and a
 * slot when allow_wait, else returns -EAGAIN if either is missing. */
int smbd_send_one(smbd_conn *c, const uint8_t *payload, uint32_t len, uint32_t remaining, uint16_t flags,
                  bool allow_wait);
void smbd_send_complete(smbd_conn *c, const NDK_RESULT_EX *r);
/* After receives were handled: answer RESPONSE_REQUESTED and top up the peer's credits. */
void smbd_credit_service(smbd_conn *c);

/* smbd_mr.c */
int smbd_mr_pool_init(smbd_conn *c);
void smbd_mr_pool_free(smbd_conn *c);
void smbd_mr_complete(smbd_conn *c, const NDK_RESULT_EX *r);

#endif /* SMBD_INTERNAL_H */
