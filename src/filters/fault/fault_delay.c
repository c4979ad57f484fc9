/* fault_delay: completions that come late (NdkGetCqResults(Ex):delay=MS). When the rule fires
 * on a poll, the filter takes the ready completions from the provider's CQ and holds them for
 * MS; polls return only the completions whose time has come, oldest first, so each queue's
 * completions keep their order. A consumer that arms the CQ while completions are held gets its
 * notification when the first of them is due (ndk_filter_raise), as a provider gives one for
 * completions it already holds (NDK_FN_ARM_CQ). Held completions die with the CQ. */
#include "fault.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FLT_FAULT_PULL_MAX 64   /* completions taken from the provider per poll */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Takes up to n completions from the provider's CQ into out. The consumer's thread. */
static ULONG pull(ndk_filter_obj *cq, NDK_RESULT_EX *out, ULONG n)
{
    NDK_CQ *lower = (NDK_CQ *)ndk_filter_obj_lower(cq);
    if (lower->Dispatch->NdkGetCqResultsEx)
        return lower->Dispatch->NdkGetCqResultsEx(lower, out, n);
    NDK_RESULT r[FLT_FAULT_PULL_MAX];
    ULONG got = lower->Dispatch->NdkGetCqResults(lower, r, n);
    for (ULONG i = 0; i < got; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].Status = r[i].Status;
        out[i].BytesTransferred = r[i].BytesTransferred;
        out[i].QPContext = r[i].QPContext;
        out[i].RequestContext = r[i].RequestContext;
    }
    return got;
}

/* The consumer's thread (a poll). Answers the poll itself. Takes cq->mu (ours) only. */
NTSTATUS flt_fault_delay_poll(struct flt_fault_inst *inst, struct flt_fault_obj *cq, ndk_filter_call *call,
                              unsigned rule_index, struct flt_fault_rule *rule, uint64_t call_index, bool fire)
{
    bool ex = call->fn == NDK_FILTER_FN_GET_CQ_RESULTS_EX;
    ULONG want = ex ? call->args.get_cq_results_ex.count : call->args.get_cq_results.count;
    NDK_RESULT_EX tmp[FLT_FAULT_PULL_MAX];
    ULONG got = pull(cq->fobj, tmp, want < FLT_FAULT_PULL_MAX ? want : FLT_FAULT_PULL_MAX);
    uint64_t now = now_ns();
    uint64_t ready = fire ? now + (uint64_t)rule->delay_ms * 1000000ull : now;
    ULONG out = 0;
    bool lost = false;
    pthread_mutex_lock(&cq->mu);
    if (cq->held_n + got > cq->held_cap) {
        unsigned cap = cq->held_cap ? cq->held_cap * 2 : 64;
        while (cap < cq->held_n + got)
            cap *= 2;
        struct flt_fault_held *h = realloc(cq->held, cap * sizeof *h);
        if (h) {
            cq->held = h;
            cq->held_cap = cap;
        } else {
            /* Out of memory: hand out what fits rather than lose completions. */
            ready = 0;
            lost = cq->held_n + got > cq->held_cap;
        }
    }
    for (ULONG i = 0; i < got && cq->held_n < cq->held_cap; i++)
        cq->held[cq->held_n++] = (struct flt_fault_held){ tmp[i], ready };
    while (out < want && out < cq->held_n && cq->held[out].ready_ns <= now) {
        if (ex)
            call->args.get_cq_results_ex.results[out] = cq->held[out].result;
        else {
            NDK_RESULT *r = &call->args.get_cq_results.results[out];
            r->Status = cq->held[out].result.Status;
            r->BytesTransferred = cq->held[out].result.BytesTransferred;
            r->QPContext = cq->held[out].result.QPContext;
            r->RequestContext = cq->held[out].result.RequestContext;
        }
        out++;
    }
    memmove(cq->held, cq->held + out, (cq->held_n - out) * sizeof *cq->held);
    cq->held_n -= out;
    unsigned still = cq->held_n;
    pthread_mutex_unlock(&cq->mu);
    if (fire && got)
        flt_fault_log(inst->m->rules.seed, rule_index, rule, call_index, cq->name, ndk_filter_fn_name(call->fn),
                      "%lu completion(s) held %u ms (%u held)", (unsigned long)got, rule->delay_ms, still);
    if (lost)
        flt_fault_log(inst->m->rules.seed, rule_index, rule, call_index, cq->name, ndk_filter_fn_name(call->fn),
                      "out of memory holding completions");
    if (ex)
        call->args.get_cq_results_ex.returned = out;
    else
        call->args.get_cq_results.returned = out;
    call->status = STATUS_SUCCESS;
    return STATUS_SUCCESS;
}

/* The timer thread: the first held completion is due; notify if the consumer's arm is still
 * there (the layer spends it and serialises with the provider's notifications). */
static void notify_due(void *arg)
{
    struct flt_fault_obj *cq = arg;
    pthread_mutex_lock(&cq->mu);
    cq->raise_pending = false;
    pthread_mutex_unlock(&cq->mu);
    ndk_filter_raise(cq->fobj, NDK_FILTER_CB_CQ_NOTIFICATION, STATUS_SUCCESS, 0);
}

/* The consumer's thread, after its NdkArmCq went down. Takes cq->mu. */
void flt_fault_delay_armed(struct flt_fault_obj *cq)
{
    pthread_mutex_lock(&cq->mu);
    bool schedule = cq->held_n && !cq->raise_pending;
    uint64_t now = now_ns(), due = schedule ? cq->held[0].ready_ns : 0;
    if (schedule)
        cq->raise_pending = true;
    pthread_mutex_unlock(&cq->mu);
    if (!schedule)
        return;
    unsigned ms = due > now ? (unsigned)((due - now + 999999) / 1000000) : 0;
    if (flt_fault_timer_call_later(cq, ms, notify_due, cq)) {
        pthread_mutex_lock(&cq->mu);
        cq->raise_pending = false;
        pthread_mutex_unlock(&cq->mu);
    }
}

/* The consumer's close of the CQ (before it goes down): no notification of ours after it, and
 * the held completions go with the CQ. */
void flt_fault_delay_close(struct flt_fault_obj *cq)
{
    flt_fault_timer_cancel(cq);
    pthread_mutex_lock(&cq->mu);
    free(cq->held);
    cq->held = NULL;
    cq->held_n = cq->held_cap = 0;
    cq->raise_pending = false;
    pthread_mutex_unlock(&cq->mu);
}
