/* Resumability: every capture stream and every worked example, fed to the MPA parser and FPDU
 * deframer split at every possible point and one byte at a time, must decode exactly as in
 * one piece: same MPA frame, same FPDUs field by field, same payload bytes at the same
 * offsets, same error at the same place.
 *
 * Streams up to SMALL bytes are decoded from scratch for every split point. Longer ones (the
 * 100 KB perftest captures) use snapshots: the decoder is plain data, so it is copied at every
 * FPDU boundary of a reference run; a split at k inside FPDU i is then replayed from the
 * boundary before it to the second boundary after it and must end in exactly the snapshot
 * taken there, with the same FPDU records. Since the decoder is deterministic, equal state at
 * that boundary means the rest of the stream decodes identically too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capdir.h"
#include "crc32c.h"
#include "examples.h"
#include "pcap.h"
#include "streamdec.h"
#include "testlib.h"

#define SMALL 16384

struct stream {
    char name[160];
    int kind;                   /* IW_MPA_REQUEST / IW_MPA_REPLY, or 0 for bare FPDUs */
    struct iw_fpdu_rx_cfg cfg;
    const uint8_t *data;
    size_t len;
    unsigned flags;             /* deframer flags of the run (IW_FPDU_RX_WHOLE) */
};

static uint64_t whole_frames;   /* FRAME events over every IW_FPDU_RX_WHOLE run */
static uint64_t ended_frames;   /* of them, those that took their trailer (IW_FPDU_RX_END runs) */

#define WIRE_RND_SEED 0x2545F4914F6CDD1Dull
#include "wire_rnd.h"

static void expect_same(const struct stream *s, const char *how, const struct wsd_log *ref, const struct wsd_log *got)
{
    char why[256];
    CHECK_MSG(wsd_log_equal(ref, got, why, sizeof why), "%s: %s differs from one-shot: %s", s->name, how, why);
}

static void run_pieces(const struct stream *s, const size_t *cuts, size_t ncuts, struct wsd_log *log)
{
    struct wsd *d = malloc(sizeof *d);
    CHECK(d != NULL);
    wsd_init(d, s->kind, IW_MPA_PD_MAX_RFC, &s->cfg);
    d->flags = s->flags;
    size_t pos = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : s->len;
        /* Each piece in its own exact-size allocation, so ASan sees any read beyond it. */
        uint8_t *piece = malloc(end - pos + 1);
        CHECK(piece != NULL);
        memcpy(piece, s->data + pos, end - pos);
        wsd_feed(d, log, piece, end - pos);
        free(piece);
        pos = end;
    }
    wsd_finish(d, log);
    free(d);
}

static bool state_equal(const struct wsd *a, const struct wsd *b, char *why, size_t n)
{
    const struct iw_fpdu_rx *x = &a->rx, *y = &b->rx;
#define SAME(e) do { if ((e)) break; snprintf(why, n, "state differs: %s", #e); return false; } while (0)
    SAME(a->in_mpa == b->in_mpa && a->dead == b->dead && a->off == b->off && a->fpdu_base == b->fpdu_base);
    SAME(a->mpa.status == b->mpa.status && a->mpa.got == b->mpa.got && a->mpa.need == b->mpa.need);
    SAME(x->state == y->state && x->hgot == y->hgot && x->hneed == y->hneed && x->pay_done == y->pay_done);
    SAME(x->pad_len == y->pad_len && x->pad_got == y->pad_got && x->pad_nonzero == y->pad_nonzero);
    SAME(x->crc_got == y->crc_got && x->crc_state == y->crc_state);
    SAME(x->offset == y->offset && x->fpdu_start == y->fpdu_start && x->fpdus == y->fpdus);
    SAME(x->error.err == y->error.err && x->error.reason == y->error.reason);
    SAME(memcmp(x->hbuf, y->hbuf, x->hgot) == 0);
    for (int q = 0; q < 3; q++)
        SAME(x->uq[q].msn == y->uq[q].msn && x->uq[q].mo == y->uq[q].mo && x->uq[q].open == y->uq[q].open &&
             (!x->uq[q].open || x->uq[q].opcode == y->uq[q].opcode));
    SAME(x->tq.open == y->tq.open && (!x->tq.open || (x->tq.opcode == y->tq.opcode && x->tq.stag == y->tq.stag &&
                                                      x->tq.to == y->tq.to)));
    if (x->fpdus)
        return wsd_hdr_equal(&x->hdr, &y->hdr, why, n);
#undef SAME
    return true;
}

