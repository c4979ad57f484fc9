/* cq.c - completion queues (§2.4, §3.4, §5.7): a ring of NDK_RESULT_EX, one-shot arming with
 * the merge rules of §5.7, serialized notifications on the progress thread, overrun latch,
 * resize.
 *
 * Talks to: poll.c (a busy poll runs the QPs' engines), progress.c (notifications), obj.c, log.c.
 * Called by qp.c and rx.c (iw_cq_push). */
#include "iwarp.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* An NdkArmCq type as an enum iw_cq_arm (its rank, §5.7 rule 4). */
static unsigned iw_arm_kind(ULONG type)
{
    switch (type) {
    case NDK_CQ_NOTIFY_ANY: return IW_CQ_ARM_ANY;
    case NDK_CQ_NOTIFY_SOLICITED: return IW_CQ_ARM_SOLICITED;
    default: return IW_CQ_ARM_ERRORS;
    }
}

static unsigned iw_armw_kind(uint64_t w)
{
    return (unsigned)(w & IW_CQ_ARM_MASK);
}

static uint64_t iw_armw_at(uint64_t w)
{
    return w >> IW_CQ_ARM_AT_SHIFT;
}

/* Progress thread: delivers one notification. Holds the reference taken by iw_cq_fire.
 * The status needs no lock: a fire merged into this run stored it before its queueing, which
 * the run's taking of the item (iw_run_work) is ordered after. */
static void iw_cq_notify_work(struct iw_work *w)
{
    struct iw_cq *cq = ndk_container_of(w, struct iw_cq, notify_work);
    NTSTATUS st = atomic_load_explicit(&cq->notify_status, memory_order_relaxed);
    /* No notification for a CQ whose close was requested: its close completion must be the
     * last callback (§3.1), and the consumer has stopped caring. */
    if (!iw_obj_closing(&cq->obj) && cq->notify_cb)
        cq->notify_cb(cq->notify_ctx, st);
    iw_obj_put(&cq->obj);
}

/* Satisfies the arming *w names if it is still the current one: swaps in NONE and the new
 * mark (pushes now), and queues the callback. false, with *w the word found: another thread
 * fired this arming first (only the consumer's arm raises the kind, §5.4 keeps it to one thread,
 * and everyone else only clears it). Sequentially consistent, like the arm's raise: the word is
 * where pushes, arms and the overrun meet. Any thread, no lock needed. */
static bool iw_cq_fire(struct iw_cq *cq, uint64_t *w, NTSTATUS st)
{
    uint64_t at = atomic_load_explicit(&cq->pushes, memory_order_relaxed);

    if (!atomic_compare_exchange_strong(&cq->armw, w, at << IW_CQ_ARM_AT_SHIFT | IW_CQ_ARM_NONE))
        return false;
    atomic_store_explicit(&cq->notify_status, st, memory_order_relaxed);
    iw_obj_get(&cq->obj);
    if (!iw_progress_queue(cq->obj.dev, &cq->notify_work))
        iw_obj_put(&cq->obj);   /* merged with one already queued: it carries a reference */
    return true;
}

/* Fires the current arming, whatever its kind, with the latched error (§5.7 rule 5: an error
 * satisfies any arm). Nothing when unarmed, or when a push fired the arming meanwhile: the error
 * then waits for the next arm (§8.32). cq->lock held (error_notified). */
static void iw_cq_fire_error_locked(struct iw_cq *cq)
{
    uint64_t w = atomic_load(&cq->armw);

    while (iw_armw_kind(w) != IW_CQ_ARM_NONE) {
        if (iw_cq_fire(cq, &w, cq->error)) {
            cq->error_notified = true;
            return;
        }
    }
}

/* prod's flags below the claimed positions. GATE: a resize waits for the turns it let in, and
 * new pushes wait for it on cq->lock. DEAD: the CQ is overrun, pushes fail (§3.4). */
#define IW_CQ_GATE 1u
#define IW_CQ_DEAD 2u
#define IW_CQ_POS_SHIFT 2

