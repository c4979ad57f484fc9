/* The iwarp provider's STag table on its own (stag.c): random keys and indices, reuse of freed
 * slots before growth, a table sized by the live count (issue 13 item 2; RFC 5040 §8). */
#include "stag.h"
#include "testlib.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Objects are opaque to the table: distinct addresses are enough. */
static char objs[20000];
#define OBJ(i) ((struct iw_obj *)(void *)&objs[i])

/* The share of consecutive pairs whose index step is the most common step: 1.0 for a counter,
 * about 1/free-slots for random picks. */
static double top_step_share(const uint32_t *idx, size_t n)
{
    static uint32_t count[1u << 17];
    memset(count, 0, sizeof count);
    uint32_t top = 0;
    for (size_t i = 1; i < n; i++) {
        uint32_t step = (idx[i] - idx[i - 1]) & ((1u << 17) - 1);
        if (++count[step] > top)
            top = count[step];
    }
    return (double)top / (double)(n - 1);
}

static void churn_one_alive(void)
{
    struct iw_stag_table t = { .nfree = 0 };
    enum { CYCLES = 100000 };
    static uint32_t idx[CYCLES];
    bool key_seen[256] = { false };
    uint32_t keep, last_of_slot[IW_STAG_MIN_SLOTS] = { 0 };

    CHECK_EQ(iw_stag_alloc(&t, OBJ(0), &keep), 0);
    for (int i = 0; i < CYCLES; i++) {
        uint32_t s;
        CHECK_EQ(iw_stag_alloc(&t, OBJ(1), &s), 0);
        CHECK(s >> 8 != 0);
        CHECK(s != keep);
        CHECK(iw_stag_find(&t, s) == OBJ(1));
        idx[i] = s >> 8;
        key_seen[s & 0xff] = true;
        /* A slot never hands out the token it handed out last (a stale STag stays stale). */
        CHECK(idx[i] < IW_STAG_MIN_SLOTS);
        CHECK(last_of_slot[idx[i]] != s);
        last_of_slot[idx[i]] = s;
        iw_stag_free(&t, s, OBJ(1));
        CHECK(iw_stag_find(&t, s) == NULL);
    }
    int keys = 0;
    for (int k = 0; k < 256; k++)
        keys += key_seen[k];
    double share = top_step_share(idx, CYCLES);
    printf("churn: %d cycles, 1 alive: %d distinct keys, table %u slots, top index step share %.4f\n", CYCLES,
           keys, t.cap, share);
    CHECK_MSG(keys >= 200, "only %d distinct keys in %d registrations", keys, CYCLES);
    CHECK_MSG(t.cap <= IW_STAG_MIN_SLOTS, "the table grew to %u slots with 2 live tokens", t.cap);
    CHECK_MSG(share < 0.05, "index steps repeat (%.3f of pairs share one step): predictable", share);
    CHECK_EQ(iw_stag_live(&t), 1);
    iw_stag_table_destroy(&t);
}

static void grow_and_shrink_live(void)
{
    struct iw_stag_table t = { .nfree = 0 };
    enum { LIVE = 10000 };
    static uint32_t s[LIVE];
    static uint32_t order[LIVE];

    for (int i = 0; i < LIVE; i++) {
        CHECK_EQ(iw_stag_alloc(&t, OBJ(i), &s[i]), 0);
        order[i] = s[i] >> 8;
    }
    for (int i = 0; i < LIVE; i++)
        CHECK(iw_stag_find(&t, s[i]) == OBJ(i));
    printf("grow: %d live -> %u slots; top index step share %.4f\n", LIVE, t.cap, top_step_share(order, LIVE));
    CHECK_MSG(t.cap <= 4u * LIVE, "%u slots for %d live tokens", t.cap, LIVE);
    CHECK(top_step_share(order, LIVE) < 0.05);
    uint32_t cap = t.cap;
    /* Freeing and churning never grows a table that has room. */
    for (int i = 0; i < LIVE; i += 2)
        iw_stag_free(&t, s[i], OBJ(i));
    for (int r = 0; r < 50000; r++) {
        uint32_t x;
        CHECK_EQ(iw_stag_alloc(&t, OBJ(0), &x), 0);
        iw_stag_free(&t, x, OBJ(0));
    }
    CHECK_EQ(t.cap, cap);
    CHECK_EQ(iw_stag_live(&t), LIVE / 2);
    /* Freeing with a stale object or an unknown index changes nothing. */
    iw_stag_free(&t, s[1], OBJ(0));
    iw_stag_free(&t, 0, OBJ(1));
    iw_stag_free(&t, 0xffffff00u, OBJ(1));
    CHECK(iw_stag_find(&t, s[1]) == OBJ(1));
    iw_stag_table_destroy(&t);
}

static void rekey(void)
{
    struct iw_stag_table t = { .nfree = 0 };
    uint32_t s, prev;
    bool seen[256] = { false };
    int keys = 0;

    CHECK_EQ(iw_stag_alloc(&t, OBJ(5), &s), 0);
    for (int i = 0; i < 5000; i++) {
        prev = s;
        s = iw_stag_rekey(&t, s);
        CHECK(s != 0 && s != prev);
        CHECK_EQ(s >> 8, prev >> 8);
        if (!seen[s & 0xff]) {
            seen[s & 0xff] = true;
            keys++;
        }
    }
    CHECK(keys >= 200);
    CHECK_EQ(iw_stag_rekey(&t, 0), 0);                      /* the privileged index */
    iw_stag_free(&t, s, OBJ(5));
    CHECK_EQ(iw_stag_rekey(&t, s), 0);                      /* a free slot */
    iw_stag_table_destroy(&t);
}

int main(void)
{
    churn_one_alive();
    grow_and_shrink_live();
    rekey();
    printf("ok\n");
    return 0;
}