/* Every step-th split point, decoding from scratch. */
static void split_full(const struct stream *s, const struct wsd_log *ref, size_t step)
{
    struct wsd_log log;
    for (size_t k = 0; k <= s->len; k += step) {
        char how[64];
        wsd_log_init(&log);
        run_pieces(s, &k, 1, &log);
        snprintf(how, sizeof how, "split at %zu", k);
        expect_same(s, how, ref, &log);
        wsd_log_free(&log);
    }
}

/* Every split point, replayed between snapshots taken at FPDU boundaries (see the top). */
static void split_windowed(const struct stream *s, const struct wsd_log *ref)
{
    /* Boundaries: 0, end of MPA frame, end of every FPDU, end of stream. */
    size_t nb = 0, cap = ref->n + 3;
    size_t *b = malloc(cap * sizeof *b);
    size_t *nfp = malloc(cap * sizeof *nfp);
    CHECK(b && nfp);
    b[nb] = 0, nfp[nb++] = 0;
    if (s->kind && ref->mpa_len)
        b[nb] = (size_t)ref->mpa_len, nfp[nb++] = 0;
    for (size_t i = 0; i < ref->n; i++) {
        b[nb] = (size_t)ref->fpdus[i].offset + iw_mpa_fpdu_len(ref->fpdus[i].hdr.ulpdu_len);
        nfp[nb++] = i + 1;
    }
    if (b[nb - 1] != s->len)
        b[nb] = s->len, nfp[nb++] = ref->n;

    /* Reference run fed exactly at the boundaries, snapshotting the decoder at each. */
    struct wsd *snap = malloc(nb * sizeof *snap);
    struct wsd_log log;
    CHECK(snap != NULL);
    wsd_log_init(&log);
    wsd_init(&snap[0], s->kind, IW_MPA_PD_MAX_RFC, &s->cfg);
    for (size_t i = 1; i < nb; i++) {
        snap[i] = snap[i - 1];
        wsd_feed(&snap[i], &log, s->data + b[i - 1], b[i] - b[i - 1]);
        CHECK_EQ(log.n, nfp[i]);
    }
    wsd_finish(&snap[nb - 1], &log);
    expect_same(s, "boundary-aligned feeding", ref, &log);
    wsd_log_free(&log);

    struct wsd *d = malloc(sizeof *d);
    CHECK(d != NULL);
    size_t i = 0;
    for (size_t k = 0; k < s->len; k++) {
        while (i + 1 < nb && b[i + 1] <= k)
            i++;
        size_t j = i + 2 < nb ? i + 2 : nb - 1;         /* window end: two boundaries on */
        *d = snap[i];
        wsd_log_init(&log);
        wsd_feed(d, &log, s->data + b[i], k - b[i]);
        wsd_feed(d, &log, s->data + k, b[j] - k);
        char why[256];
        CHECK_MSG(state_equal(d, &snap[j], why, sizeof why), "%s: split at %zu (window %zu..%zu): %s", s->name, k,
                  b[i], b[j], why);
        CHECK_MSG(log.n == nfp[j] - nfp[i], "%s: split at %zu: %zu FPDUs in window, want %zu", s->name, k, log.n,
                  nfp[j] - nfp[i]);
        for (size_t f = 0; f < log.n; f++)
            CHECK_MSG(wsd_fpdu_equal(&log.fpdus[f], &ref->fpdus[nfp[i] + f], why, sizeof why),
                      "%s: split at %zu, FPDU %zu: %s", s->name, k, nfp[i] + f, why);
        wsd_log_free(&log);
    }
    free(d);
    free(snap);
    free(b);
    free(nfp);
}

