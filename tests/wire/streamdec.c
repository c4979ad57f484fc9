/* See streamdec.h. */
#include "streamdec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "testlib.h"

void wsd_init(struct wsd *d, int kind, uint16_t max_pd, const struct iw_fpdu_rx_cfg *cfg)
{
    memset(d, 0, sizeof *d);
    d->with_mpa = kind != 0;
    d->in_mpa = d->with_mpa;
    if (d->with_mpa)
        iw_mpa_parser_init(&d->mpa, (enum iw_mpa_kind)kind, max_pd);
    iw_fpdu_rx_init(&d->rx, cfg);
}

void wsd_log_init(struct wsd_log *l)
{
    memset(l, 0, sizeof *l);
}

void wsd_log_free(struct wsd_log *l)
{
    free(l->fpdus);
    memset(l, 0, sizeof *l);
}

static void log_push(struct wsd_log *l, const struct wsd_fpdu *f)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->fpdus = realloc(l->fpdus, l->cap * sizeof *l->fpdus);
        CHECK(l->fpdus != NULL);
    }
    l->fpdus[l->n++] = *f;
}

void wsd_log_copy(struct wsd_log *dst, const struct wsd_log *src)
{
    struct wsd_fpdu *keep = dst->fpdus;
    size_t cap = dst->cap;
    *dst = *src;
    dst->fpdus = keep;
    dst->cap = cap;
    dst->n = 0;
    for (size_t i = 0; i < src->n; i++)
        log_push(dst, &src->fpdus[i]);
    if (dst->mpa.ulp_pd)
        dst->mpa.ulp_pd = dst->mpa_pd;
}

void wsd_log_truncate(struct wsd_log *l, size_t n)
{
    if (n < l->n)
        l->n = n;
}

static void wsd_on_header(struct wsd *d, const struct iw_fpdu_event *ev)
{
    CHECK(ev->hdr == &d->rx.hdr);
    memset(&d->cur, 0, sizeof d->cur);
    d->cur.hdr = *ev->hdr;
    d->cur.offset = d->fpdu_base + d->rx.fpdu_start;
    d->cur.payload_crc = iw_crc32c_init();
}

static void wsd_on_payload(struct wsd *d, const struct iw_fpdu_event *ev)
{
    CHECK_MSG(ev->off == d->cur.payload_got, "payload offset %u, expected %u", ev->off, d->cur.payload_got);
    CHECK(ev->off + ev->len <= d->cur.hdr.payload_len);
    d->cur.payload_crc = iw_crc32c_update(d->cur.payload_crc, ev->data, ev->len);
    d->cur.payload_got += ev->len;
    d->cur.chunks++;
}

/* END, or the END half of an ended FRAME. */
static void wsd_on_end(struct wsd *d, struct wsd_log *log, const struct iw_fpdu_event *ev)
{
    CHECK_EQ(d->cur.payload_got, d->cur.hdr.payload_len);
    d->cur.payload_crc = iw_crc32c_final(d->cur.payload_crc);
    d->cur.crc_checked = ev->crc_checked;
    d->cur.crc_wire = ev->crc_wire;
    d->cur.crc_calc = ev->crc_calc;
    d->cur.pad_nonzero = ev->pad_nonzero;
    log_push(log, &d->cur);
}

void wsd_feed(struct wsd *d, struct wsd_log *log, const uint8_t *buf, size_t len)
{
    size_t pos = 0;

    while (pos < len && !d->dead) {
        size_t used = 0;
        if (d->in_mpa) {
            enum iw_mpa_status st = iw_mpa_parser_feed(&d->mpa, buf + pos, len - pos, &used);
            CHECK_MSG(used <= len - pos, "MPA parser consumed %zu of %zu", used, len - pos);
            pos += used;
            d->off += used;
            log->mpa_status = st;
            if (st == IW_MPA_NEED_MORE) {
                CHECK_MSG(pos == len, "MPA NEED_MORE left %zu bytes", len - pos);
                continue;
            }
            if (st == IW_MPA_ERROR) {
                log->mpa_err = d->mpa.error;
                d->dead = true;
                break;
            }
            const struct iw_mpa_frame *f = iw_mpa_parser_frame(&d->mpa);
            CHECK(f != NULL);
            log->mpa = *f;
            if (f->ulp_pd_len) {
                memcpy(log->mpa_pd, f->ulp_pd, f->ulp_pd_len);
                log->mpa.ulp_pd = log->mpa_pd;
            }
            log->mpa_len = d->off;
            d->fpdu_base = d->off;
            d->in_mpa = false;
            continue;
        }

        struct iw_fpdu_event ev;
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step_ex(&d->rx, buf + pos, len - pos, d->flags, &used, &ev);
        CHECK_MSG(used <= len - pos, "deframer consumed %zu of %zu", used, len - pos);
        CHECK_EQ(t, ev.type);
        switch (t) {
        case IW_FPDU_EV_NEED_MORE:
            CHECK_MSG(used == len - pos, "NEED_MORE but %zu of %zu consumed", used, len - pos);
            break;
        case IW_FPDU_EV_HEADER:
            CHECK(used > 0);
            wsd_on_header(d, &ev);
            break;
        case IW_FPDU_EV_PAYLOAD:
            CHECK(used > 0 && ev.len == used);
            CHECK_MSG(ev.data == buf + pos, "payload does not point at the input");
            wsd_on_payload(d, &ev);
            break;
        case IW_FPDU_EV_FRAME: {
            /* HEADER + the whole PAYLOAD, and the trailer must be in the input still; or, ended
             * (IW_FPDU_RX_END), + END, the trailer consumed too, which only a trailer that cannot
             * fail may be (CRC off, PAD zero). */
            size_t trailer = iw_mpa_pad_len(ev.hdr->ulpdu_len) + IW_MPA_CRC_SIZE;
            CHECK(d->flags & IW_FPDU_RX_WHOLE);
            CHECK(ev.len == ev.hdr->payload_len && ev.len > 0 && ev.off == 0);
            if (ev.ended) {
                CHECK(d->flags & IW_FPDU_RX_END);
                CHECK(!d->rx.cfg.crc && !ev.crc_checked && !ev.pad_nonzero);
                CHECK_MSG(ev.data + ev.len + trailer == buf + pos + used, "ended frame does not end the consumed input");
            } else {
                CHECK_MSG(ev.data + ev.len == buf + pos + used, "frame payload does not end the consumed input");
                CHECK(len - pos - used >= trailer);
            }
            wsd_on_header(d, &ev);
            wsd_on_payload(d, &ev);
            log->frames++;
            if (ev.ended) {
                wsd_on_end(d, log, &ev);
                log->ended++;
            }
            break;
        }
        case IW_FPDU_EV_END:
            CHECK(used > 0);
            wsd_on_end(d, log, &ev);
            break;
        case IW_FPDU_EV_ERROR:
            CHECK(ev.err != NULL && ev.err == iw_fpdu_rx_error(&d->rx));
            log->error = true;
            log->err = *ev.err;
            d->dead = true;
            break;
        }
        pos += used;
        d->off += used;
        if (t == IW_FPDU_EV_ERROR)
            log->err_at = d->off;
    }
    log->consumed = d->off;
}

