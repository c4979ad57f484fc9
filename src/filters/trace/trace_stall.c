/* trace_stall.c - the stall watcher (trace.stall_ms=N): a thread that looks at every QP every
 * N/4 ms (at least 10 ms); a QP with requests outstanding and no completion for N ms gets one
 * report per stall: its outstanding requests with their age, the QP's connector and its state,
 * and the arm state of its CQs. Context: its own thread; takes the module lock and each QP's
 * lock in turn (the order the poll path takes them), writes records with neither held. */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

const char *flt_trace_conn_name(int state)
{
    switch (state) {
    case FLT_CONN_IDLE: return "idle";
    case FLT_CONN_CONNECTING: return "connecting";
    case FLT_CONN_CONNECTED: return "connected";
    case FLT_CONN_DISCONNECTED: return "disconnected";
    case FLT_CONN_CLOSING: return "closing";
    default: return "?";
    }
}

static const char *arm_name(const ndk_filter_obj *cq)
{
    if (!cq)
        return "-";
    const struct flt_trace_obj *c = ndk_filter_obj_ctx(cq);
    switch (atomic_load(&c->armed)) {
    case 1: return "armed";
    case 2: return "notified";
    default: return "not-armed";
    }
}

#define STALL_MAX_WR 16   /* requests listed per report; the count says how many there are */

struct stall_snapshot {
    ndk_filter_obj     *qp, *conn, *rcq, *icq;
    int                 conn_state;
    uint64_t            idle_ns;
    size_t              outstanding, listed;
    struct flt_trace_wr wr[STALL_MAX_WR];
};

static void report(struct flt_trace_module *mod, const struct stall_snapshot *s, uint64_t now)
{
    struct flt_trace_rec r;
    flt_trace_rec_begin(&r, mod, "stall", now);
    flt_trace_rec_obj(&r, "obj", s->qp);
    flt_trace_rec_u64(&r, "idle_ms", s->idle_ns / 1000000u);
    flt_trace_rec_u64(&r, "outstanding", s->outstanding);
    flt_trace_rec_obj(&r, "conn", s->conn);
    flt_trace_rec_str(&r, "conn_state", s->conn ? flt_trace_conn_name(s->conn_state) : "none");
    flt_trace_rec_obj(&r, "rcq", s->rcq);
    flt_trace_rec_str(&r, "rcq_arm", arm_name(s->rcq));
    flt_trace_rec_obj(&r, "icq", s->icq);
    flt_trace_rec_str(&r, "icq_arm", arm_name(s->icq));
    flt_trace_rec_end(&r);
    for (size_t i = 0; i < s->listed; i++) {
        flt_trace_rec_begin(&r, mod, "stall_wr", now);
        flt_trace_rec_obj(&r, "obj", s->qp);
        flt_trace_rec_str(&r, "fn", ndk_filter_fn_name(s->wr[i].fn));
        flt_trace_rec_u64(&r, "wr", s->wr[i].seq);
        flt_trace_rec_hex(&r, "ctx", (uint64_t)(uintptr_t)s->wr[i].ctx);
        flt_trace_rec_u64(&r, "age_ms", (now - s->wr[i].post_ns) / 1000000u);
        flt_trace_rec_end(&r);
    }
}

static void copy_queue(struct stall_snapshot *s, const struct flt_trace_queue *q)
{
    for (size_t i = 0; i < q->count && s->listed < STALL_MAX_WR; i++)
        s->wr[s->listed++] = q->wr[(q->head + i) % q->cap];
}

/* One pass: finds at most one newly stalled QP per call (the caller loops). Returns 1 when it
 * reported one. */
static int scan_once(struct flt_trace_module *mod, uint64_t now)
{
    struct stall_snapshot s = { 0 };
    int found = 0;
    struct ndk_list *it;
    pthread_mutex_lock(&mod->lock);
    ndk_list_for_each(it, &mod->qps) {
        struct flt_trace_obj *qp = ndk_list_entry(it, struct flt_trace_obj, link);
        pthread_mutex_lock(&qp->lock);
        size_t n = qp->sq.count + qp->rq.count;
        if (n && !qp->stalled && now - qp->progress_ns >= (uint64_t)mod->stall_ms * 1000000u) {
            qp->stalled = 1;
            found = 1;
            s.qp = qp->obj;
            s.idle_ns = now - qp->progress_ns;
            s.outstanding = n;
            copy_queue(&s, &qp->sq);
            copy_queue(&s, &qp->rq);
            s.rcq = qp->rcq;
            s.icq = qp->icq;
            s.conn = qp->conn;
            if (s.conn)
                s.conn_state = atomic_load(&((struct flt_trace_obj *)ndk_filter_obj_ctx(s.conn))->conn_state);
        }
        pthread_mutex_unlock(&qp->lock);
        if (found)
            break;
    }
    /* Still under mod->lock: the objects named stay alive (obj_destroy takes it). */
    if (found)
        report(mod, &s, now);
    pthread_mutex_unlock(&mod->lock);
    return found;
}

static void *watcher(void *arg)
{
    struct flt_trace_module *mod = arg;
    unsigned period_ms = mod->stall_ms / 4 < 10 ? 10 : mod->stall_ms / 4;
    pthread_mutex_lock(&mod->stop_lock);
    while (!mod->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(period_ms % 1000) * 1000000L;
        until.tv_sec += period_ms / 1000 + until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&mod->stop_cond, &mod->stop_lock, &until);
        if (mod->stop)
            break;
        pthread_mutex_unlock(&mod->stop_lock);
        uint64_t now = flt_trace_now_ns();
        while (scan_once(mod, now))
            ;
        pthread_mutex_lock(&mod->stop_lock);
    }
    pthread_mutex_unlock(&mod->stop_lock);
    return NULL;
}

int flt_trace_stall_start(struct flt_trace_module *mod)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&mod->stop_cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&mod->stop_lock, NULL);
    if (!mod->stall_ms)
        return 0;
    int rc = pthread_create(&mod->watcher, NULL, watcher, mod);
    if (rc)
        return -rc;
    mod->watcher_started = 1;
    return 0;
}

void flt_trace_stall_stop(struct flt_trace_module *mod)
{
    pthread_mutex_lock(&mod->stop_lock);
    mod->stop = 1;
    pthread_cond_broadcast(&mod->stop_cond);
    pthread_mutex_unlock(&mod->stop_lock);
    if (mod->watcher_started)
        pthread_join(mod->watcher, NULL);
    mod->watcher_started = 0;
    pthread_cond_destroy(&mod->stop_cond);
    pthread_mutex_destroy(&mod->stop_lock);
}