/* iw_cq_pop_begin's wait for another holder: out of line, so that the uncontended take, on
 * every poll, makes no call (and its caller need not save registers around one). */
static __attribute__((noinline, cold)) void iw_cq_pop_wait(struct iw_cq *cq)
{
    do
        sched_yield();
    while (atomic_exchange_explicit(&cq->popping, true, memory_order_acquire));
}

/* Takes the popping flag (struct iw_cq). Never blocks for long: a holder only copies entries.
 * The exchange also orders the taker's later reads after the holder's release before it. */
static inline void iw_cq_pop_begin(struct iw_cq *cq)
{
    if (atomic_exchange_explicit(&cq->popping, true, memory_order_acquire))
        iw_cq_pop_wait(cq);
}

static void iw_cq_pop_end(struct iw_cq *cq)
{
    atomic_store_explicit(&cq->popping, false, memory_order_release);
}

/* Whether an arm of kind arm is satisfied by a completion (§5.7 rule 1; failures match
 * SOLICITED). */
static bool iw_cq_arm_matches(unsigned arm, bool solicited)
{
    return arm == IW_CQ_ARM_ANY || (arm == IW_CQ_ARM_SOLICITED && solicited);
}

/* Claims the next position of the push stream; -EOVERFLOW once the CQ is overrun. Waits on
 * cq->lock while a resize holds the gate. The acquire pairs with the resize's opening of the
 * gate: the claimer sees the ring and depth it left. Any thread, no lock held but the caller's. */
static int iw_cq_claim(struct iw_cq *cq, uint64_t *pos)
{
    uint64_t w = atomic_load_explicit(&cq->prod, memory_order_relaxed);

    for (;;) {
        if (w & IW_CQ_DEAD)
            return -EOVERFLOW;
        if (w & IW_CQ_GATE) {
            pthread_mutex_lock(&cq->lock);        /* the resize holds it until it opens the gate */
            pthread_mutex_unlock(&cq->lock);
            w = atomic_load_explicit(&cq->prod, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&cq->prod, &w, w + (1u << IW_CQ_POS_SHIFT),
                                                  memory_order_acquire, memory_order_relaxed))
            break;
    }
    *pos = w >> IW_CQ_POS_SHIFT;
    return 0;
}

/* Waits until every position before pos is published; false when the CQ was overrun
 * meanwhile (the overrun's pusher never publishes, so the turn never comes). The acquire
 * pairs with the last publication: the slot we reuse and the marks are ours now. */
static bool iw_cq_turn(struct iw_cq *cq, uint64_t pos)
{
    for (unsigned spins = 0; atomic_load_explicit(&cq->pushes, memory_order_acquire) != pos; spins++) {
        if (atomic_load_explicit(&cq->prod, memory_order_relaxed) & IW_CQ_DEAD)
            return false;
        if (spins > 64)
            sched_yield();                        /* the pusher before us was preempted */
    }
    return true;
}

/* A push holding its turn found the ring full: latches the overrun, which ends the
 * turns of the pushes behind it. Takes cq->lock. */
static int iw_cq_overrun(struct iw_cq *cq)
{
    /* Release: a resize that sees DEAD sees the publications before this push's turn. */
    atomic_fetch_or_explicit(&cq->prod, IW_CQ_DEAD, memory_order_release);
    pthread_mutex_lock(&cq->lock);
    if (!cq->error) {
        /* Sequentially consistent, and so is the look at the arm after it: against an arm's
         * raise and its look at error (iw_arm_cq), so that one of the two reports it. */
        atomic_store(&cq->error, STATUS_BUFFER_OVERFLOW);
        IW_COUNT(cq->obj.dev, cq_error, 1);
        iw_warn("CQ[%u] overrun (depth %u)", cq->obj.id, cq->depth);
        iw_cq_fire_error_locked(cq);
    }
    pthread_mutex_unlock(&cq->lock);
    return -EOVERFLOW;
}