static void check_stream(const struct stream *s)
{
    struct wsd_log ref, log;

    wsd_log_init(&ref);
    wsd_decode_all(s->kind, IW_MPA_PD_MAX_RFC, &s->cfg, s->data, s->len, &ref);

    /* One byte at a time. */
    size_t *cuts = malloc((s->len + 1) * sizeof *cuts);
    CHECK(cuts != NULL);
    for (size_t k = 1; k < s->len; k++)
        cuts[k - 1] = k;
    wsd_log_init(&log);
    run_pieces(s, cuts, s->len ? s->len - 1 : 0, &log);
    expect_same(s, "one byte at a time", &ref, &log);
    wsd_log_free(&log);

    /* Random multi-way splits, small and large pieces. */
    for (int round = 0; round < 8; round++) {
        size_t n = 0;
        for (size_t pos = 0;;) {
            pos += 1 + (size_t)(rnd() % (round & 1 ? 7 : 3000));
            if (pos >= s->len)
                break;
            cuts[n++] = pos;
        }
        wsd_log_init(&log);
        run_pieces(s, cuts, n, &log);
        expect_same(s, "random split", &ref, &log);
        wsd_log_free(&log);
    }

    /* Whole frames reported as one event (IW_FPDU_RX_WHOLE, rx.c's small-message path) must
     * decode exactly as HEADER + PAYLOAD, and with their trailers (IW_FPDU_RX_END, rx.c's
     * flags) as HEADER + PAYLOAD + END: same FPDUs, same error at the same place, in one piece
     * and in random pieces (a frame split by a cut takes the resumable path). */
    struct stream w = *s;
    for (int round = 0; round < 6; round++) {
        size_t n = 0;
        w.flags = IW_FPDU_RX_WHOLE | (round >= 3 ? IW_FPDU_RX_END : 0);
        for (size_t pos = 0; round % 3;) {
            pos += 1 + (size_t)(rnd() % (round % 3 == 1 ? 7 : 3000));
            if (pos >= s->len)
                break;
            cuts[n++] = pos;
        }
        wsd_log_init(&log);
        run_pieces(&w, cuts, n, &log);
        expect_same(s, round % 3 ? "whole frames, random split" : "whole frames, one piece", &ref, &log);
        whole_frames += log.frames;
        ended_frames += log.ended;
        CHECK_MSG(round >= 3 || log.ended == 0, "%s: a FRAME ended without IW_FPDU_RX_END", s->name);
        wsd_log_free(&log);
    }
    free(cuts);

    if (s->len <= SMALL) {
        split_full(s, &ref, 1);
    } else {
        split_windowed(s, &ref);
        split_full(s, &ref, 97);        /* cross-check of the snapshot method on a sample */
    }
    printf("%-52s %7zu bytes  %4zu FPDUs%s%s\n", s->name, s->len, ref.n, ref.error ? "  error: " : "",
           ref.error ? iw_fpdu_rx_reason_str(ref.err.reason) : "");
    wsd_log_free(&ref);
}

static void captures(void)
{
    const char *dir = wcap_dir();
    char **names;
    size_t n;

    n = wcap_list(dir, &names);
    CHECK_MSG(n > 0, "no siw capture fixtures in %s (tests/wire/captures/README.md)", dir);
    for (size_t i = 0; i < n; i++) {
        char path[4200], err[256];
        struct wpcap_file pf;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        CHECK_MSG(wpcap_read(path, &pf, err, sizeof err) == 0, "%s", err);
        for (size_t c = 0; c < pf.nconns; c++) {
            struct iw_mpa_frame req, rep;
            struct stream s = { 0 };
            CHECK(wcap_conn_setup(&pf.conns[c], &req, &rep, &s.cfg));
            for (int d = 0; d < 2; d++) {
                snprintf(s.name, sizeof s.name, "%s conn %zu %s", names[i], c, d ? "server->client" : "client->server");
                s.kind = d ? IW_MPA_REPLY : IW_MPA_REQUEST;
                s.data = pf.conns[c].dir[d].data;
                s.len = pf.conns[c].dir[d].len;
                check_stream(&s);
            }
        }
        wpcap_free(&pf);
    }
    wcap_list_free(names, n);
}