void wsd_finish(const struct wsd *d, struct wsd_log *log)
{
    log->end_state = d->rx.state;
    log->end_hgot = d->rx.hgot;
    log->end_fpdus = d->rx.fpdus;
    log->consumed = d->off;
}

void wsd_decode_all(int kind, uint16_t max_pd, const struct iw_fpdu_rx_cfg *cfg, const uint8_t *buf,
                    size_t len, struct wsd_log *log)
{
    struct wsd *d = malloc(sizeof *d);
    CHECK(d != NULL);
    wsd_init(d, kind, max_pd, cfg);
    wsd_feed(d, log, buf, len);
    wsd_finish(d, log);
    free(d);
}

#define DIFF(field) do { if (a->field != b->field) { \
    snprintf(why, n, #field ": %llu != %llu", (unsigned long long)a->field, (unsigned long long)b->field); \
    return false; } } while (0)

static bool term_equal(const struct iw_fpdu_term *a, const struct iw_fpdu_term *b, char *why, size_t n)
{
    DIFF(layer); DIFF(etype); DIFF(ecode); DIFF(hdrct); DIFF(ddp_seg_len); DIFF(ddp_hdr_len);
    DIFF(truncated);
    if (memcmp(a->ctrl, b->ctrl, sizeof a->ctrl) || memcmp(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len) ||
        ((a->hdrct & IW_TERM_HDRCT_R) && !a->truncated && memcmp(a->rdmap_hdr, b->rdmap_hdr, sizeof a->rdmap_hdr))) {
        snprintf(why, n, "terminate bytes differ");
        return false;
    }
    return true;
}

bool wsd_hdr_equal(const struct iw_fpdu_hdr *a, const struct iw_fpdu_hdr *b, char *why, size_t n)
{
    DIFF(opcode); DIFF(last); DIFF(tagged); DIFF(stag); DIFF(to); DIFF(inv_stag); DIFF(qn);
    DIFF(msn); DIFF(mo); DIFF(rr.sink_stag); DIFF(rr.sink_to); DIFF(rr.size); DIFF(rr.src_stag);
    DIFF(rr.src_to); DIFF(ulpdu_len); DIFF(ddp_ctrl); DIFF(rdmap_ctrl); DIFF(hdr_len);
    DIFF(payload_len);
    return term_equal(&a->term, &b->term, why, n);
}

bool wsd_fpdu_equal(const struct wsd_fpdu *a, const struct wsd_fpdu *b, char *why, size_t n)
{
    DIFF(offset); DIFF(payload_crc); DIFF(payload_got); DIFF(crc_checked); DIFF(crc_wire);
    DIFF(crc_calc); DIFF(pad_nonzero);
    return wsd_hdr_equal(&a->hdr, &b->hdr, why, n);
}

bool wsd_log_equal(const struct wsd_log *a, const struct wsd_log *b, char *why, size_t n)
{
    DIFF(mpa_status); DIFF(mpa_err); DIFF(mpa_len); DIFF(n); DIFF(error); DIFF(consumed);
    DIFF(end_state); DIFF(end_hgot); DIFF(end_fpdus);
    if (a->mpa_status == IW_MPA_COMPLETE) {
        DIFF(mpa.kind); DIFF(mpa.rev); DIFF(mpa.flags); DIFF(mpa.pd_len); DIFF(mpa.has_v2);
        DIFF(mpa.v2.ird); DIFF(mpa.v2.ord); DIFF(mpa.v2.p2p); DIFF(mpa.v2.rtr); DIFF(mpa.ulp_pd_len);
        if (a->mpa.ulp_pd_len && memcmp(a->mpa_pd, b->mpa_pd, a->mpa.ulp_pd_len)) {
            snprintf(why, n, "MPA private data differs");
            return false;
        }
    }
    if (a->error) {
        DIFF(err.err); DIFF(err.reason); DIFF(err.fpdu_offset); DIFF(err_at);
        if (!term_equal(&a->err.term, &b->err.term, why, n))
            return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        char sub[200];
        if (!wsd_fpdu_equal(&a->fpdus[i], &b->fpdus[i], sub, sizeof sub)) {
            snprintf(why, n, "FPDU %zu: %s", i, sub);
            return false;
        }
    }
    return true;
}