int iw_cq_push(struct iw_cq *cq, const NDK_RESULT_EX *res, bool solicited)
{
    bool sol = solicited || res->Status != STATUS_SUCCESS;
    uint64_t pos;
    int err = iw_cq_claim(cq, &pos);

    if (err)
        return err;
    if (!iw_cq_turn(cq, pos))
        return -EOVERFLOW;
    /* Acquire: the popping thread's reads of the slot we may reuse came before its pops. */
    if (pos - atomic_load_explicit(&cq->pops, memory_order_acquire) >= cq->depth)
        return iw_cq_overrun(cq);
    /* Field by field, not as one struct: where the push is inlined and nothing between the
     * caller's building of its result and the push is a call (tx_lean_complete), each field
     * then goes straight to the slot instead of through the caller's stack. */
    NDK_RESULT_EX *slot = &cq->ring[pos & cq->mask];
    slot->Status = res->Status;
    slot->BytesTransferred = res->BytesTransferred;
    slot->QPContext = res->QPContext;
    slot->RequestContext = res->RequestContext;
    slot->Type = res->Type;
    slot->ProviderErrorCode = res->ProviderErrorCode;
    slot->TypeSpecificCompletionOutput = res->TypeSpecificCompletionOutput;
    /* The system view's counters and the mark have one writer at a time: the turn's holder. */
    ndk_sv_add(&cq->obj.sv->u.cq.completions, 1);
    if (res->Status != STATUS_SUCCESS)
        ndk_sv_add(&cq->obj.sv->u.cq.errors, 1);
    if (sol)
        atomic_store_explicit(&cq->last_sol_at, pos + 1, memory_order_relaxed);
    /* Sequentially consistent, and so is the look at the arm after it: against iw_arm_cq's
     * raise of the arm and its look at pushes, so that an arm either sees this entry or this
     * push sees the arm. The store also releases the entry to the poll and the turn to the next
     * push. */
    atomic_store(&cq->pushes, pos + 1);
    uint64_t w = atomic_load(&cq->armw);
    while (iw_cq_arm_matches(iw_armw_kind(w), sol) && !iw_cq_fire(cq, &w, STATUS_SUCCESS))
        ;                       /* lost to another firer: the word now says NONE */
    return 0;
}

static VOID iw_arm_cq(NDK_CQ *c, ULONG type)
{
    struct iw_cq *cq = to_iw_cq(c);
    unsigned kind = iw_arm_kind(type);
    bool was_busy;
    uint64_t w;

    if (type > NDK_CQ_NOTIFY_SOLICITED)
        return;
    /* A load and a store, not an exchange: a poll counted meanwhile by another thread only
     * starts the next count at one. */
    was_busy = atomic_load_explicit(&cq->short_polls, memory_order_relaxed) >= IW_POLL_ENTER;
    atomic_store_explicit(&cq->short_polls, 0, memory_order_relaxed);
    /* Raise the arm (rule 4: the broadest wins). Sequentially consistent, and so are the looks
     * at pushes and error after it: against a push's publication and its look at the arm
     * (iw_cq_push), and the overrun's latch and its look. An arm already there was raised so
     * before these looks, by an earlier arm. A failed exchange means a firer cleared the
     * arming: this one is then a new arming. */
    uint64_t raised;
    w = atomic_load(&cq->armw);
    do
        raised = kind > iw_armw_kind(w) ? (w & ~(uint64_t)IW_CQ_ARM_MASK) | kind : w;
    while (raised != w && !atomic_compare_exchange_weak(&cq->armw, &w, raised));
    w = raised;
    uint64_t pushes = atomic_load(&cq->pushes);
    if (atomic_load(&cq->error)) {
        /* §8.32: an error latched while unarmed is reported at the next arm of any type. */
        pthread_mutex_lock(&cq->lock);
        if (!cq->error_notified)
            iw_cq_fire_error_locked(cq);
        pthread_mutex_unlock(&cq->lock);
    } else {
        /* The arm is serialized with the pops (§5.4): pops and drained hold still meanwhile. */
        uint64_t pops = atomic_load_explicit(&cq->pops, memory_order_relaxed);
        uint64_t since = atomic_load_explicit(&cq->drained, memory_order_relaxed);
        if (iw_armw_at(w) > since)                /* positions are 64-bit: they never wrap */
            since = iw_armw_at(w);
        /* §5.7 rule 2: completions that arrived since the last notification satisfy at once;
         * those the consumer took before it last found the ring empty do not count. A push
         * that fires this arming first makes the exchange fail: its notification is the one. */
        if (pushes != pops &&
            ((iw_armw_kind(w) == IW_CQ_ARM_ANY && pushes > since) ||
             (iw_armw_kind(w) == IW_CQ_ARM_SOLICITED &&
              atomic_load_explicit(&cq->last_sol_at, memory_order_relaxed) > since)))
            iw_cq_fire(cq, &w, STATUS_SUCCESS);
    }
    /* The consumer is going to wait: the progress thread must watch its QPs' sockets again.
     * Level-triggered epoll reports data that arrived meanwhile at once. The CQ may have stopped
     * counting the consumer as busy (a pause between its polls) while its QPs are still polled:
     * then too, or the notification would wait for the QPs' expiry checks. */
    if (was_busy || atomic_load_explicit(&cq->polled_qps, memory_order_relaxed))
        iw_poll_cq_stop(cq);
}

