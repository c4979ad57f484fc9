/* test_dp_wq: the work-queue ring (wq.c) against a plain model queue. Depths 1 to 13 (most of
 * them not powers of two, where a slot that wraps wrongly lands on another entry) and one of a
 * full chunk multiple, random pushes (whole WQEs and receives), pops, drops and resizes, with a
 * side state per slot as the SQ has. After every step: count and full, each queued entry's
 * request context and side state through iw_wq_at / iw_wq_slot / iw_wq_side, which slots
 * iw_wq_slot_queued calls queued, and that a reserved push lands at iw_wq_slot(q, count).
 * Usage: test_dp_wq */
#include "dptest.h"

#include <errno.h>
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

int main(void)
{
    for (uint32_t d = 1; d <= 13; d++)
        run(d, 20000);
    run(16, 20000);
    run(MAXD, 20000);
    printf("test_dp_wq: ok\n");
    return 0;
}
