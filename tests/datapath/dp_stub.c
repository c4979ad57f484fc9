/* dp_stub.c - the core functions the data path calls that live outside the objects under test
 * (progress engine work queue, CM callbacks, logging), plus the harness of dptest.h. */
#include "dptest.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct dpt_env *g_env;

void iw_log(int level, const char *fmt, ...)
{
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("DPT_VERBOSE") ? atoi(getenv("DPT_VERBOSE")) : 0;
    if (level > NDK_LOG_WARNING && verbose < 2)
        return;
    if (level > NDK_LOG_ERROR && !verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[iw %d] ", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

bool iw_progress_queue(struct iw_device *dev, struct iw_work *w)
{
    bool q = false;
    pthread_mutex_lock(&dev->wq_lock);
    if (!w->queued) {
        w->queued = true;
        ndk_list_add_tail(&dev->work, &w->link);
        q = true;
    }
    pthread_mutex_unlock(&dev->wq_lock);
    return q;
}

static void run_work(struct iw_device *dev)
{
    for (;;) {
        pthread_mutex_lock(&dev->wq_lock);
        if (ndk_list_empty(&dev->work)) {
            pthread_mutex_unlock(&dev->wq_lock);
            return;
        }
        struct iw_work *w = ndk_list_entry(dev->work.next, struct iw_work, link);
        ndk_list_del(&w->link);
        w->queued = false;
        pthread_mutex_unlock(&dev->wq_lock);
        w->fn(w);
    }
}

static struct dpt_side *side_of(struct iw_qp *qp)
{
    for (int i = 0; i < 2; i++)
        if (g_env && g_env->s[i].qp == qp)
            return &g_env->s[i];
    return NULL;
}

void iw_cm_connection_failed(struct iw_qp *qp, int err)
{
    struct dpt_side *s = side_of(qp);
    int zero = 0;
    if (s)
        atomic_compare_exchange_strong(&s->failed, &zero, err ? err : -EIO);
}

/* The progress engine's registrations and timers are progress_stub.c's: the harness thread below
 * watches the QPs' sockets itself, so a test that polls its CQ runs both owners of the engines
 * against each other. */

/* The TX engine waits for room (qp.c's copy, under qp->lock as it is written). */
static bool side_want_out(struct dpt_side *s)
{
    bool on = false;
    iw_lock_take(&s->qp->lock);
    if (s->qp->dp)
        on = s->qp->dp->want_out;
    iw_lock_give(&s->qp->lock);
    return on;
}

/* ---- harness ---- */

void dpt_fill(uint8_t *p, size_t n, uint32_t seed)
{
    ndk_test_fill(p, n, seed);
}

bool dpt_check(const uint8_t *p, size_t n, uint32_t seed)
{
    return ndk_test_check(p, n, seed);
}

/* Tears a side down the way cm.c does: state out of RTS, the socket made abortive, then
 * connection_lost, which stops the engines and closes the socket under rx_owned (qp.c), so a
 * consumer polling the engines never reads a descriptor being closed; then flush. Harness
 * thread (or the test after it stopped). */
static void teardown(struct dpt_side *s, int err)
{
    struct iw_qp *qp = s->qp;
    int fd;

    atomic_store(&s->live, false);
    iw_lock_take(&qp->lock);
    iw_qp_set_error_locked(qp, err);
    if (qp->state != IW_QP_ERROR)
        iw_qp_modify_locked(qp, IW_QP_ERROR);
    fd = qp->fd;
    iw_lock_give(&qp->lock);
    if (fd >= 0) {                   /* only this thread closes it */
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    iw_qp_connection_lost(qp, err);
    iw_lock_take(&qp->lock);
    iw_qp_flush_locked(qp);
    iw_lock_give(&qp->lock);
    atomic_store(&s->lost, 1);
}

static void *progress(void *arg)
{
    struct dpt_env *e = arg;

    /* Marks itself as progress.c's thread does (iw_progress_on_thread): CQ polls made from it
     * must not run the engines inline. */
    atomic_store(&e->dev.progress_self, pthread_self());
    while (!atomic_load(&e->stop)) {
        struct pollfd pf[2];
        int idx[2], n = 0;
        run_work(&e->dev);
        for (int i = 0; i < 2; i++) {
            struct dpt_side *s = &e->s[i];
            if (!atomic_load(&s->live))
                continue;
            int f = atomic_load(&s->failed);
            if (f) {
                teardown(s, f);
                continue;
            }
            pf[n].fd = s->fd;
            pf[n].events = POLLIN | (side_want_out(s) ? POLLOUT : 0);
            pf[n].revents = 0;
            idx[n++] = i;
        }
        if (poll(pf, (nfds_t)n, 2) <= 0)
            continue;
        for (int k = 0; k < n; k++) {
            struct dpt_side *s = &e->s[idx[k]];
            int r = 0;
            if (pf[k].revents & (POLLIN | POLLERR | POLLHUP))
                r = iw_rx_run(s->qp);
            if (!r && (pf[k].revents & POLLOUT))
                r = iw_tx_run(s->qp);
            if (r) {
                int zero = 0;
                atomic_compare_exchange_strong(&s->failed, &zero, r);
                teardown(s, r);
            }
        }
    }
    run_work(&e->dev);
    return NULL;
}

/* The stub's adapter instance: iwarp's object hooks, no dispatch (nothing opens it). */
static const struct ndk_prov_adapter_kind dpt_adapter_kind = {
    .hooks = &iw_obj_hooks, .size = sizeof(struct iw_adapter), .pd_new = iw_pd_new,
};

void dpt_env_init(struct dpt_env *e)
{
    memset(e, 0, sizeof(*e));
    g_env = e;
    pthread_mutex_init(&e->dev.lock, NULL);
    pthread_mutex_init(&e->dev.mem_lock, NULL);
    pthread_mutex_init(&e->dev.wq_lock, NULL);
    pthread_mutex_init(&e->dev.qps_lock, NULL);
    ndk_list_init(&e->dev.qps);
    iw_mem_device_init(&e->dev);
    ndk_list_init(&e->dev.work);
    ndk_list_init(&e->dev.endpoints);
    ndk_list_init(&e->dev.connectors);
    ndk_list_init(&e->dev.listeners);
    ndk_prov_adapter_list_init(&e->dev.adapters);
    strcpy(e->dev.ifname, "dptest");
    e->ad.dev = &e->dev;
    ndk_prov_adapter_init(&e->ad.base, &dpt_adapter_kind, (NDK_VERSION){ .Major = 2, .Minor = 1 });
    CHECK_STATUS(ndk_prov_pd_create(&e->ad.base.ndk, NULL, NULL, &e->pd), STATUS_SUCCESS);
    e->seed = (unsigned)time(NULL);
    if (getenv("DPT_SEED"))
        e->seed = (unsigned)atoi(getenv("DPT_SEED"));
    CHECK(pthread_create(&e->thr, NULL, progress, e) == 0);
}

void dpt_env_fini(struct dpt_env *e)
{
    atomic_store(&e->stop, true);
    pthread_join(e->thr, NULL);
    CHECK_STATUS(e->pd->Dispatch->NdkClosePd(&e->pd->Header, NULL, NULL), STATUS_SUCCESS);
    run_work(&e->dev);
    iw_stag_table_destroy(&e->dev.stags);
    /* What the harness thread, as the device's progress thread, had the engines allocate (as
     * iw_device_destroy does after the real one ends). */
    iw_rx_bufs_free(&e->dev);
    iw_tx_batch_free(&e->dev);
    g_env = NULL;
}

/* ---- relay: re-splits each direction's byte stream ---- */

static void *relay(void *arg)
{
    struct dpt_env *e = arg;
    uint8_t buf[65536];
    unsigned seed = e->seed;

    while (!atomic_load(&e->relay_stop)) {
        struct pollfd pf[2] = { { e->relay_fd[0][0], POLLIN, 0 }, { e->relay_fd[1][0], POLLIN, 0 } };
        if (poll(pf, 2, 2) <= 0)
            continue;
        for (int d = 0; d < 2; d++) {
            if (!(pf[d].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            size_t want = e->split == DPT_ONEBYTE ? 1 : 1 + (size_t)(rand_r(&seed) % 3000);
            ssize_t n = recv(e->relay_fd[d][0], buf, want, MSG_DONTWAIT);
            if (n <= 0) {
                if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                    shutdown(e->relay_fd[d][1], SHUT_WR);
                    atomic_store(&e->relay_stop, true);
                }
                continue;
            }
            size_t off = 0;
            while (off < (size_t)n && !atomic_load(&e->relay_stop)) {
                ssize_t w = send(e->relay_fd[d][1], buf + off, (size_t)n - off, MSG_NOSIGNAL);
                if (w < 0) {
                    if (errno == EAGAIN || errno == EINTR) {
                        usleep(100);
                        continue;
                    }
                    atomic_store(&e->relay_stop, true);
                    break;
                }
                off += (size_t)w;
            }
        }
    }
    return NULL;
}

static void set_nb(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
}

/* A connected pair over 127.0.0.1 (an ephemeral port), with TCP_NODELAY as the CM sets it. */
static void tcp_pair(int fds[2])
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(l >= 0);
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(l, 1) == 0);
    CHECK(getsockname(l, (struct sockaddr *)&a, &al) == 0);
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fds[0] >= 0);
    CHECK(connect(fds[0], (struct sockaddr *)&a, sizeof a) == 0);
    fds[1] = accept(l, NULL, NULL);
    CHECK(fds[1] >= 0);
    close(l);
    for (int i = 0; i < 2; i++)
        CHECK(setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0);
}

static void make_qp(struct dpt_env *e, int i, const struct dpt_conn_opts *o)
{
    struct dpt_side *s = &e->s[i];
    uint32_t cqd = o->cq_depth ? o->cq_depth : 4096;
    uint32_t sqd = o->sq_depth ? o->sq_depth : 256, rqd = o->rq_depth ? o->rq_depth : 256;

    CHECK_STATUS(iw_create_cq(&e->ad.base.ndk, cqd, NULL, NULL, NULL, NULL, NULL, &s->cq), STATUS_SUCCESS);
    if (i == 1 && o->srq_b) {
        CHECK_STATUS(iw_create_srq(e->pd, rqd, IW_MAX_SGE, 0, NULL, NULL, NULL, NULL, NULL, &s->srq), STATUS_SUCCESS);
        CHECK_STATUS(iw_create_qp_with_srq(e->pd, s->cq, s->cq, s->srq, (void *)(uintptr_t)(0x1000 + i), sqd,
                                           IW_MAX_SGE, IW_MAX_INLINE, NULL, NULL, &s->ndk),
                     STATUS_SUCCESS);
    } else {
        CHECK_STATUS(iw_create_qp(e->pd, s->cq, s->cq, (void *)(uintptr_t)(0x1000 + i), rqd, sqd, IW_MAX_SGE,
                                  IW_MAX_SGE, IW_MAX_INLINE, NULL, NULL, &s->ndk),
                     STATUS_SUCCESS);
    }
    s->qp = to_iw_qp(s->ndk);
}

static void establish(struct dpt_env *e, int i, int fd, const struct dpt_conn_opts *o)
{
    struct dpt_side *s = &e->s[i];
    struct iw_qp *qp = s->qp;

    s->fd = fd;
    iw_lock_take(&qp->lock);
    qp->fd = fd;
    qp->params.crc = o->crc;
    qp->params.mpa_rev = 2;
    qp->params.ird = o->ird ? o->ird : 16;
    qp->params.ord = o->ord ? o->ord : 16;
    qp->params.mss = o->mss ? o->mss : 1460;
    qp->params.mulpdu = iw_fpdu_mulpdu(qp->params.mss, false);
    CHECK(iw_qp_modify_locked(qp, IW_QP_CONNECTING) == 0);
    CHECK(iw_qp_modify_locked(qp, IW_QP_RTS) == 0);
    iw_lock_give(&qp->lock);
    iw_qp_connection_established(qp);
    atomic_store(&s->live, true);
}

void dpt_connect(struct dpt_env *e, const struct dpt_conn_opts *o)
{
    int a[2], b[2], c[2];

    make_qp(e, 0, o);
    make_qp(e, 1, o);
    e->split = o->split;
    if (o->tcp) {
        CHECK_MSG(o->split == DPT_DIRECT, "tcp goes with the direct split only");
        tcp_pair(a);
    } else {
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
    }
    if (o->split == DPT_DIRECT) {
        set_nb(a[0]);
        set_nb(a[1]);
        establish(e, 0, a[0], o);
        establish(e, 1, a[1], o);
        return;
    }
    /* A <-> a[0] | a[1] relay b[0] | b[1] <-> B */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
    (void)c;
    set_nb(a[0]);
    set_nb(b[1]);
    set_nb(a[1]);
    set_nb(b[0]);
    e->relay_fd[0][0] = a[1];   /* A -> B */
    e->relay_fd[0][1] = b[0];
    e->relay_fd[1][0] = b[0];   /* B -> A */
    e->relay_fd[1][1] = a[1];
    e->relay = true;
    CHECK(pthread_create(&e->relay_thr, NULL, relay, e) == 0);
    establish(e, 0, a[0], o);
    establish(e, 1, b[1], o);
}

int dpt_connect_raw(struct dpt_env *e, const struct dpt_conn_opts *o)
{
    int a[2];

    make_qp(e, 0, o);
    if (o->tcp)
        tcp_pair(a);
    else
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
    set_nb(a[0]);
    establish(e, 0, a[0], o);
    return a[1];
}

void dpt_expect(struct dpt_env *e, int i, NDK_OPERATION_TYPE type, void *ctx, NTSTATUS st, size_t bytes)
{
    NDK_RESULT_EX r;
    dpt_poll(e, i, &r, 20000);
    if (r.RequestContext != ctx)
        fprintf(stderr, "side %d: completion %p, expected %p\n", i, r.RequestContext, ctx);
    CHECK(r.RequestContext == ctx);
    CHECK_STATUS(r.Status, st);
    CHECK_EQ(r.Type, type);
    if (st == STATUS_SUCCESS && (type == NdkOperationTypeReceive || type == NdkOperationTypeReceiveAndInvalidate))
        CHECK_EQ(r.BytesTransferred, bytes);
}

bool dpt_try_poll(struct dpt_env *e, int i, NDK_RESULT_EX *r, int timeout_ms)
{
    NDK_CQ *cq = e->s[i].cq;
    uint64_t end = ndk_test_now_ms() + (uint64_t)timeout_ms;

    for (;;) {
        if (cq->Dispatch->NdkGetCqResultsEx(cq, r, 1) == 1)
            return true;
        if (ndk_test_now_ms() >= end)
            return false;
        usleep(50);
    }
}

enum dpt_count { DPT_RX_READS, DPT_RX_BULK, DPT_TX_WRITES };

static uint64_t dpt_count(struct dpt_env *e, enum dpt_count which)
{
    uint64_t sum = 0;

    for (int i = 0; i < 2; i++) {
        struct iw_dp *dp = e->s[i].qp ? e->s[i].qp->dp : NULL;
        if (dp)
            sum += __atomic_load_n(which == DPT_RX_READS  ? &dp->rx.reads
                                   : which == DPT_RX_BULK ? &dp->rx.bulk_reads
                                                          : &dp->tx.writes,
                                   __ATOMIC_RELAXED);
    }
    return sum;
}

uint64_t dpt_rx_reads(struct dpt_env *e)
{
    return dpt_count(e, DPT_RX_READS);
}

uint64_t dpt_rx_bulk_reads(struct dpt_env *e)
{
    return dpt_count(e, DPT_RX_BULK);
}

uint64_t dpt_tx_writes(struct dpt_env *e)
{
    return dpt_count(e, DPT_TX_WRITES);
}

void dpt_poll(struct dpt_env *e, int i, NDK_RESULT_EX *r, int timeout_ms)
{
    if (!dpt_try_poll(e, i, r, timeout_ms))
        ndk_test_fail(__FILE__, __LINE__, "no completion on side %d within %d ms", i, timeout_ms);
}

void dpt_wait_lost(struct dpt_env *e, int i, int timeout_ms)
{
    uint64_t end = ndk_test_now_ms() + (uint64_t)timeout_ms;
    while (!atomic_load(&e->s[i].lost)) {
        if (ndk_test_now_ms() >= end)
            ndk_test_fail(__FILE__, __LINE__, "side %d not torn down within %d ms", i, timeout_ms);
        usleep(200);
    }
}

void dpt_disconnect(struct dpt_env *e)
{
    /* Stop the harness thread first so teardown runs once, here. */
    atomic_store(&e->stop, true);
    pthread_join(e->thr, NULL);
    if (e->relay) {
        atomic_store(&e->relay_stop, true);
        pthread_join(e->relay_thr, NULL);
        close(e->relay_fd[0][0]);
        close(e->relay_fd[1][0]);
        e->relay = false;
    }
    for (int i = 0; i < 2; i++) {
        struct dpt_side *s = &e->s[i];
        if (!s->qp)
            continue;
        if (!atomic_load(&s->lost))
            teardown(s, -ESHUTDOWN);
        run_work(&e->dev);
        CHECK_STATUS(s->ndk->Dispatch->NdkCloseQp(&s->ndk->Header, NULL, NULL), STATUS_SUCCESS);
        if (s->srq)
            CHECK_STATUS(s->srq->Dispatch->NdkCloseSrq(&s->srq->Header, NULL, NULL), STATUS_SUCCESS);
        CHECK_STATUS(s->cq->Dispatch->NdkCloseCq(&s->cq->Header, NULL, NULL), STATUS_SUCCESS);
        memset(s, 0, sizeof(*s));
    }
    run_work(&e->dev);
    /* restart the harness thread for the next connection */
    atomic_store(&e->stop, false);
    atomic_store(&e->relay_stop, false);
    CHECK(pthread_create(&e->thr, NULL, progress, e) == 0);
}

void dpt_mr_reg(struct dpt_env *e, struct dpt_mr *m, size_t len, ULONG flags)
{
    memset(m, 0, sizeof(*m));
    m->len = len;
    CHECK(posix_memalign((void **)&m->buf, 4096, len + 2 * DPT_GUARD) == 0);
    memset(m->buf, 0xEE, len + 2 * DPT_GUARD);
    m->p = m->buf + DPT_GUARD;
    memset(m->p, 0, len);
    CHECK_STATUS(e->pd->Dispatch->NdkCreateMr(e->pd, FALSE, NULL, NULL, &m->mr), STATUS_SUCCESS);
    m->mdl = IoAllocateMdl(m->p, (ULONG)(len ? len : 1), FALSE, FALSE, NULL);
    CHECK(m->mdl);
    CHECK_STATUS(m->mr->Dispatch->NdkRegisterMr(m->mr, m->mdl, len ? len : 1, flags, NULL, NULL), STATUS_SUCCESS);
    m->token = m->mr->Dispatch->NdkGetLocalTokenFromMr(m->mr);
}

void dpt_conn_opts_default(struct dpt_conn_opts *o)
{
    memset(o, 0, sizeof *o);
    o->split = DPT_DIRECT;
    o->crc = true;
}

bool dpt_conn_opts_arg(struct dpt_conn_opts *o, const char *arg)
{
    if (!strcmp(arg, "random"))
        o->split = DPT_RANDOM;
    else if (!strcmp(arg, "onebyte"))
        o->split = DPT_ONEBYTE;
    else if (!strcmp(arg, "nocrc"))
        o->crc = false;
    else if (!strcmp(arg, "bigmss"))
        o->mss = 65483;
    else if (!strcmp(arg, "tcp"))
        o->tcp = true;
    else
        return false;
    return true;
}

NDK_SGE dpt_sge(const struct dpt_mr *m, size_t off, size_t len)
{
    NDK_SGE s = { .VirtualAddress = m->p + off, .Length = (ULONG)len, .MemoryRegionToken = m->token };
    return s;
}

void dpt_mr_free(struct dpt_env *e, struct dpt_mr *m)
{
    (void)e;
    NTSTATUS st = m->mr->Dispatch->NdkCloseMr(&m->mr->Header, NULL, NULL);
    CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
    run_work(&e->dev);
    IoFreeMdl(m->mdl);
    free(m->buf);
    memset(m, 0, sizeof(*m));
}

bool dpt_mr_guard_ok(const struct dpt_mr *m)
{
    for (size_t i = 0; i < DPT_GUARD; i++)
        if (m->buf[i] != 0xEE || m->p[m->len + i] != 0xEE)
            return false;
    return true;
}

/* ---- the raw peer (dptest.h) ---- */

void dpt_raw_send(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

/* Reads FPDUs from the QP until a Terminate; returns its decoded header (fails on timeout). */
struct iw_fpdu_hdr dpt_read_term(int fd, bool crc_on, struct iw_fpdu_hdr *first_other)
{
    struct iw_fpdu_rx rx;
    struct iw_fpdu_rx_cfg cfg = { .crc = crc_on };
    uint8_t buf[4096];
    uint64_t end = ndk_test_now_ms() + 5000;

    iw_fpdu_rx_init(&rx, &cfg);
    if (first_other)
        memset(first_other, 0, sizeof(*first_other));
    for (;;) {
        struct pollfd pf = { fd, POLLIN, 0 };
        CHECK_MSG(ndk_test_now_ms() < end, "no Terminate within 5 s");
        if (poll(&pf, 1, 100) <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        CHECK_MSG(n > 0, "connection closed before a Terminate (n=%zd errno=%d)", n, errno);
        size_t pos = 0;
        while (pos < (size_t)n) {
            struct iw_fpdu_event ev;
            size_t used;
            enum iw_fpdu_ev_type t = iw_fpdu_rx_step(&rx, buf + pos, (size_t)n - pos, &used, &ev);
            pos += used;
            CHECK(t != IW_FPDU_EV_ERROR);
            if (t == IW_FPDU_EV_END && ev.hdr->opcode == IW_OP_TERMINATE) {
                CHECK(!crc_on || ev.crc_checked);
                return *ev.hdr;
            }
            if (t == IW_FPDU_EV_HEADER && first_other && !first_other->opcode && ev.hdr->opcode != IW_OP_TERMINATE)
                *first_other = *ev.hdr;
            if (t == IW_FPDU_EV_NEED_MORE)
                break;
        }
    }
}

void dpt_expect_term(const struct iw_fpdu_hdr *h, uint8_t layer, uint8_t etype, uint8_t ecode, uint8_t hdrct)
{
    CHECK_EQ(h->opcode, IW_OP_TERMINATE);
    CHECK_EQ(h->qn, IW_QN_TERMINATE);
    CHECK_EQ(h->msn, 1);
    CHECK_EQ(h->term.layer, layer);
    CHECK_EQ(h->term.etype, etype);
    CHECK_EQ(h->term.ecode, ecode);
    CHECK_EQ(h->term.hdrct, hdrct);
}