/* Takes up to n entries. The consumer's thread (§5.4), or a callback; takes no lock but the
 * popping flag. Inlined in iw_cq_get_some: every message's completions come here. */
static inline __attribute__((always_inline)) ULONG iw_cq_pop(struct iw_cq *cq, NDK_RESULT_EX *ex, NDK_RESULT *plain, ULONG n)
{
    ULONG got = 0;

    iw_cq_pop_begin(cq);
    uint64_t pops = atomic_load_explicit(&cq->pops, memory_order_relaxed);
    /* Acquire: the entries counted are whole (iw_cq_push's publication). */
    uint64_t avail = atomic_load_explicit(&cq->pushes, memory_order_acquire) - pops;
    while (got < n && got < avail) {
        const NDK_RESULT_EX *r = &cq->ring[(pops + got) & cq->mask];
        if (ex) {
            ex[got] = *r;
        } else {
            plain[got].Status = r->Status;
            plain[got].BytesTransferred = r->BytesTransferred;
            plain[got].QPContext = r->QPContext;
            plain[got].RequestContext = r->RequestContext;
        }
        got++;
    }
    if (got) {
        /* Release: the slots are read before a producer may reuse them. */
        atomic_store_explicit(&cq->pops, pops + got, memory_order_release);
        ndk_sv_add(&cq->obj.sv->u.cq.polled, got);   /* one popping thread: one writer */
        if (got == avail)
            atomic_store_explicit(&cq->drained, pops + got, memory_order_relaxed);
    }
    iw_cq_pop_end(cq);
    return got;
}

/* A poll that may run the engines came back short: counts it, and returns whether the consumer
 * counts as busy-polling (the CQ came back short IW_POLL_ENTER times in a row, unarmed, each
 * within IW_POLL_GAP_NS of the last). Consumer threads; no lock (see struct iw_cq), so an
 * empty busy poll takes none of the CQ's. */
static bool iw_cq_short_poll(struct iw_cq *cq)
{
    if (iw_armw_kind(atomic_load_explicit(&cq->armw, memory_order_relaxed)) != IW_CQ_ARM_NONE)
        return false;
    unsigned sp = atomic_load_explicit(&cq->short_polls, memory_order_relaxed);
    if (sp >= IW_POLL_ENTER) {
        unsigned u = atomic_load_explicit(&cq->busy_unclocked, memory_order_relaxed) + 1;
        if (u < IW_POLL_CLOCK_EVERY) {
            atomic_store_explicit(&cq->busy_unclocked, u, memory_order_relaxed);
            return true;
        }
    }
    uint64_t now = iw_now_ns();
    atomic_store_explicit(&cq->busy_unclocked, 0, memory_order_relaxed);
    if (now - atomic_load_explicit(&cq->last_short_ns, memory_order_relaxed) > IW_POLL_GAP_NS)
        sp = 0;
    atomic_store_explicit(&cq->last_short_ns, now, memory_order_relaxed);
    if (sp < IW_POLL_ENTER)
        sp++;
    atomic_store_explicit(&cq->short_polls, sp, memory_order_relaxed);
    return sp >= IW_POLL_ENTER;
}

