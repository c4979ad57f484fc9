/*
 * fault.h - the fault filter's state (ndk-filter-fault.so): seeded, reproducible injection of
 * what a real provider may legally do to a consumer. Rules: fault_rules.h; settings and kinds:
 * ndk-filters(7).
 *
 * Locks: flt_fault_inst.mu guards the QP <-> connector links; flt_fault_obj.mu guards a
 * connector's break and override state; the timer's lock guards its queue. None is held while a
 * consumer callback runs; inst.mu and a connector's mu are held across the lower NdkDisconnect
 * of a break (our own locks, which no consumer path takes).
 */
#ifndef FAULT_H
#define FAULT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ndk/filter.h>
#include <ndk/provider.h>
#include "fault_rules.h"

struct flt_fault_module {
    ndk_filter_module    *module;
    struct flt_fault_rules rules;
};

struct flt_fault_inst {
    struct flt_fault_module *m;
    pthread_mutex_t          mu;
};

/* A connect-family call whose successful completion is to be reported as a failure. */
struct flt_fault_override {
    bool           armed;
    ndk_filter_fn  fn;
    PVOID          context;
    NTSTATUS       status;
    unsigned       delay_ms;
};

struct flt_fault_obj {
    ndk_filter_obj          *fobj;
    struct flt_fault_inst   *inst;
    char                     name[24];
    NDK_OBJECT_TYPE          type;
    pthread_mutex_t          mu;            /* connector: closing, broken, override */
    bool                     closing;
    bool                     broken;
    bool                     breaking;      /* a break's lower NdkDisconnect is being issued */
    pthread_t                breaking_thread;
    ndk_filter_obj          *peer;          /* QP: its connector; connector: its QP (inst->mu) */
    struct flt_fault_override override;
    /* CQ: completions held back (NdkGetCqResults(Ex):delay=), oldest first (mu). */
    struct flt_fault_held   *held;
    unsigned                 held_n, held_cap;
    bool                     raise_pending;   /* a notification for them is queued on the timer */
};

/* One completion the filter took from the provider and holds until ready_ns. */
struct flt_fault_held {
    NDK_RESULT_EX result;
    uint64_t      ready_ns;
};

/* fault_log.c */
int flt_fault_log_open(const char *path);
void flt_fault_log_close(void);
/* "ndk-fault: seed S rule N 'text' call I: <object> <slot>: <what>" */
void flt_fault_log(uint64_t seed, unsigned rule_index, const struct flt_fault_rule *rule, uint64_t call_index,
                   const char *object, const char *slot, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* fault_timer.c: delivers held callbacks later, on its own thread. */
int flt_fault_timer_start(void);
/* Delivers cb (from ndk_filter_cb_hold) after delay_ms; delivers it at once if the timer cannot
 * take it. Any thread, never blocks. */
void flt_fault_timer_deliver_later(ndk_filter_cb *cb, unsigned delay_ms);
/* Runs fn(arg) on the timer thread after delay_ms; 0, or -errno when it cannot be queued. */
int flt_fault_timer_call_later(const void *key, unsigned delay_ms, void (*fn)(void *), void *arg);
/* Forgets the functions queued under key; waits while one of them is running. */
void flt_fault_timer_cancel(const void *key);
/* Delivers everything still queued, then stops the thread. May block. */
void flt_fault_timer_stop(void);

/* fault_delay.c: completions held back (the poll hook, the arm hook, the CQ's close). */
NTSTATUS flt_fault_delay_poll(struct flt_fault_inst *inst, struct flt_fault_obj *cq, ndk_filter_call *call,
                              unsigned rule_index, struct flt_fault_rule *rule, uint64_t call_index, bool fire);
void flt_fault_delay_armed(struct flt_fault_obj *cq);
void flt_fault_delay_close(struct flt_fault_obj *cq);

/* fault_break.c: aborts the connection under a QP or connector through the provider. */
void flt_fault_break(struct flt_fault_inst *inst, struct flt_fault_obj *o, uint64_t seed, unsigned rule_index,
                     const struct flt_fault_rule *rule, uint64_t call_index, const char *slot);
/* The consumer closes a connector: waits out a break being issued by another thread. */
void flt_fault_break_close(struct flt_fault_obj *c);
/* Bookkeeping of the QP <-> connector links the break needs. */
void flt_fault_link(struct flt_fault_inst *inst, struct flt_fault_obj *connector, ndk_filter_obj *qp);
void flt_fault_unlink(struct flt_fault_inst *inst, struct flt_fault_obj *o);

#endif
