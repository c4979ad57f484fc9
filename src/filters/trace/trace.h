/* trace.h - the trace filter's state (ndk-filter-trace.so, ndk-filters(7) and ndk-filter(3)).
 *
 * Every call, completion and callback becomes one record line with a monotonic nanosecond
 * timestamp, the thread id and stable object names (qp#7), as text (key=value) or JSON lines,
 * written with one write(2) per record (no lock around the output). Per QP the filter keeps the
 * requests posted and not yet completed (a small mutex per queue pair: the trace's only lock on
 * the data path), which gives each completion its latency from post, and lets the stall watcher
 * (trace.stall_ms) report a QP whose requests stopped completing. */
#ifndef FLT_TRACE_H
#define FLT_TRACE_H

#include <ndk/filter.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ndk_list.h"

#define FLT_TRACE_LINE 1024

enum flt_trace_format { FLT_TRACE_TEXT, FLT_TRACE_JSON };

/* One request posted and not completed. */
struct flt_trace_wr {
    uint64_t      seq;          /* wr=<n> in the post and completion records */
    PVOID         ctx;
    ndk_filter_fn fn;
    uint64_t      post_ns;
    int           silent;       /* NDK_OP_FLAG_SILENT_SUCCESS: no completion on success */
};

struct flt_trace_queue {
    struct flt_trace_wr *wr;
    size_t               head, count, cap;   /* a ring, oldest at head */
};

/* Connection states as the trace sees them from the calls and events it forwards. */
enum flt_trace_conn { FLT_CONN_IDLE, FLT_CONN_CONNECTING, FLT_CONN_CONNECTED, FLT_CONN_DISCONNECTED, FLT_CONN_CLOSING };

struct flt_trace_module;

/* Per object (ndk_filter_obj_ctx). Fields by type. */
struct flt_trace_obj {
    struct flt_trace_module *mod;
    ndk_filter_obj          *obj;
    struct ndk_list          link;        /* QPs: mod->qps; mod->lock */
    /* QP */
    pthread_mutex_t          lock;        /* guards the two queues and the progress fields */
    struct flt_trace_queue   sq, rq;
    PVOID                    qp_context;
    ndk_filter_obj          *rcq, *icq, *srq;
    uint64_t                 progress_ns; /* last completion, or the post that started a busy period */
    int                      stalled;     /* reported for the current stall */
    /* QP <-> connector; mod->lock */
    ndk_filter_obj          *conn;        /* QP: its connector; connector: its QP */
    /* connector */
    _Atomic int              conn_state;
    /* CQ */
    _Atomic int              armed;       /* 0 never, 1 armed, 2 notified since the last arm */
    _Atomic unsigned         arm_type;
};

struct flt_trace_module {
    ndk_filter_module      *module;
    int                     fd;
    int                     own_fd;
    enum flt_trace_format   format;
    unsigned                stall_ms;
    _Atomic uint64_t        next_seq;
    _Atomic uint64_t        empty_polls;
    pthread_mutex_t         lock;          /* guards qps and the QP <-> connector links */
    struct ndk_list         qps;
    pthread_t               watcher;
    int                     watcher_started;
    pthread_mutex_t         stop_lock;     /* guards stop; the watcher sleeps on stop_cond */
    pthread_cond_t          stop_cond;
    int                     stop;
};

/* trace_out.c: records. A record is built with flt_trace_rec_* into a line buffer and written
 * with flt_trace_rec_end (one write). Never blocks for long; no lock. */
struct flt_trace_rec {
    struct flt_trace_module *mod;
    char                     buf[FLT_TRACE_LINE];
    size_t                   len;
};
uint64_t flt_trace_now_ns(void);
void flt_trace_rec_begin(struct flt_trace_rec *r, struct flt_trace_module *mod, const char *ev, uint64_t ts);
void flt_trace_rec_str(struct flt_trace_rec *r, const char *key, const char *value);
void flt_trace_rec_u64(struct flt_trace_rec *r, const char *key, uint64_t value);
void flt_trace_rec_hex(struct flt_trace_rec *r, const char *key, uint64_t value);
void flt_trace_rec_obj(struct flt_trace_rec *r, const char *key, const ndk_filter_obj *obj);
void flt_trace_rec_status(struct flt_trace_rec *r, const char *key, NTSTATUS status);
void flt_trace_rec_addr(struct flt_trace_rec *r, const char *key, const void *sockaddr);
void flt_trace_rec_end(struct flt_trace_rec *r);
int flt_trace_out_open(struct flt_trace_module *mod, const char *path);

/* trace_args.c: the arguments of a call that matter, into a record. */
void flt_trace_args(struct flt_trace_rec *r, const ndk_filter_call *call, int after);

/* trace_wr.c: requests posted and completed. Take the QP's lock; never block for long. */
void flt_trace_wr_posted(struct flt_trace_obj *qp, ndk_filter_fn fn, PVOID ctx, ULONG flags, uint64_t now,
                         uint64_t *seq);
void flt_trace_wr_unpost(struct flt_trace_obj *qp, ndk_filter_fn fn, uint64_t seq);
/* Records the completions of one poll of cq (results of either form). */
void flt_trace_wr_polled(struct flt_trace_module *mod, ndk_filter_obj *cq, const NDK_RESULT *res,
                         const NDK_RESULT_EX *res_ex, ULONG n, uint64_t now);
void flt_trace_wr_init(struct flt_trace_obj *qp);
void flt_trace_wr_free(struct flt_trace_obj *qp);

/* trace_stall.c: the stall watcher thread (trace.stall_ms). */
int flt_trace_stall_start(struct flt_trace_module *mod);
void flt_trace_stall_stop(struct flt_trace_module *mod);
const char *flt_trace_conn_name(int state);

#endif