/* Whether the ring was empty as pops was read: every entry counted by pushes had been taken by
 * then (pops is read first, hence acquire). An entry pushed since is one a pop a moment
 * earlier would have missed too; one pushed before the notification that brought a callback here
 * is visible, the queueing of that notification ordering the two. *pushes: the count read. Any
 * thread, no lock. */
static bool iw_cq_seen_empty(struct iw_cq *cq, uint64_t *pushes)
{
    uint64_t pops = atomic_load_explicit(&cq->pops, memory_order_acquire);

    *pushes = atomic_load_explicit(&cq->pushes, memory_order_relaxed);
    return pops == *pushes;
}

/* The part of iw_cq_get that may run the engines: got entries taken so far, pushes the count
 * its look read. Out of line and reached by a tail call, so that a poll that returns before it
 * (a callback's, a full batch) saves no registers for the calls made here. Consumer thread. */
static __attribute__((noinline)) ULONG iw_cq_get_busy(struct iw_cq *cq, NDK_RESULT_EX *ex, NDK_RESULT *plain,
                                                      ULONG n, ULONG got, uint64_t pushes)
{
    bool busy = iw_cq_short_poll(cq);

    /* A consumer no longer busy still runs the QPs that are polled: their sockets wait for it. */
    if (busy || atomic_load_explicit(&cq->polled_qps, memory_order_relaxed)) {
        iw_poll_cq(cq, busy);
        /* Most busy polls find nothing: then the CQ's lock is not taken a second time. */
        if (atomic_load_explicit(&cq->pushes, memory_order_relaxed) != pushes)
            got += iw_cq_pop(cq, ex ? ex + got : NULL, plain ? plain + got : NULL, n - got);
    }
    return got;
}

/* The part of iw_cq_get for a ring with entries: pops, then runs the engines if the batch came
 * back short. Out of line (one copy per result type, iw_cq_get_some_plain and _ex) and reached
 * by a tail call, so that the registers the pop needs are saved only when there is something to
 * pop, not on every empty poll. Consumer thread. */
static inline __attribute__((always_inline)) ULONG iw_cq_get_some(struct iw_cq *cq, NDK_RESULT_EX *ex,
                                                                  NDK_RESULT *plain, ULONG n, uint64_t pushes)
{
    ULONG got = iw_cq_pop(cq, ex, plain, n);

    /* A consumer polling from a notification callback is on the progress thread already. */
    if (got == n || cq->obj.dev->no_poll_progress || iw_progress_on_thread(cq->obj.dev))
        return got;
    return iw_cq_get_busy(cq, ex, plain, n, got, pushes);
}

static __attribute__((noinline)) ULONG iw_cq_get_some_plain(struct iw_cq *cq, NDK_RESULT *plain, ULONG n,
                                                            uint64_t pushes)
{
    return iw_cq_get_some(cq, NULL, plain, n, pushes);
}

static __attribute__((noinline)) ULONG iw_cq_get_some_ex(struct iw_cq *cq, NDK_RESULT_EX *ex, ULONG n,
                                                         uint64_t pushes)
{
    return iw_cq_get_some(cq, ex, NULL, n, pushes);
}

/* NdkGetCqResults(Ex). A busy-polling consumer runs the engines of the CQ's QPs itself when the
 * CQ runs short (poll.c), the way a busy-polled socket or libfabric's manual progress works: an
 * arriving message then costs no wake-up of the progress thread, which on a machine with few
 * cores would have to preempt the spinning consumer. Consumer thread (or a callback). */
