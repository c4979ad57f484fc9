/* dptest.h - isolated harness for the iwarp data path: the real object code of the core (PD,
 * CQ, SRQ, MR/MW, QP state machine) and the data path, without CM or runtime. dp_stub.c stands
 * in for the progress engine, the CM callbacks and logging; two QPs are "connected" by a
 * socketpair (optionally through a relay thread that re-splits the byte stream at random
 * points, down to one byte at a time) and a harness thread plays the progress engine. */
#ifndef DPTEST_H
#define DPTEST_H

#include "datapath.h"
#include "testlib.h"

enum dpt_split { DPT_DIRECT, DPT_RANDOM, DPT_ONEBYTE };

struct dpt_side {
    struct iw_qp *qp;
    NDK_QP *ndk;
    NDK_CQ *cq;
    NDK_SRQ *srq;
    int fd;                     /* socket end given to the QP */
    atomic_bool live;           /* polled by the harness thread */
    atomic_int failed;          /* iw_cm_connection_failed / engine error (-errno), 0 none */
    atomic_int lost;            /* torn down (connection_lost + flush ran) */
};

struct dpt_env {
    struct iw_device dev;
    struct iw_adapter ad;
    NDK_PD *pd;
    struct dpt_side s[2];
    pthread_t thr;
    atomic_bool stop;
    /* relay */
    enum dpt_split split;
    int relay_fd[2][2];         /* [dir][0]=read end, [1]=write end */
    pthread_t relay_thr;
    bool relay;
    atomic_bool relay_stop;
    unsigned seed;
};

struct dpt_conn_opts {
    bool crc;
    uint32_t mss;               /* 0: 1460 */
    uint32_t ird, ord;          /* 0: 16 */
    enum dpt_split split;
    bool srq_b;                 /* side 1 uses an SRQ */
    uint32_t sq_depth, rq_depth;/* 0: 256 */
    uint32_t cq_depth;          /* 0: 4096 */
    bool tcp;                   /* direct split over a loopback TCP connection, not a socket pair */
};

/* The defaults the tests start from: direct split, CRC on. */
void dpt_conn_opts_default(struct dpt_conn_opts *o);
/* Applies one of the arguments the datapath tests share (random, onebyte, nocrc, bigmss, tcp);
 * false when arg is none of them. */
bool dpt_conn_opts_arg(struct dpt_conn_opts *o, const char *arg);

void dpt_env_init(struct dpt_env *e);
void dpt_env_fini(struct dpt_env *e);
/* Creates both QPs (same PD) and connects them as the CM would. */
void dpt_connect(struct dpt_env *e, const struct dpt_conn_opts *o);
/* Same, but side 1 is a raw socket returned to the test (hostile-peer tests; a loopback TCP
 * connection with o->tcp, else a socket pair). */
int dpt_connect_raw(struct dpt_env *e, const struct dpt_conn_opts *o);
/* Tears down both sides (as the CM would), closes QPs and CQs. */
void dpt_disconnect(struct dpt_env *e);

/* Socket reads of both sides' RX engines, those of them through staging in bulk, and socket
 * writes of both TX engines (rx.c and tx.c count them per QP; read relaxed, without the engines'
 * mutexes, which the caller may hold). A side without a connected QP counts 0. */
uint64_t dpt_rx_reads(struct dpt_env *e);
uint64_t dpt_rx_bulk_reads(struct dpt_env *e);
uint64_t dpt_tx_writes(struct dpt_env *e);

/* Waits for one completion on side i's CQ; fails the test after timeout_ms. */
void dpt_poll(struct dpt_env *e, int i, NDK_RESULT_EX *r, int timeout_ms);
/* Polls side i's next completion (20 s at most) and checks its context, status and type, and
 * for a successful receive its byte count. */
void dpt_expect(struct dpt_env *e, int i, NDK_OPERATION_TYPE type, void *ctx, NTSTATUS st, size_t bytes);
/* TRUE when a completion arrives within timeout_ms. */
bool dpt_try_poll(struct dpt_env *e, int i, NDK_RESULT_EX *r, int timeout_ms);
/* Waits until side i was torn down (connection failure seen and handled). */
void dpt_wait_lost(struct dpt_env *e, int i, int timeout_ms);

struct dpt_mr {
    NDK_MR *mr;
    uint8_t *buf;               /* 4096-aligned, len + 2 * guard bytes; the region is buf+guard */
    uint8_t *p;                 /* registered region */
    size_t len;
    MDL *mdl;
    uint32_t token;
};
#define DPT_GUARD 4096u
/* Allocates and registers len bytes with NDK_MR_FLAG_* flags; guard bytes around are 0xEE. */
void dpt_mr_reg(struct dpt_env *e, struct dpt_mr *m, size_t len, ULONG flags);
void dpt_mr_free(struct dpt_env *e, struct dpt_mr *m);
/* One SGE over len bytes at off in m's region. */
NDK_SGE dpt_sge(const struct dpt_mr *m, size_t off, size_t len);
/* TRUE when the guard bytes around the region are untouched. */
bool dpt_mr_guard_ok(const struct dpt_mr *m);

/* The raw peer of dpt_connect_raw: writes all of buf; reads what the QP sends until its
 * Terminate and returns that header (fails after 5 s), with the first other header the QP sent
 * in *first_other (may be NULL); checks a received Terminate's fixed fields and its reason. */
void dpt_raw_send(int fd, const void *buf, size_t len);
struct iw_fpdu_hdr dpt_read_term(int fd, bool crc, struct iw_fpdu_hdr *first_other);
void dpt_expect_term(const struct iw_fpdu_hdr *h, uint8_t layer, uint8_t etype, uint8_t ecode, uint8_t hdrct);

/* progress_stub.c: while not 0, iw_progress_watch fails with this -errno and changes nothing. */
extern atomic_int iw_progress_stub_watch_err;
/* Non-zero: iw_progress_lend accepts (the test plays the ring: ring_arm, its own recv, ring_done). */
extern atomic_int iw_progress_stub_ring;
void dpt_fill(uint8_t *p, size_t n, uint32_t seed);
bool dpt_check(const uint8_t *p, size_t n, uint32_t seed);

#endif
