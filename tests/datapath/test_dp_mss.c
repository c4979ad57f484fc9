/* test_dp_mss: segments follow the socket's MSS as it is now (tx.c tx_mss_refresh,
 * RFC 5044 §4). Over loopback TCP, QPs set up with an MSS of 1460 must find the real one
 * at their first multi-segment message and send Writes, Sends and Read Responses in segments of
 * that size: far fewer FPDUs, the data intact, every segment of a Read Response the same size
 * (the requester's look-ahead never misses), and the MSS read less and less often once it
 * stays the same. Over a socket pair, which has no MSS, the size stays what the connection set.
 * Usage: test_dp_mss crc|nocrc */
#include "dptest.h"

#include <string.h>

#define MSG  (256u << 10)             /* bytes per message */
#define ROUNDS 12u                    /* past the second read of the MSS (DP_TX_MSS_EVERY) */
#define MORE 120u                     /* Writes after them: the reads of the MSS grow rare */

static struct dpt_env env;
static struct dpt_mr ma, mb;

/* What side's engines hold, each read under its own mutex (they run on the harness thread):
 * TX's ULPDU limit and reads of the MSS, RX's FPDUs received and Read Response segments laid
 * out wrongly ahead. */
struct seen {
    uint32_t mulpdu;
    uint64_t mss_reads;
    uint64_t fpdus;
    uint32_t spec_miss;
};

static struct seen seen(int side)
{
    struct iw_dp *dp = env.s[side].qp->dp;
    struct seen v;

    dp_tx_own_wait(dp);
    v.mulpdu = dp->tx.mulpdu;
    v.mss_reads = dp->tx.mss_reads;
    dp_tx_own_release(dp);
    dp_rx_own_wait(dp);
    v.fpdus = dp->rx.fr.fpdus;
    v.spec_miss = dp->rx.spec_miss;
    dp_rx_own_release(dp);
    return v;
}

static void expect(int side, NDK_OPERATION_TYPE type, void *ctx, size_t bytes)
{
    dpt_expect(&env, side, type, ctx, STATUS_SUCCESS, bytes);
}

/* One Write, one Send and one Read of MSG bytes each; returns the FPDUs B received for the
 * Write and the Send. */
static uint64_t one_round(uint32_t seed)
{
    NDK_SGE s = dpt_sge(&ma, 0, MSG), r = dpt_sge(&mb, MSG, MSG), rd = dpt_sge(&ma, MSG, MSG);
    uint64_t f0 = seen(1).fpdus;

    dpt_fill(ma.p, MSG, seed);
    memset(mb.p, 0, 2 * (size_t)MSG);
    CHECK_STATUS(iw_post_write(env.s[0].ndk, (void *)1, &s, 1, (uint64_t)(uintptr_t)mb.p, mb.token, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeWrite, (void *)1, 0);
    CHECK_STATUS(iw_post_receive(env.s[1].ndk, (void *)2, &r, 1), STATUS_SUCCESS);
    CHECK_STATUS(iw_post_send(env.s[0].ndk, (void *)3, &s, 1, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeSend, (void *)3, 0);
    expect(1, NdkOperationTypeReceive, (void *)2, MSG);
    uint64_t frames = seen(1).fpdus - f0;
    CHECK(dpt_check(mb.p, MSG, seed));
    CHECK(dpt_check(mb.p + MSG, MSG, seed));

    /* B answers a Read with its own segments. */
    dpt_fill(mb.p, MSG, seed + 1000);
    memset(ma.p + MSG, 0, MSG);
    CHECK_STATUS(iw_post_read(env.s[0].ndk, (void *)4, &rd, 1, (uint64_t)(uintptr_t)mb.p, mb.token, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeRead, (void *)4, 0);
    CHECK(dpt_check(ma.p + MSG, MSG, seed + 1000));
    return frames;
}

static void setup(bool crc, bool tcp)
{
    struct dpt_conn_opts o;
    dpt_conn_opts_default(&o);
    o.crc = crc;
    o.tcp = tcp;
    dpt_env_init(&env);
    dpt_mr_reg(&env, &ma, 2 * (size_t)MSG, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ);
    dpt_mr_reg(&env, &mb, 2 * (size_t)MSG,
               NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ);
    dpt_connect(&env, &o);
}

static void teardown(void)
{
    dpt_disconnect(&env);
    dpt_mr_free(&env, &ma);
    dpt_mr_free(&env, &mb);
    dpt_env_fini(&env);
}

int main(int argc, char **argv)
{
    CHECK_MSG(argc == 2, "usage: test_dp_mss crc|nocrc");
    bool crc = !strcmp(argv[1], "crc");
    uint32_t initial = iw_fpdu_mulpdu(1460, false);     /* the harness's MSS (dptest.h) */
    /* Payload of a Send segment at that size: a message of MSG bytes takes at least this many. */
    uint64_t small_frames = MSG / iw_fpdu_max_payload(IW_OP_SEND, initial);

    /* A socket pair has no MSS: nothing changes. */
    setup(crc, false);
    CHECK_EQ(seen(0).mulpdu, initial);
    uint64_t frames = one_round(1);
    CHECK_EQ(seen(0).mulpdu, initial);
    CHECK_EQ(seen(1).mulpdu, initial);
    CHECK(frames >= 2 * small_frames);
    teardown();

    /* Loopback TCP: Linux reports at least 32 KiB there (half the first window, 64 KiB MTU). */
    setup(crc, true);
    CHECK_EQ(seen(0).mulpdu, initial);
    for (uint32_t i = 0; i < ROUNDS; i++) {
        frames = one_round(100 + i);
        CHECK(seen(0).mulpdu > 8 * initial);
        CHECK(seen(1).mulpdu > 8 * initial);     /* B's Read Responses */
        CHECK_MSG(frames * 8 < 2 * small_frames, "round %u: %llu FPDUs for two messages of %u bytes", i,
                  (unsigned long long)frames, MSG);
    }
    CHECK_EQ(seen(0).spec_miss, 0u);
    /* The interval doubles while the MSS stays put: MORE further Writes read it a few times,
     * not once every 8 messages. */
    CHECK(seen(0).mss_reads >= 2);
    for (uint32_t i = 0; i < MORE; i++) {
        NDK_SGE s = dpt_sge(&ma, 0, MSG);
        CHECK_STATUS(iw_post_write(env.s[0].ndk, (void *)5, &s, 1, (uint64_t)(uintptr_t)mb.p, mb.token, 0),
                     STATUS_SUCCESS);
        expect(0, NdkOperationTypeWrite, (void *)5, 0);
    }
    uint64_t reads = seen(0).mss_reads;
    CHECK_MSG(reads <= 9, "%llu reads of the MSS for %u multi-segment messages", (unsigned long long)reads,
              2 * ROUNDS + MORE);
    CHECK(dpt_mr_guard_ok(&ma));
    CHECK(dpt_mr_guard_ok(&mb));
    printf("dp_mss %s: ok (ULPDU at most %u bytes, was %u; %llu FPDUs for the last Write and Send; %llu reads of "
           "the MSS for %u messages)\n", argv[1], seen(0).mulpdu, initial, (unsigned long long)frames,
           (unsigned long long)reads, 2 * ROUNDS + MORE);
    teardown();
    return 0;
}
