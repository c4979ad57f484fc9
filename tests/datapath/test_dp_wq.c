/* test_dp_wq: the work-queue ring (wq.c) against a plain model queue. Depths 1 to 13 (most of
 * them not powers of two, where a slot that wraps wrongly lands on another entry) and one of a
 * full chunk multiple, random pushes (whole WQEs and receives), pops, drops and resizes, with a
 * side state per slot as the SQ has. After every step: count and full, each queued entry's
 * request context and side state through iw_wq_at / iw_wq_slot / iw_wq_side, which slots
 * iw_wq_slot_queued calls queued, and that a reserved push lands at iw_wq_slot(q, count).
 *   take  the RQ's taker (iw_wq_take_*): a poster thread pushing receives under a mutex (qp->lock's
 *         part), reaping first, against a taker thread taking them without it, at depths 1 to
 *         13 and 64: every receive taken once, in order, with the SGEs it was posted with; the
 *         poster never finds the queue full while fewer than depth are outstanding; a reset
 *         and a flush (pop everything) with the taker stopped leave it consistent.
 * Usage: test_dp_wq [take] */
#include "dptest.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#define MAXD 64u

struct model {
    uintptr_t ctx[2 * MAXD];
    uint32_t head, count;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* The side state a slot carries: the context of the entry in it, so a slot mix-up shows. */
static uintptr_t *side(struct iw_wq *q, uint32_t slot)
{
    return iw_wq_side(q, slot);
}

static void check(struct iw_wq *q, const struct model *m, uint32_t depth)
{
    bool queued[MAXD] = { false };

    CHECK_EQ(q->count, m->count);
    CHECK_EQ(q->depth, depth);
    CHECK_EQ(iw_wq_full(q), m->count == depth);
    CHECK(q->head < depth);
    for (uint32_t i = 0; i < m->count; i++) {
        uint32_t slot = iw_wq_slot(q, i);
        CHECK(slot < depth);
        CHECK(!queued[slot]);
        queued[slot] = true;
        CHECK_EQ((uintptr_t)iw_wq_at(q, i)->request_context, m->ctx[m->head + i]);
        CHECK_EQ(*side(q, slot), m->ctx[m->head + i]);
        CHECK_EQ(slot, (q->head + i) % depth);
    }
    for (uint32_t s = 0; s < depth; s++)
        CHECK_EQ(iw_wq_slot_queued(q, s), queued[s]);
}

static void push(struct iw_wq *q, struct model *m, uint32_t depth, uintptr_t ctx)
{
    int err;

    if (rnd(2)) {
        struct iw_wqe w;
        iw_wqe_clear(&w);
        memset(w.sge, 0, sizeof w.sge);
        w.op = IW_WR_SEND;
        w.request_context = (void *)ctx;
        w.nsge = 1;
        w.sge[0].Length = 8;
        w.length = 8;
        err = iw_wq_reserve(q);
        if (!err) {
            uint32_t slot = iw_wq_slot(q, q->count);
            err = iw_wq_push(q, &w);
            CHECK_EQ(err, 0);
            CHECK_EQ((uintptr_t)iw_wq_slot_ptr(q, slot), (uintptr_t)iw_wq_at(q, q->count - 1));
        }
    } else {
        NDK_SGE sge = { .Length = 16 };
        err = iw_wq_push_receive(q, (void *)ctx, &sge, 1, 16, 0);
    }
    if (m->count == depth) {
        CHECK_EQ(err, -ENOSPC);
        return;
    }
    CHECK_EQ(err, 0);
    *side(q, iw_wq_slot(q, q->count - 1)) = ctx;
    if (m->head + m->count == 2 * MAXD) {             /* keep the model's window in its array */
        memmove(m->ctx, m->ctx + m->head, m->count * sizeof m->ctx[0]);
        m->head = 0;
    }
    m->ctx[m->head + m->count++] = ctx;
}

static void take(struct iw_wq *q, struct model *m)
{
    int err;

    if (m->count)
        *side(q, q->head) = 0;                       /* the owner clears what the side holds */
    if (rnd(2)) {
        struct iw_wqe w;
        err = iw_wq_pop(q, &w);
        if (!err) {
            CHECK_EQ((uintptr_t)w.request_context, m->ctx[m->head]);
            iw_wq_entry_release(&w);
        }
    } else {
        err = iw_wq_drop(q);
    }
    if (!m->count) {
        CHECK_EQ(err, -ENOBUFS);
        return;
    }
    CHECK_EQ(err, 0);
    m->head++;
    m->count--;
}

static void run(uint32_t depth, unsigned steps)
{
    struct iw_wq q;
    struct model m = { .head = 0 };
    uintptr_t next = 1;

    CHECK_EQ(iw_wq_init(&q, depth, 4, sizeof(uintptr_t)), 0);
    for (unsigned k = 0; k < steps; k++) {
        uint32_t r = rnd(100);
        if (r < 50)
            push(&q, &m, depth, next++);
        else if (r < 97)
            take(&q, &m);
        else {
            /* A new depth at or above the count: entries move in order, head back to 0. */
            uint32_t nd = m.count < MAXD ? m.count + 1 + rnd(MAXD - m.count) : MAXD;
            if (m.count && rnd(4) == 0) {
                CHECK_EQ(iw_wq_resize(&q, m.count - 1), -EINVAL);
            } else {
                CHECK_EQ(iw_wq_resize(&q, nd), 0);
                depth = nd;                          /* side state moves with the slot's bytes */
                CHECK_EQ(q.head, 0);
            }
        }
        check(&q, &m, depth);
    }
    iw_wq_free(&q);
}

/* ---- the taker ---- */

#define TAKE_N 200000u

struct take_run {
    struct iw_wq q;
    pthread_mutex_t lock;          /* plays qp->lock: pushes, reaps, resets and flushes */
    uint32_t depth;
    atomic_uint took;              /* receives the taker completed */
    uint32_t stop_at;              /* the taker stops after this many (a reset or flush follows) */
};

/* A receive's SGEs name its sequence number, so a torn or misplaced entry shows. */
static void recv_sges(NDK_SGE *sge, uint32_t n, uint32_t seq)
{
    for (uint32_t i = 0; i < n; i++) {
        sge[i].VirtualAddress = (PVOID)(uintptr_t)(((uint64_t)seq << 8) | i);
        sge[i].Length = seq ^ i;
        sge[i].MemoryRegionToken = seq + i;
    }
}

static void *taker(void *arg)
{
    struct take_run *t = arg;
    uint32_t seq = atomic_load(&t->took);

    while (seq < t->stop_at) {
        const struct iw_wqe *w = iw_wq_take_peek(&t->q);
        if (!w) {
            sched_yield();
            continue;
        }
        NDK_SGE want[3];
        uint32_t n = seq % 4;
        recv_sges(want, n, seq);
        CHECK_MSG((uintptr_t)w->request_context == seq && w->op == IW_WR_RECEIVE && w->nsge == n,
                  "depth %u: took context %lu (%u SGEs), expected %u", t->depth,
                  (unsigned long)(uintptr_t)w->request_context, w->nsge, seq);
        CHECK_MSG(!n || !memcmp(w->sge, want, n * sizeof want[0]), "depth %u: receive %u's SGEs torn", t->depth, seq);
        CHECK_MSG(w->length == seq + 1u && w->posted_ns == seq + 2u, "depth %u: receive %u's fields torn", t->depth,
                  seq);
        iw_wq_take_next(&t->q);
        atomic_store(&t->took, ++seq);
    }
    return NULL;
}

/* Posts receives seq .. end-1, never more than depth outstanding (as a consumer keeps its RQ). */
static void poster(struct take_run *t, uint32_t *seq, uint32_t end)
{
    while (*seq < end) {
        if (*seq - atomic_load(&t->took) >= t->depth) {
            sched_yield();
            continue;
        }
        NDK_SGE sge[3];
        uint32_t n = *seq % 4;
        recv_sges(sge, n, *seq);
        pthread_mutex_lock(&t->lock);
        iw_wq_reap(&t->q);
        /* Fewer than depth outstanding: the reap must have made room for it. */
        CHECK_MSG(iw_wq_push_receive(&t->q, (void *)(uintptr_t)*seq, sge, n, *seq + 1u, *seq + 2u) == 0,
                  "depth %u: push of %u refused with %u outstanding", t->depth, *seq, *seq - atomic_load(&t->took));
        pthread_mutex_unlock(&t->lock);
        (*seq)++;
    }
}

/* Nothing queued: no chunk but the spare is kept, and the spare is zero (a push builds a
 * receive in its free slot as it finds it). */
static void empty_ok(struct iw_wq *q, uint32_t depth)
{
    for (uint32_t k = 0; k < (depth + IW_WQ_CHUNK - 1) / IW_WQ_CHUNK; k++)
        CHECK_MSG(!q->chunk[k], "depth %u: chunk %u kept with nothing queued", depth, k);
    CHECK_MSG(q->spare, "depth %u: no spare chunk after the queue emptied", depth);
    const uint8_t *b = (const uint8_t *)q->spare->slots;
    for (size_t i = 0; i < (size_t)IW_WQ_CHUNK * q->stride; i++)
        CHECK_MSG(!b[i], "depth %u: byte %zu of a free slot is not zero", depth, i);
}

static void take_run(uint32_t depth)
{
    struct take_run t;
    pthread_t th;
    uint32_t seq = 0;

    memset(&t, 0, sizeof t);
    pthread_mutex_init(&t.lock, NULL);
    t.depth = depth;
    CHECK_EQ(iw_wq_init(&t.q, depth, 3, 0), 0);
    /* Receives posted before the taker exists (before the connection), then the reset. */
    poster(&t, &seq, depth / 2);
    pthread_mutex_lock(&t.lock);
    iw_wq_take_reset(&t.q);
    pthread_mutex_unlock(&t.lock);
    /* Half the run, then the taker stops (a stop), a reset, and the second half. */
    for (int half = 0; half < 2; half++) {
        t.stop_at = (uint32_t)(half + 1) * (TAKE_N / 2);
        CHECK(pthread_create(&th, NULL, taker, &t) == 0);
        poster(&t, &seq, t.stop_at);
        pthread_join(th, NULL);
        CHECK_EQ(atomic_load(&t.took), t.stop_at);
        pthread_mutex_lock(&t.lock);
        if (half == 0) {
            iw_wq_take_reset(&t.q);
            CHECK_EQ(t.q.count, 0);               /* every one posted was taken, then reaped */
            empty_ok(&t.q, depth);
        } else {
            /* The flush after the stop: reap, then what is left is popped. Post a few that
             * nobody takes first. */
            iw_wq_reap(&t.q);
            CHECK_EQ(t.q.count, 0);
            for (uint32_t i = 0; i < depth; i++)
                CHECK_EQ(iw_wq_push_receive(&t.q, (void *)(uintptr_t)(seq + i), NULL, 0, 0, 0), 0);
            iw_wq_reap(&t.q);                     /* nothing taken: nothing to drop */
            CHECK_EQ(t.q.count, depth);
            struct iw_wqe w;
            for (uint32_t i = 0; i < depth; i++) {
                CHECK_EQ(iw_wq_pop(&t.q, &w), 0);
                CHECK_EQ((uintptr_t)w.request_context, seq + i);
            }
            CHECK_EQ(iw_wq_pop(&t.q, &w), -ENOBUFS);
        }
        pthread_mutex_unlock(&t.lock);
    }
    empty_ok(&t.q, depth);
    iw_wq_free(&t.q);
    pthread_mutex_destroy(&t.lock);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "take")) {
        for (uint32_t d = 1; d <= 13; d++)
            take_run(d);
        take_run(MAXD);
        printf("test_dp_wq take: ok\n");
        return 0;
    }
    for (uint32_t d = 1; d <= 13; d++)
        run(d, 20000);
    run(16, 20000);
    run(MAXD, 20000);
    printf("test_dp_wq: ok\n");
    return 0;
}