static inline __attribute__((always_inline)) ULONG iw_cq_get(struct iw_cq *cq, NDK_RESULT_EX *ex,
                                                             NDK_RESULT *plain, ULONG n)
{
    uint64_t pushes;

    /* An empty ring is seen without the lock: most busy polls find nothing. */
    if (!iw_cq_seen_empty(cq, &pushes))
        return ex ? iw_cq_get_some_ex(cq, ex, n, pushes) : iw_cq_get_some_plain(cq, plain, n, pushes);
    if (cq->obj.dev->no_poll_progress || iw_progress_on_thread(cq->obj.dev))
        return 0;
    return iw_cq_get_busy(cq, ex, plain, n, 0, pushes);
}

static ULONG iw_get_cq_results(NDK_CQ *c, NDK_RESULT res[], ULONG n)
{
    return res ? iw_cq_get(to_iw_cq(c), NULL, res, n) : 0;
}

static ULONG iw_get_cq_results_ex(NDK_CQ *c, NDK_RESULT_EX res[], ULONG n)
{
    return res ? iw_cq_get(to_iw_cq(c), res, NULL, n) : 0;
}

/* The CQ's system-view description (its depth). cq->lock held. */
static void iw_cq_sv_describe_locked(struct iw_cq *cq)
{
    struct ndk_sv_rec *r = iw_sv_desc(&cq->obj);

    if (!r)
        return;
    ndk_sv_begin(r);
    r->u.cq.depth = cq->depth;
    ndk_sv_end(r);
}

/* The ring's slots for depth entries: a power of two, so that a position's slot is a mask away. */
static uint32_t iw_cq_slots(uint32_t depth)
{
    uint32_t n = 1;

    while (n < depth)
        n <<= 1;
    return n;
}

/* Closes the gate and waits for the pushes it let in to be published (or for an overrun, after
 * which none is written: the overrun's pusher held the turn, and those behind it give up
 * before theirs). Returns pushes, final while the gate is closed. cq->lock held. */
static uint64_t iw_cq_gate_close(struct iw_cq *cq)
{
    uint64_t end = atomic_fetch_or(&cq->prod, IW_CQ_GATE) >> IW_CQ_POS_SHIFT;

    for (;;) {
        /* Acquire on both: the publications, or the overrun's release of DEAD after them. */
        if (atomic_load_explicit(&cq->prod, memory_order_acquire) & IW_CQ_DEAD)
            break;
        if (atomic_load_explicit(&cq->pushes, memory_order_acquire) == end)
            break;
        sched_yield();                  /* a pusher with a claimed position was preempted */
    }
    return atomic_load_explicit(&cq->pushes, memory_order_acquire);
}

/* Opens it: the release gives claimers the ring and depth as they are now. cq->lock held. */
static void iw_cq_gate_open(struct iw_cq *cq)
{
    atomic_fetch_and_explicit(&cq->prod, ~(uint64_t)IW_CQ_GATE, memory_order_release);
}

static NTSTATUS iw_resize_cq(NDK_CQ *c, ULONG depth, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct iw_cq *cq = to_iw_cq(c);
    NDK_RESULT_EX *ring, *old;
    uint32_t slots;

    (void)cb;
    (void)ctx;
    if (depth == 0 || depth > IW_MAX_CQ_DEPTH)
        return STATUS_INVALID_PARAMETER;
    slots = iw_cq_slots(depth);
    ring = calloc(slots, sizeof(*ring));
    if (!ring)
        return STATUS_INSUFFICIENT_RESOURCES;
    pthread_mutex_lock(&cq->lock);
    uint64_t pushes = iw_cq_gate_close(cq);
    iw_cq_pop_begin(cq);                /* the ring moves under a poll otherwise */
    uint64_t pops = atomic_load_explicit(&cq->pops, memory_order_relaxed);
    if (pushes - pops > depth) {
        /* §8.31 decision: never drop queued completions; shrinking below them is refused. */
        iw_cq_pop_end(cq);
        iw_cq_gate_open(cq);
        pthread_mutex_unlock(&cq->lock);
        free(ring);
        return STATUS_INVALID_PARAMETER;
    }
    for (uint64_t p = pops; p != pushes; p++)
        ring[p & (slots - 1)] = cq->ring[p & cq->mask];
    old = cq->ring;
    cq->ring = ring;
    cq->mask = slots - 1;
    cq->depth = depth;
    iw_cq_sv_describe_locked(cq);
    iw_cq_pop_end(cq);
    iw_cq_gate_open(cq);
    pthread_mutex_unlock(&cq->lock);
    free(old);
    return STATUS_SUCCESS;
}

