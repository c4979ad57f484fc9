/*
 * fault_rules.h - the fault filter's rule language and its seeded decisions.
 *
 *   rules  = rule *( ";" rule )
 *   rule   = call *( ":" param )
 *   call   = an NDK slot name (NdkCreateQp, NdkSend, NdkConnect, NdkGetCqResults, ...),
 *            CqNotification (the CQ notification callback), or a group:
 *            create (every NdkCreate*), post (every work request), connect (NdkConnect,
 *            NdkConnectWithSharedEndpoint), any
 *   param  = nth=N | every=N | p=F | after=N | count=N          when it fires
 *          | status=NAME-or-0xHEX [| async]                       fail the call (inline, or PENDING
 *                                                                 then the completion)
 *          | break=connection                                    abort the QP's connection
 *          | delay=MS                                            hold completions / notifications /
 *                                                                 an async failure
 *          | short=N                                             a CQ poll returns at most N
 *
 * Decisions are reproducible: each rule counts the calls it matches and, for p=, draws from its
 * own generator seeded from fault.seed and the rule's position, so the same seed and the same
 * call sequence give the same faults.
 */
#ifndef FAULT_RULES_H
#define FAULT_RULES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <ndk/nt.h>

#define FLT_FAULT_MAX_RULES 32

enum flt_fault_kind {
    FLT_FAULT_STATUS = 1,   /* the call fails with a status */
    FLT_FAULT_BREAK,        /* the connection under the QP is aborted through the provider */
    FLT_FAULT_DELAY,        /* completions or notifications are held back */
    FLT_FAULT_SHORT         /* a CQ poll returns fewer results than are ready */
};

struct flt_fault_rule {
    char              text[160];    /* as written, for the log */
    char              call[48];     /* slot name, CqNotification, or a group */
    enum flt_fault_kind kind;
    uint64_t          nth, every, after, count;
    double            p;            /* 0: not probabilistic */
    NTSTATUS          status;
    bool              async;
    unsigned          delay_ms;
    unsigned          short_max;
    /* State: mu guards the counters and the generator (held only for the decision). */
    pthread_mutex_t   mu;
    uint64_t          calls, fired;
    unsigned short    rng[3];
};

struct flt_fault_rules {
    unsigned              n;
    uint64_t              seed;
    struct flt_fault_rule rule[FLT_FAULT_MAX_RULES];
};

/* Parses text into r (seeded from seed). Returns 0, or -EINVAL with a reason in err. */
int flt_fault_rules_parse(struct flt_fault_rules *r, const char *text, uint64_t seed, char *err, size_t errlen);
void flt_fault_rules_free(struct flt_fault_rules *r);

/* TRUE when rule applies to slot (exact name or group). */
bool flt_fault_rule_matches(const struct flt_fault_rule *rule, const char *slot);

/* Counts one matching call and decides whether the rule fires on it; *index gets the call's
 * 1-based index for the log. Any thread (takes rule->mu). */
bool flt_fault_rule_decide(struct flt_fault_rule *rule, uint64_t *index);

/* Parses a status name or hex value. */
int flt_fault_parse_status(const char *s, NTSTATUS *out);

#endif
