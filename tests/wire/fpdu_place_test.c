/* The deframer with the payload CRC left to the placer (IW_FPDU_RX_CALLER_CRC), as rx.c drives
 * it: a stream of tagged FPDUs with CRC on, fed in random pieces down to single bytes, each
 * PAYLOAD chunk placed partly by iw_fpdu_rx_place_copy() and partly by iw_fpdu_rx_place_skip()
 * (bytes already in place), must verify every CRC and place every byte. A flipped payload bit
 * must fail that FPDU's CRC whichever way its byte was placed; a caller that leaves bytes
 * unplaced gets an internal error at the next step; with CRC off nothing is owed and the copy
 * is a plain copy. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fpdu.h"
#include "testlib.h"

#define WIRE_RND_SEED 0xD1B54A32D192ED03ull
#include "wire_rnd.h"

#define NFPDU   12
#define MAXPAY  9000u
#define STAG    0x1234u

struct stream {
    uint8_t *b;
    size_t n;
    size_t pay_at[NFPDU];       /* stream offset of each FPDU's first payload byte */
    uint32_t pay_len[NFPDU];
    size_t total_pay;
};

/* Tagged Write segments aimed at consecutive offsets of one target, lengths from 0 (a bare
 * header) to MAXPAY, including ones that need a pad. */
static void build(struct stream *s, const uint8_t *payload, bool crc)
{
    size_t cap = NFPDU * (MAXPAY + 64), to = 0;

    s->b = malloc(cap);
    CHECK(s->b);
    s->n = 0;
    for (int i = 0; i < NFPDU; i++) {
        uint32_t len = i == 0 ? 0 : i == 1 ? 1 : i == 2 ? 3 : (uint32_t)(rnd() % MAXPAY);
        struct iw_fpdu_hdr h = { .opcode = IW_OP_WRITE, .last = i == NFPDU - 1, .stag = STAG, .to = to };
        struct iw_iov iov = { payload + to, len };
        int n = iw_fpdu_build(&h, &iov, 1, crc, s->b + s->n, cap - s->n);
        CHECK_MSG(n > 0, "iw_fpdu_build: %d", n);
        s->pay_at[i] = s->n + (size_t)iw_fpdu_hdr_len(&h);
        s->pay_len[i] = len;
        s->n += (size_t)n;
        to += len;
    }
    s->total_pay = to;
}

enum { PLACE_ALL = 0, PLACE_LEAVE_ONE = 1 };

/* Feeds the stream in pieces of 1..maxpiece bytes (1: every byte alone) and places each chunk
 * into dst at its tagged offset, cutting it at a random point into a copied and a skipped
 * part (skipped bytes are put in place by the test first, as readv() would have). Returns the
 * number of ENDs with a verified CRC; *err gets the error event's reason, if any. */
static int feed(const struct stream *s, bool crc, size_t maxpiece, int how, uint8_t *dst,
                enum iw_fpdu_rx_reason *err)
{
    struct iw_fpdu_rx rx;
    struct iw_fpdu_rx_cfg cfg = { .crc = crc, .check_seq = true };
    size_t pos = 0;
    int ends = 0;

    iw_fpdu_rx_init(&rx, &cfg);
    *err = IW_FPDU_RXERR_NONE;
    while (pos < s->n) {
        size_t piece = 1 + (maxpiece > 1 ? (size_t)(rnd() % maxpiece) : 0);
        const uint8_t *in = s->b + pos;
        size_t len = piece < s->n - pos ? piece : s->n - pos, off = 0;
        while (off < len) {
            struct iw_fpdu_event ev;
            size_t used = 0;
            enum iw_fpdu_ev_type t = iw_fpdu_rx_step_ex(&rx, in + off, len - off, IW_FPDU_RX_CALLER_CRC, &used, &ev);
            off += used;
            if (t == IW_FPDU_EV_NEED_MORE)
                break;
            if (t == IW_FPDU_EV_ERROR) {
                *err = ev.err->reason;
                return ends;
            }
            if (t == IW_FPDU_EV_END) {
                ends += ev.crc_checked;
                continue;
            }
            if (t != IW_FPDU_EV_PAYLOAD)
                continue;
            CHECK_EQ(ev.crc_owed, crc);
            uint8_t *to = dst + ev.hdr->to + ev.off;
            size_t placed = how == PLACE_LEAVE_ONE && ev.len ? ev.len - 1u : ev.len;
            size_t cut = (size_t)(rnd() % (placed + 1));
            memcpy(to + cut, ev.data + cut, ev.len - cut);
            iw_fpdu_rx_place_copy(&rx, to, ev.data, cut);
            iw_fpdu_rx_place_skip(&rx, to + cut, placed - cut);
        }
        pos += len;
    }
    return ends;
}

int main(void)
{
    uint8_t *payload = malloc(NFPDU * MAXPAY), *dst = malloc(NFPDU * MAXPAY);
    CHECK(payload && dst);
    for (size_t i = 0; i < NFPDU * MAXPAY; i++)
        payload[i] = (uint8_t)rnd();

    static const size_t pieces[] = { 1, 7, 200, 5000, 100000 };
    for (int round = 0; round < 40; round++) {
        struct stream s;
        enum iw_fpdu_rx_reason err;
        build(&s, payload, true);
        for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
            memset(dst, 0, s.total_pay);
            int ends = feed(&s, true, pieces[p], PLACE_ALL, dst, &err);
            CHECK_MSG(err == IW_FPDU_RXERR_NONE, "round %d pieces %zu: %s", round, pieces[p], iw_fpdu_rx_reason_str(err));
            CHECK_EQ(ends, NFPDU);
            CHECK_MSG(memcmp(dst, payload, s.total_pay) == 0, "round %d pieces %zu: payload misplaced", round, pieces[p]);
        }

        /* One flipped payload bit fails its FPDU's CRC, and only that FPDU's. */
        int victim = 3 + (int)(rnd() % (NFPDU - 3));
        if (s.pay_len[victim]) {
            size_t at = s.pay_at[victim] + (size_t)(rnd() % s.pay_len[victim]);
            uint8_t bit = (uint8_t)(1u << (rnd() % 8));
            s.b[at] ^= bit;
            for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
                int ends = feed(&s, true, pieces[p], PLACE_ALL, dst, &err);
                CHECK_MSG(err == IW_FPDU_RXERR_CRC, "round %d pieces %zu: corrupt FPDU %d gave %s", round, pieces[p],
                          victim, iw_fpdu_rx_reason_str(err));
                CHECK_EQ(ends, victim);
            }
        }
        free(s.b);

        /* Leaving bytes owed is the caller's bug: the next step stops the stream. */
        build(&s, payload, true);
        feed(&s, true, 100000, PLACE_LEAVE_ONE, dst, &err);
        CHECK_MSG(err == IW_FPDU_RXERR_INTERNAL, "round %d: unplaced bytes gave %s", round, iw_fpdu_rx_reason_str(err));
        free(s.b);

        /* CRC off: nothing owed, the copy still copies, and leaving bytes is harmless. */
        build(&s, payload, false);
        memset(dst, 0, s.total_pay);
        int ends = feed(&s, false, 3000, PLACE_LEAVE_ONE, dst, &err);
        CHECK_MSG(err == IW_FPDU_RXERR_NONE, "round %d, CRC off: %s", round, iw_fpdu_rx_reason_str(err));
        CHECK_EQ(ends, 0);
        CHECK(memcmp(dst, payload, s.total_pay) == 0);
        free(s.b);
    }
    free(payload);
    free(dst);
    printf("fpdu_place: ok\n");
    return 0;
}