static NTSTATUS iw_control_cq_moderation(NDK_CQ *c, ULONG interval, ULONG count)
{
    /* §2.4: the only legal answer without NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED. */
    (void)c;
    (void)interval;
    (void)count;
    return STATUS_NOT_SUPPORTED;
}

static NTSTATUS iw_close_cq(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return iw_obj_close(&to_iw_cq((NDK_CQ *)h)->obj, cb, ctx);
}

static void iw_cq_destroy(struct iw_obj *o)
{
    struct iw_cq *cq = ndk_container_of(o, struct iw_cq, obj);

    atomic_fetch_sub(&o->dev->ncq, 1);
    pthread_mutex_destroy(&cq->lock);
    pthread_mutex_destroy(&cq->qps_lock);   /* empty: every QP holds a reference on its CQs */
    free(cq->ring);
    free(cq);
}

static const struct iw_obj_ops iw_cq_ops = { .name = "CQ", .destroy = iw_cq_destroy };

static const NDK_CQ_DISPATCH iw_cq_dispatch = {
    .NdkCloseCq = iw_close_cq,
    .NdkQueryExtension = iw_query_extension,
    .NdkResizeCq = iw_resize_cq,
    .NdkArmCq = iw_arm_cq,
    .NdkGetCqResults = iw_get_cq_results,
    .NdkControlCqInterruptModeration = iw_control_cq_moderation,
    .NdkGetCqResultsEx = iw_get_cq_results_ex,
};

NTSTATUS iw_create_cq(NDK_ADAPTER *a, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK cb, PVOID cbctx,
                      GROUP_AFFINITY *aff, NDK_FN_CREATE_COMPLETION ccb, PVOID ctx, NDK_CQ **out)
{
    struct iw_adapter *ad = to_iw_adapter(a);
    struct iw_cq *cq;

    (void)aff;    /* a hint (§2.3); the progress thread runs notifications */
    (void)ccb;
    (void)ctx;
    if (!out || depth == 0 || depth > IW_MAX_CQ_DEPTH)
        return STATUS_INVALID_PARAMETER;
    if (atomic_fetch_add(&ad->dev->ncq, 1) >= IW_MAX_CQ_COUNT) {
        atomic_fetch_sub(&ad->dev->ncq, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq)
        cq->ring = calloc(iw_cq_slots(depth), sizeof(*cq->ring));
    if (!cq || !cq->ring) {
        if (cq)
            free(cq);
        atomic_fetch_sub(&ad->dev->ncq, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    iw_obj_init(&cq->obj, &iw_cq_ops, IW_OBJ_CQ, ad, &cq->ndk.Header, &iw_cq_dispatch);
    pthread_mutex_init(&cq->lock, NULL);
    pthread_mutex_init(&cq->qps_lock, NULL);
    ndk_list_init(&cq->qps);
    cq->depth = depth;
    cq->mask = iw_cq_slots(depth) - 1;
    atomic_init(&cq->armw, IW_CQ_ARM_NONE);
    atomic_init(&cq->popping, false);
    cq->notify_cb = cb;
    cq->notify_ctx = cbctx;
    cq->notify_work.fn = iw_cq_notify_work;
    ndk_list_init(&cq->notify_work.link);
    pthread_mutex_lock(&cq->lock);
    iw_cq_sv_describe_locked(cq);
    pthread_mutex_unlock(&cq->lock);
    *out = &cq->ndk;
    return STATUS_SUCCESS;
}