static void examples(void)
{
    struct stream s;
    uint8_t all[1024];
    size_t len = 0;

    for (size_t i = 0; i < wex_mpa_count; i++) {
        s = (struct stream){ .kind = wex_mpa[i].frame.kind, .data = wex_mpa[i].bytes, .len = wex_mpa[i].len };
        snprintf(s.name, sizeof s.name, "%s", wex_mpa[i].name);
        check_stream(&s);
    }
    for (size_t i = 0; i < wex_fpdu_count; i++) {
        s = (struct stream){ .cfg = { .crc = wex_fpdu[i].crc, .strict_pad = true }, .data = wex_fpdu[i].bytes,
                             .len = wex_fpdu[i].len };
        snprintf(s.name, sizeof s.name, "%s", wex_fpdu[i].name);
        check_stream(&s);
    }

    /* Ex2b (pad 3) with CRC off, its CRC field then unchecked: a zero PAD, which a whole frame
     * takes with it (IW_FPDU_RX_END); a non-zero one, which it must leave to END (pad_nonzero),
     * and in strict mode to the error. */
    uint8_t ex2b[64];
    CHECK(wex_fpdu[1].len == 40 && wex_fpdu[1].len <= sizeof ex2b);   /* 2 + 18 + 13 + PAD 3 + CRC 4 */
    memcpy(ex2b, wex_fpdu[1].bytes, wex_fpdu[1].len);
    for (int k = 0; k < 3; k++) {
        if (k)
            ex2b[wex_fpdu[1].len - IW_MPA_CRC_SIZE - 1] = 0x5a;   /* the last PAD byte */
        s = (struct stream){ .cfg = { .strict_pad = k == 2 }, .data = ex2b, .len = wex_fpdu[1].len };
        snprintf(s.name, sizeof s.name, "Ex2b, CRC off, %s", k == 0 ? "PAD zero" : k == 1 ? "PAD not zero" : "PAD not zero, strict");
        check_stream(&s);
    }

    /* A whole connection's worth: Ex1b Request then every CRC-carrying example FPDU. */
    memcpy(all, wex_mpa[1].bytes, wex_mpa[1].len);
    len = wex_mpa[1].len;
    for (size_t i = 0; i < wex_fpdu_count; i++) {
        if (!wex_fpdu[i].crc)
            continue;
        memcpy(all + len, wex_fpdu[i].bytes, wex_fpdu[i].len);
        len += wex_fpdu[i].len;
    }
    s = (struct stream){ .kind = IW_MPA_REQUEST, .cfg = { .crc = true }, .data = all, .len = len };
    snprintf(s.name, sizeof s.name, "all examples, CRC on");
    check_stream(&s);

    /* The same stream broken in three ways: errors must surface at the same byte whatever the
     * split. A payload byte (CRC error), a ULPDU_Length (framing error), an opcode. */
    uint8_t bad[1024];
    const size_t ex3_at = wex_mpa[1].len + wex_fpdu[0].len + wex_fpdu[1].len;
    const size_t muts[3] = { ex3_at + 20, ex3_at + 1, ex3_at + 3 };
    const uint8_t vals[3] = { 0x55, 0x03, 0x4c };
    for (int m = 0; m < 3; m++) {
        memcpy(bad, all, len);
        bad[muts[m]] = vals[m];
        s = (struct stream){ .kind = IW_MPA_REQUEST, .cfg = { .crc = true }, .data = bad, .len = len };
        snprintf(s.name, sizeof s.name, "all examples, byte %zu set to %02x", muts[m], vals[m]);
        check_stream(&s);
    }
    /* A bad MPA key. */
    memcpy(bad, all, len);
    bad[5] = 'x';
    s = (struct stream){ .kind = IW_MPA_REQUEST, .data = bad, .len = len };
    snprintf(s.name, sizeof s.name, "all examples, bad MPA key");
    check_stream(&s);
}

int main(void)
{
    examples();
    captures();
    /* Guards the comparison above against a deframer that never takes the path. */
    CHECK_MSG(whole_frames > 0, "no FRAME event in any IW_FPDU_RX_WHOLE run");
    CHECK_MSG(ended_frames > 0, "no FRAME took its trailer in any IW_FPDU_RX_END run");
    printf("split: %llu FRAME events in whole-frame runs, %llu of them ended\n", (unsigned long long)whole_frames,
           (unsigned long long)ended_frames);
    printf("split: OK\n");
    return 0;
}
