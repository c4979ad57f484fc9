/* Hostile input: malformed MPA frames and FPDUs (bad lengths, versions, opcodes, queue numbers,
 * offsets, CRCs, truncation, huge lengths) must be refused with the RFC Terminate code we
 * promise, identically however the bytes are split; random and mutated streams must never crash
 * or read out of bounds (this test also runs under ASan/UBSan, and every piece is fed from an
 * exact-size heap buffer). Also: caller-reported errors, first-error-wins, and a Terminate built
 * from a deframer error reproducing worked example Ex7 (examples.c) byte for byte. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "examples.h"
#include "fpdu.h"
#include "mpa.h"
#include "streamdec.h"
#include "testlib.h"

#define WIRE_RND_SEED 0xD1B54A32D192ED03ull
#include "wire_rnd.h"

static const struct wex_fpdu *ex(const char *prefix)
{
    for (size_t i = 0; i < wex_fpdu_count; i++)
        if (strncmp(wex_fpdu[i].name, prefix, strlen(prefix)) == 0 && wex_fpdu[i].name[strlen(prefix)] == ' ')
            return &wex_fpdu[i];
    CHECK_MSG(false, "no example %s", prefix);
    return NULL;
}

/* Decodes in one piece, one byte at a time and in random pieces (each an exact-size heap copy);
 * all three must agree, and the one-shot log is returned. */
static void decode3(const struct iw_fpdu_rx_cfg *cfg, const uint8_t *b, size_t len, struct wsd_log *out)
{
    struct wsd_log l1, l2;
    struct wsd *d = malloc(sizeof *d);
    char why[256];
    uint8_t *copy = malloc(len ? len : 1);

    CHECK(d && copy);
    memcpy(copy, b, len);
    wsd_log_init(out);
    wsd_decode_all(0, 0, cfg, copy, len, out);
    free(copy);

    for (int mode = 0; mode < 2; mode++) {
        struct wsd_log *l = mode ? &l2 : &l1;
        wsd_log_init(l);
        wsd_init(d, 0, 0, cfg);
        for (size_t pos = 0; pos < len;) {
            size_t n = mode ? 1 + (size_t)(rnd() % 17) : 1;
            if (n > len - pos)
                n = len - pos;
            uint8_t *piece = malloc(n);
            CHECK(piece != NULL);
            memcpy(piece, b + pos, n);
            wsd_feed(d, l, piece, n);
            free(piece);
            pos += n;
        }
        wsd_finish(d, l);
        CHECK_MSG(wsd_log_equal(out, l, why, sizeof why), "%s split differs: %s", mode ? "random" : "bytewise", why);
        wsd_log_free(l);
    }
    free(d);
}

static void expect_err(const char *what, const struct iw_fpdu_rx_cfg *cfg, const uint8_t *b, size_t len,
                       enum iw_fpdu_rx_reason reason, uint8_t layer, uint8_t etype, uint8_t ecode, uint8_t hdrct)
{
    struct wsd_log log;
    decode3(cfg, b, len, &log);
    CHECK_MSG(log.error, "%s: accepted", what);
    CHECK_MSG(log.err.reason == reason, "%s: reason '%s', want '%s'", what, iw_fpdu_rx_reason_str(log.err.reason),
              iw_fpdu_rx_reason_str(reason));
    CHECK_MSG(log.err.term.layer == layer && log.err.term.etype == etype && log.err.term.ecode == ecode,
              "%s: Terminate %u/%u/0x%02x, want %u/%u/0x%02x", what, log.err.term.layer, log.err.term.etype,
              log.err.term.ecode, layer, etype, ecode);
    CHECK_MSG(log.err.term.hdrct == hdrct, "%s: hdrct %02x, want %02x", what, log.err.term.hdrct, hdrct);
    CHECK_EQ(log.err.err, -EBADMSG);
    /* The control word we would send is the RFC layout of those codes. */
    CHECK_EQ(log.err.term.ctrl[0], (uint8_t)(layer << 4 | etype));
    CHECK_EQ(log.err.term.ctrl[1], ecode);
    CHECK_EQ(log.err.term.ctrl[2], hdrct);
    wsd_log_free(&log);
}

static void expect_ok(const char *what, const struct iw_fpdu_rx_cfg *cfg, const uint8_t *b, size_t len, size_t nfpdu)
{
    struct wsd_log log;
    decode3(cfg, b, len, &log);
    CHECK_MSG(!log.error, "%s: refused: %s", what, iw_fpdu_rx_reason_str(log.err.reason));
    CHECK_MSG(log.n == nfpdu, "%s: %zu FPDUs, want %zu", what, log.n, nfpdu);
    wsd_log_free(&log);
}

static size_t build(const struct iw_fpdu_hdr *h, const void *pay, size_t plen, bool crc, uint8_t *buf, size_t cap)
{
    struct iw_iov iov = { pay, plen };
    int n = iw_fpdu_build(h, &iov, plen ? 1 : 0, crc, buf, cap);
    CHECK_MSG(n > 0, "build: %d", n);
    return (size_t)n;
}

#define MUT(name, exname, off, val) do { \
    const struct wex_fpdu *_e = ex(exname); \
    memcpy(buf, _e->bytes, _e->len); buf[(off)] = (uint8_t)(val); len = _e->len; (void)name; } while (0)

static void test_header_errors(void)
{
    const struct iw_fpdu_rx_cfg off = { 0 }, on = { .crc = true };
    uint8_t buf[70000];
    size_t len;
    const uint8_t MD = IW_TERM_HDRCT_M | IW_TERM_HDRCT_D;

    /* ULPDU_Length too small for the header: LLP / MPA / 0x03, no attachment. */
    for (int v = 0; v < 14; v++) {
        MUT("short", "Ex3", 1, v);
        expect_err("tagged ULPDU short", &off, buf, len, IW_FPDU_RXERR_ULPDU_SHORT, IW_TERM_LAYER_LLP, 0,
                   IW_TERM_LLP_MARKER_LEN, 0);
    }
    MUT("short", "Ex2", 1, 17);
    expect_err("untagged ULPDU 17", &off, buf, len, IW_FPDU_RXERR_ULPDU_SHORT, IW_TERM_LAYER_LLP, 0, 3, 0);
    MUT("short", "Ex4", 1, 45);
    expect_err("Read Request ULPDU 45", &off, buf, len, IW_FPDU_RXERR_ULPDU_SHORT, IW_TERM_LAYER_LLP, 0, 3, 0);
    MUT("long", "Ex4", 1, 47);
    expect_err("Read Request ULPDU 47", &off, buf, len, IW_FPDU_RXERR_MSG_TOO_LONG, IW_TERM_LAYER_DDP,
               IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_TOO_LONG, 0);
    MUT("short", "Ex6", 1, 21);
    expect_err("Terminate ULPDU 21", &off, buf, len, IW_FPDU_RXERR_ULPDU_SHORT, IW_TERM_LAYER_LLP, 0, 3, 0);
    MUT("long", "Ex6", 1, 71);
    expect_err("Terminate ULPDU 71", &off, buf, len, IW_FPDU_RXERR_MSG_TOO_LONG, IW_TERM_LAYER_DDP, 2, 5, 0);

    /* Above our configured maximum. */
    static uint8_t pay[65536];
    struct iw_fpdu_rx_cfg small = { .max_ulpdu = 100 };
    struct iw_fpdu_hdr send = { .opcode = IW_OP_SEND, .last = true, .msn = 1 };
    len = build(&send, pay, 82, false, buf, sizeof buf);
    expect_ok("ULPDU 100 with max 100", &small, buf, len, 1);
    len = build(&send, pay, 83, false, buf, sizeof buf);
    expect_err("ULPDU 101 with max 100", &small, buf, len, IW_FPDU_RXERR_ULPDU_LONG, IW_TERM_LAYER_LLP, 0, 3, 0);
    struct iw_fpdu_rx_cfg tiny = { .max_ulpdu = 1 };      /* clamped up: Terminates still fit */
    expect_ok("Terminate with max 1", &tiny, ex("Ex7")->bytes, ex("Ex7")->len, 1);

    /* DDP version, per buffer model (RFC 5041 §7). */
    for (int dv = 0; dv < 4; dv++) {
        if (dv == 1)
            continue;
        MUT("dv", "Ex3", 2, 0xc0 | dv);
        expect_err("tagged DV", &on, buf, len, IW_FPDU_RXERR_DDP_VERSION, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED,
                   IW_TERM_DDP_T_VERSION, 0);
        MUT("dv", "Ex2", 2, 0x40 | dv);
        expect_err("untagged DV", &on, buf, len, IW_FPDU_RXERR_DDP_VERSION, IW_TERM_LAYER_DDP,
                   IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_VERSION, 0);
    }
    /* RDMAP version (RFC 5040 §7). */
    for (int rv = 0; rv < 4; rv++) {
        if (rv == 1)
            continue;
        MUT("rv", "Ex2", 3, rv << 6 | IW_OP_SEND);
        expect_err("RV", &on, buf, len, IW_FPDU_RXERR_RDMAP_VERSION, IW_TERM_LAYER_RDMAP,
                   IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_VERSION, 0);
    }
    /* Opcodes 8..15 (RFC 7306 ones included: not implemented) and T bit against opcode. */
    for (int op = 8; op < 16; op++) {
        MUT("op", "Ex2", 3, 0x40 | op);
        expect_err("opcode", &on, buf, len, IW_FPDU_RXERR_OPCODE, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP,
                   IW_TERM_RDMAP_OPCODE, 0);
    }
    MUT("T", "Ex3", 2, 0x41);
    expect_err("untagged Write", &on, buf, len, IW_FPDU_RXERR_TAGGED_MISMATCH, 0, 2, 6, 0);
    MUT("T", "Ex2", 2, 0xc1);
    expect_err("tagged Send", &on, buf, len, IW_FPDU_RXERR_TAGGED_MISMATCH, 0, 2, 6, 0);
    /* Reserved bits are ignored on receive (RFC 5041 §4.1, RFC 5040 §4), even with CRC. */
    struct iw_fpdu_rx_cfg nocrc_seq = { 0 };
    MUT("rsvd", "Ex2", 2, 0x41 | 0x3c);
    expect_ok("DDP reserved bits", &nocrc_seq, buf, len, 1);
    MUT("rsvd", "Ex2", 3, 0x43 | 0x30);
    expect_ok("RDMAP reserved bits", &nocrc_seq, buf, len, 1);

    /* CRC (RFC 5044 §8 code 2): any payload, header or trailer byte. */
    const struct wex_fpdu *e2 = ex("Ex2");
    for (size_t i = 4; i < e2->len; i++) {
        memcpy(buf, e2->bytes, e2->len);
        buf[i] ^= (uint8_t)(1u << (i % 8));
        if (i >= 8 && i < 20)
            continue;                   /* QN / MSN / MO: caught as header errors first */
        expect_err("bit flip", &on, buf, e2->len, IW_FPDU_RXERR_CRC, IW_TERM_LAYER_LLP, 0, IW_TERM_LLP_CRC, 0);
    }
    memcpy(buf, ex("Ex5'")->bytes, ex("Ex5'")->len);
    expect_err("zero CRC with CRC on", &on, buf, ex("Ex5'")->len, IW_FPDU_RXERR_CRC, 2, 0, 2, 0);
    expect_ok("zero CRC with CRC off", &off, buf, ex("Ex5'")->len, 1);
    expect_ok("real CRC with CRC off", &off, ex("Ex5")->bytes, ex("Ex5")->len, 1);

    /* Queue numbers and single-segment messages: header attached (M + D). */
    MUT("qn", "Ex2", 11, 1);
    expect_err("Send on QN 1", &off, buf, len, IW_FPDU_RXERR_QN, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED,
               IW_TERM_DDP_U_INV_QN, MD);
    MUT("qn", "Ex4", 11, 0);
    expect_err("Read Request on QN 0", &off, buf, len, IW_FPDU_RXERR_QN, 1, 2, 1, MD);
    MUT("qn", "Ex6", 11, 3);
    expect_err("Terminate on QN 3", &off, buf, len, IW_FPDU_RXERR_QN, 1, 2, 1, MD);
    MUT("L", "Ex4", 2, 0x01);
    expect_err("Read Request without L", &off, buf, len, IW_FPDU_RXERR_MSG_TOO_LONG, 1, 2, 5, MD);
    MUT("mo", "Ex4", 19, 4);
    expect_err("Read Request with MO 4", &off, buf, len, IW_FPDU_RXERR_MO, 1, 2, IW_TERM_DDP_U_INV_MO, MD);

    /* MO and TO wrap (RFC 5041 §7): exactly reaching 2^32 / 2^64 is fine, one more is not. */
    struct iw_fpdu_hdr s = { .opcode = IW_OP_SEND, .last = true, .msn = 1, .mo = 0xFFFFFFF0u };
    len = build(&s, pay, 16, true, buf, sizeof buf);
    expect_ok("MO to 2^32", &on, buf, len, 1);
    s.mo = 0xFFFFFFF1u;
    len = build(&s, pay, 16, true, buf, sizeof buf);
    expect_err("MO past 2^32", &on, buf, len, IW_FPDU_RXERR_MO_WRAP, 1, 2, IW_TERM_DDP_U_INV_MO, MD);
    struct iw_fpdu_hdr w = { .opcode = IW_OP_WRITE, .last = true, .stag = 0x1234, .to = UINT64_MAX - 15 };
    len = build(&w, pay, 16, true, buf, sizeof buf);
    expect_ok("TO to 2^64", &on, buf, len, 1);
    w.to = UINT64_MAX - 14;
    len = build(&w, pay, 16, true, buf, sizeof buf);
    expect_err("TO past 2^64", &on, buf, len, IW_FPDU_RXERR_TO_WRAP, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED,
               IW_TERM_DDP_T_TO_WRAP, MD);
    w.to = UINT64_MAX;
    len = build(&w, pay, 0, true, buf, sizeof buf);
    expect_ok("zero-length Write at TO 2^64-1", &on, buf, len, 1);

    /* PAD: ignored by default, refused in strict mode. */
    struct iw_fpdu_rx_cfg strict = { .strict_pad = true };
    MUT("pad", "Ex2b", 34, 0x40);
    struct wsd_log log;
    decode3(&off, buf, len, &log);
    CHECK(!log.error && log.n == 1 && log.fpdus[0].pad_nonzero);
    wsd_log_free(&log);
    expect_err("strict pad", &strict, buf, len, IW_FPDU_RXERR_PAD, IW_TERM_LAYER_LLP, 0, 3, 0);

    /* ULPDU_Length 65535: accepted, payload delivered, CRC checked at the very end. */
    struct iw_fpdu_hdr huge = { .opcode = IW_OP_SEND, .last = true, .msn = 1 };
    for (size_t i = 0; i < sizeof pay; i++)
        pay[i] = (uint8_t)rnd();
    len = build(&huge, pay, 65535 - 18, true, buf, sizeof buf);
    CHECK_EQ(len, 2 + 65535 + 3 + 4);
    expect_ok("ULPDU 65535", &on, buf, len, 1);
    buf[len - 1] ^= 1;
    expect_err("ULPDU 65535 bad CRC", &on, buf, len, IW_FPDU_RXERR_CRC, 2, 0, 2, 0);
    /* A huge length announced, the stream ends: waiting, not an error, and nothing read past. */
    decode3(&on, buf, 1000, &log);
    CHECK(!log.error && log.n == 0 && log.end_state == IW_FPDU_RX_PAYLOAD);
    wsd_log_free(&log);
}

static void test_stream_rules(void)
{
    const struct iw_fpdu_rx_cfg seq = { .crc = true, .check_seq = true };
    uint8_t buf[4096], pay[64] = { 0 };
    size_t len = 0;
    const uint8_t MD = IW_TERM_HDRCT_M | IW_TERM_HDRCT_D;

#define PUT(...) do { struct iw_fpdu_hdr _h = { __VA_ARGS__ }; \
    len += build(&_h, pay, (_h.opcode == IW_OP_READ_REQ || _h.opcode == IW_OP_TERMINATE) ? 0 : 8, true, \
                 buf + len, sizeof buf - len); } while (0)

    /* MSN starts at 1 (RFC 5041 §5). */
    len = 0;
    PUT(.opcode = IW_OP_SEND, .last = true, .msn = 2);
    expect_err("first MSN 2", &seq, buf, len, IW_FPDU_RXERR_MSN, 1, 2, IW_TERM_DDP_U_MSN_RANGE, MD);
    /* A good conversation: two-segment Send, Send+SE+Inv, a Send inside a two-segment Write,
     * Read Requests on their own queue, Terminate MSN 1 on QN 2. */
    len = 0;
    PUT(.opcode = IW_OP_SEND, .last = false, .msn = 1, .mo = 0);
    PUT(.opcode = IW_OP_SEND, .last = true, .msn = 1, .mo = 8);
    PUT(.opcode = IW_OP_SEND_SE_INV, .last = true, .msn = 2, .inv_stag = 0xabcd);
    PUT(.opcode = IW_OP_WRITE, .last = false, .stag = 7, .to = 100);
    PUT(.opcode = IW_OP_SEND_INV, .last = true, .msn = 3, .inv_stag = 1);
    PUT(.opcode = IW_OP_WRITE, .last = true, .stag = 7, .to = 108);
    PUT(.opcode = IW_OP_READ_REQ, .msn = 1, .rr = { .size = 8 });
    PUT(.opcode = IW_OP_READ_REQ, .msn = 2, .rr = { .size = 8 });
    PUT(.opcode = IW_OP_READ_RESP, .last = true, .stag = 9, .to = 0);
    PUT(.opcode = IW_OP_TERMINATE, .msn = 1);
    expect_ok("well-formed conversation", &seq, buf, len, 10);
    struct wsd_log log;
    decode3(&seq, buf, len, &log);
    CHECK_EQ(log.fpdus[2].hdr.inv_stag, 0xabcd);
    CHECK_EQ(log.fpdus[4].hdr.inv_stag, 1);
    wsd_log_free(&log);

    len = 0;
    PUT(.opcode = IW_OP_SEND, .last = false, .msn = 1, .mo = 0);
    PUT(.opcode = IW_OP_SEND, .last = true, .msn = 1, .mo = 4);
    expect_err("MO gap", &seq, buf, len, IW_FPDU_RXERR_MO, 1, 2, IW_TERM_DDP_U_INV_MO, MD);
    len = 0;
    PUT(.opcode = IW_OP_SEND, .last = false, .msn = 1, .mo = 0);
    PUT(.opcode = IW_OP_SEND, .last = true, .msn = 2, .mo = 0);
    expect_err("new MSN before L", &seq, buf, len, IW_FPDU_RXERR_MSN, 1, 2, 3, MD);
    len = 0;
    PUT(.opcode = IW_OP_SEND, .last = false, .msn = 1, .mo = 0);
    PUT(.opcode = IW_OP_SEND_SE, .last = true, .msn = 1, .mo = 8);
    expect_err("opcode change inside a Send", &seq, buf, len, IW_FPDU_RXERR_INTERLEAVE, 0, 2, 6, MD);
    len = 0;
    PUT(.opcode = IW_OP_SEND, .last = true, .msn = 1, .mo = 8);
    expect_err("first segment with MO 8", &seq, buf, len, IW_FPDU_RXERR_MO, 1, 2, 4, MD);
    len = 0;
    PUT(.opcode = IW_OP_WRITE, .last = false, .stag = 7, .to = 100);
    PUT(.opcode = IW_OP_READ_RESP, .last = true, .stag = 7, .to = 108);
    expect_err("Read Response inside a Write", &seq, buf, len, IW_FPDU_RXERR_INTERLEAVE, 0, 2, 6, MD);
    len = 0;
    PUT(.opcode = IW_OP_WRITE, .last = false, .stag = 7, .to = 100);
    PUT(.opcode = IW_OP_WRITE, .last = true, .stag = 8, .to = 108);
    expect_err("STag change", &seq, buf, len, IW_FPDU_RXERR_STAG_CHANGE, 1, 1, IW_TERM_DDP_T_INV_STAG, MD);
    len = 0;
    PUT(.opcode = IW_OP_WRITE, .last = false, .stag = 7, .to = 100);
    PUT(.opcode = IW_OP_WRITE, .last = true, .stag = 7, .to = 116);
    expect_err("TO gap", &seq, buf, len, IW_FPDU_RXERR_TO_GAP, 1, 1, IW_TERM_DDP_T_BASE_BOUNDS, MD);
    len = 0;
    PUT(.opcode = IW_OP_READ_REQ, .msn = 2);
    expect_err("Read Request MSN 2 first", &seq, buf, len, IW_FPDU_RXERR_MSN, 1, 2, 3, MD);
    len = 0;
    PUT(.opcode = IW_OP_TERMINATE, .msn = 0);
    expect_err("Terminate MSN 0", &seq, buf, len, IW_FPDU_RXERR_MSN, 1, 2, 3, MD);
#undef PUT
}

static void test_terminate_decode(void)
{
    struct iw_fpdu_term t;
    uint8_t b[80] = { 0 };

    CHECK_EQ(iw_fpdu_term_decode(b, 3, &t), -EBADMSG);
    /* D promised, nothing attached; then only part of the header; then R promised, no body. */
    b[2] = IW_TERM_HDRCT_D;
    CHECK_EQ(iw_fpdu_term_decode(b, 4, &t), 0);
    CHECK(t.truncated && t.ddp_hdr_len == 0);
    b[6] = 0xc1;
    CHECK_EQ(iw_fpdu_term_decode(b, 4 + 2 + 13, &t), 0);
    CHECK(t.truncated);
    CHECK_EQ(iw_fpdu_term_decode(b, 4 + 2 + 14, &t), 0);
    CHECK(!t.truncated && t.ddp_hdr_len == 14);
    b[6] = 0x41;
    CHECK_EQ(iw_fpdu_term_decode(b, 4 + 2 + 14, &t), 0);
    CHECK(t.truncated);
    b[2] = IW_TERM_HDRCT_D | IW_TERM_HDRCT_R;
    CHECK_EQ(iw_fpdu_term_decode(b, 4 + 2 + 18 + 27, &t), 0);
    CHECK(t.truncated && t.ddp_hdr_len == 18);
    CHECK_EQ(iw_fpdu_term_decode(b, 4 + 2 + 18 + 28, &t), 0);
    CHECK(!t.truncated);
    b[2] = IW_TERM_HDRCT_R;
    CHECK_EQ(iw_fpdu_term_decode(b, 4 + 27, &t), 0);
    CHECK(t.truncated);

    /* Through the deframer: a Terminate whose HdrCt lies about its length still decodes. */
    const struct iw_fpdu_rx_cfg off = { 0 };
    uint8_t buf[64];
    const struct wex_fpdu *e6 = ex("Ex6");
    memcpy(buf, e6->bytes, e6->len);
    buf[22] = IW_TERM_HDRCT_M | IW_TERM_HDRCT_D | IW_TERM_HDRCT_R;
    struct wsd_log log;
    decode3(&off, buf, e6->len, &log);
    CHECK(!log.error && log.n == 1 && log.fpdus[0].hdr.term.truncated);
    wsd_log_free(&log);
}

/* Feeds bytes until the deframer reports ev_want (or fails). */
static void feed_until(struct iw_fpdu_rx *rx, const uint8_t *b, size_t len, size_t *pos, enum iw_fpdu_ev_type want)
{
    struct iw_fpdu_event ev;
    while (*pos < len) {
        size_t used;
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step(rx, b + *pos, len - *pos, &used, &ev);
        *pos += used;
        if (t == want)
            return;
        CHECK_MSG(t != IW_FPDU_EV_ERROR, "unexpected error %s", iw_fpdu_rx_reason_str(rx->error.reason));
    }
    CHECK_MSG(false, "event %d never came", want);
}

static void test_caller_errors(void)
{
    struct iw_fpdu_rx rx;
    const struct iw_fpdu_rx_cfg on = { .crc = true };
    size_t pos;

    /* Read Request refused at the RDMAP layer (bad source STag): DDP + RDMAP headers attached. */
    const struct wex_fpdu *e4 = ex("Ex4");
    iw_fpdu_rx_init(&rx, &on);
    pos = 0;
    feed_until(&rx, e4->bytes, e4->len, &pos, IW_FPDU_EV_HEADER);
    CHECK_EQ(iw_fpdu_rx_error(&rx), NULL);
    CHECK_EQ(iw_fpdu_rx_set_error(&rx, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_PROT,
                                  IW_TERM_RDMAP_INV_STAG), 0);
    const struct iw_fpdu_rx_error *err = iw_fpdu_rx_error(&rx);
    CHECK(err != NULL);
    CHECK_EQ(err->err, -EPROTO);
    CHECK_EQ(err->reason, IW_FPDU_RXERR_CALLER);
    CHECK_EQ(err->term.hdrct, IW_TERM_HDRCT_M | IW_TERM_HDRCT_D | IW_TERM_HDRCT_R);
    CHECK_EQ(err->term.ddp_seg_len, 46);
    CHECK_EQ(err->term.ddp_hdr_len, 18);
    CHECK(memcmp(err->term.ddp_hdr, e4->bytes + 2, 18) == 0);
    CHECK(memcmp(err->term.rdmap_hdr, e4->bytes + 20, 28) == 0);
    /* First error wins; the deframer consumes nothing more. */
    CHECK_EQ(iw_fpdu_rx_set_error(&rx, IW_TERM_LAYER_LLP, 0, 1), -EALREADY);
    CHECK_EQ(err->term.layer, IW_TERM_LAYER_RDMAP);
    struct iw_fpdu_event ev;
    size_t used = 99;
    CHECK_EQ(iw_fpdu_rx_step(&rx, e4->bytes + pos, e4->len - pos, &used, &ev), IW_FPDU_EV_ERROR);
    CHECK_EQ(used, 0);
    CHECK(ev.err == err);

    /* The largest Terminate (RFC 5040 §4.8, every header attached): ULPDU 70 (18 + 4 + 2 + 18 +
     * 28), FPDU 76 with the MPA length and the CRC. */
    struct iw_fpdu_hdr th = { .opcode = IW_OP_TERMINATE, .msn = 1, .term = err->term };
    uint8_t tb[128];
    CHECK_EQ(iw_fpdu_build(&th, NULL, 0, true, tb, sizeof tb), 76);
    CHECK_EQ(iw_get_be16(tb), IW_TERM_ULPDU_MAX);

    /* The same Read Request refused at the DDP layer: only the DDP header. */
    iw_fpdu_rx_init(&rx, &on);
    pos = 0;
    feed_until(&rx, e4->bytes, e4->len, &pos, IW_FPDU_EV_HEADER);
    CHECK_EQ(iw_fpdu_rx_set_error(&rx, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_MSN_NOBUF), 0);
    CHECK_EQ(iw_fpdu_rx_error(&rx)->term.hdrct, IW_TERM_HDRCT_M | IW_TERM_HDRCT_D);

    /* An LLP error, and an error before any header: nothing attached. */
    iw_fpdu_rx_init(&rx, &on);
    CHECK_EQ(iw_fpdu_rx_set_error(&rx, IW_TERM_LAYER_DDP, 0, 0), 0);
    CHECK_EQ(iw_fpdu_rx_error(&rx)->term.hdrct, 0);
    iw_fpdu_rx_init(&rx, &on);
    pos = 0;
    feed_until(&rx, e4->bytes, e4->len, &pos, IW_FPDU_EV_HEADER);
    CHECK_EQ(iw_fpdu_rx_set_error(&rx, IW_TERM_LAYER_LLP, 0, IW_TERM_LLP_CATASTROPHIC), 0);
    CHECK_EQ(iw_fpdu_rx_error(&rx)->term.hdrct, 0);

    /* Ex7 end to end: a Write (Ex3) arrives, its STag is invalid, the Terminate we build from the
     * deframer's error is exactly worked example Ex7. Reported after END: the header still counts. */
    const struct wex_fpdu *e3 = ex("Ex3"), *e7 = ex("Ex7");
    iw_fpdu_rx_init(&rx, &on);
    pos = 0;
    feed_until(&rx, e3->bytes, e3->len, &pos, IW_FPDU_EV_END);
    CHECK_EQ(pos, e3->len);
    CHECK_EQ(iw_fpdu_rx_set_error(&rx, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED, IW_TERM_DDP_T_INV_STAG), 0);
    CHECK_EQ(iw_fpdu_rx_error(&rx)->fpdu_offset, 0);
    struct iw_fpdu_hdr t7 = { .opcode = IW_OP_TERMINATE, .msn = 1, .term = iw_fpdu_rx_error(&rx)->term };
    int n = iw_fpdu_build(&t7, NULL, 0, true, tb, sizeof tb);
    CHECK_EQ(n, (int)e7->len);
    CHECK_MSG(memcmp(tb, e7->bytes, e7->len) == 0, "Terminate from the deframer error is not Ex7");

    /* A peer error's Terminate, decoded again by a deframer, says the same. */
    uint8_t bad[40];
    memcpy(bad, ex("Ex2")->bytes, 40);
    bad[11] = 1;                        /* Send on QN 1 */
    iw_fpdu_rx_init(&rx, &on);
    pos = 0;
    for (; pos < sizeof bad && iw_fpdu_rx_step(&rx, bad + pos, sizeof bad - pos, &used, &ev) != IW_FPDU_EV_ERROR;)
        pos += used;
    struct iw_fpdu_hdr tq = { .opcode = IW_OP_TERMINATE, .msn = 1, .term = rx.error.term };
    n = iw_fpdu_build(&tq, NULL, 0, true, tb, sizeof tb);
    CHECK_EQ(n, 48);                    /* §4.4: DDP error with untagged header */
    struct wsd_log log;
    wsd_log_init(&log);
    wsd_decode_all(0, 0, &on, tb, (size_t)n, &log);
    CHECK(!log.error && log.n == 1);
    const struct iw_fpdu_term *back = &log.fpdus[0].hdr.term;
    CHECK(back->layer == IW_TERM_LAYER_DDP && back->etype == IW_TERM_ETYPE_DDP_UNTAGGED &&
          back->ecode == IW_TERM_DDP_U_INV_QN && back->hdrct == (IW_TERM_HDRCT_M | IW_TERM_HDRCT_D));
    CHECK(back->ddp_seg_len == 34 && back->ddp_hdr_len == 18 && memcmp(back->ddp_hdr, bad + 2, 18) == 0);
    wsd_log_free(&log);

    /* Empty input (even a NULL pointer) in every state is a no-op that asks for more. */
    const struct wex_fpdu *e2b = ex("Ex2b");
    iw_fpdu_rx_init(&rx, &on);
    for (size_t i = 0; i <= e2b->len; i++) {
        used = 99;
        CHECK_EQ(iw_fpdu_rx_step(&rx, NULL, 0, &used, &ev), IW_FPDU_EV_NEED_MORE);
        CHECK_EQ(used, 0);
        if (i < e2b->len)
            CHECK(iw_fpdu_rx_step(&rx, e2b->bytes + i, 1, &used, &ev) != IW_FPDU_EV_ERROR && used == 1);
    }
    CHECK_EQ(rx.fpdus, 1);
    struct iw_mpa_parser mp;
    iw_mpa_parser_init(&mp, IW_MPA_REQUEST, 0);
    CHECK_EQ(iw_mpa_parser_feed(&mp, NULL, 0, &used), IW_MPA_NEED_MORE);
    CHECK_EQ(used, 0);
    CHECK_EQ(iw_crc32c(NULL, 0), 0);

    /* An undefined state transition is refused as an internal error, not obeyed. */
    iw_fpdu_rx_init(&rx, &on);
    rx.state = (enum iw_fpdu_rx_state)77;
    CHECK_EQ(iw_fpdu_rx_step(&rx, e3->bytes, e3->len, &used, &ev), IW_FPDU_EV_ERROR);
    CHECK_EQ(ev.err->reason, IW_FPDU_RXERR_INTERNAL);
    CHECK_EQ(ev.err->err, -ENOTRECOVERABLE);
    CHECK_EQ(rx.state, IW_FPDU_RX_ERROR);
    CHECK(strcmp(iw_fpdu_rx_state_name((enum iw_fpdu_rx_state)77), "INVALID") == 0);
    CHECK(strcmp(iw_fpdu_rx_reason_str((enum iw_fpdu_rx_reason)999), "unknown") == 0);
    CHECK(strcmp(iw_fpdu_opcode_name(0xC), "unassigned") == 0);
}

static void test_truncation(void)
{
    /* Every proper prefix of every example: no error, no FPDU, nothing read beyond the prefix. */
    for (size_t i = 0; i < wex_fpdu_count; i++) {
        const struct wex_fpdu *e = &wex_fpdu[i];
        struct iw_fpdu_rx_cfg cfg = { .crc = e->crc, .strict_pad = true, .check_seq = false };
        for (size_t k = 0; k < e->len; k++) {
            struct wsd_log log;
            decode3(&cfg, e->bytes, k, &log);
            CHECK_MSG(!log.error && log.n == 0, "%s prefix %zu", e->name, k);
            CHECK(k == 0 || log.end_state != IW_FPDU_RX_HDR_START || log.end_hgot == k);
            wsd_log_free(&log);
        }
    }
    for (size_t i = 0; i < wex_mpa_count; i++)
        for (size_t k = 0; k < wex_mpa[i].len; k++) {
            struct iw_mpa_frame f;
            size_t fl;
            uint8_t *copy = malloc(k + 1);
            memcpy(copy, wex_mpa[i].bytes, k);
            CHECK_EQ(iw_mpa_decode(copy, k, wex_mpa[i].frame.kind, 0, &f, &fl, NULL), IW_MPA_NEED_MORE);
            free(copy);
        }
}

static void test_mpa_hostile(void)
{
    const struct wex_mpa *req = &wex_mpa[0];
    uint8_t b[600];
    struct iw_mpa_parser p;
    size_t used;

    /* A wrong key byte anywhere is caught at that byte. */
    for (size_t i = 0; i < IW_MPA_KEY_LEN; i++) {
        memcpy(b, req->bytes, req->len);
        b[i] ^= 0x20;
        iw_mpa_parser_init(&p, IW_MPA_REQUEST, 0);
        CHECK_EQ(iw_mpa_parser_feed(&p, b, req->len, &used), IW_MPA_ERROR);
        CHECK_EQ(p.error, IW_MPA_ERR_KEY);
        CHECK_EQ(used, i + 1);
        CHECK_EQ(iw_mpa_parser_frame(&p), NULL);
        CHECK_EQ(iw_mpa_parser_feed(&p, b, req->len, &used), IW_MPA_ERROR);
        CHECK_EQ(used, 0);
    }
    /* A Request where a Reply is expected, and the reverse; ANY takes both. */
    iw_mpa_parser_init(&p, IW_MPA_REPLY, 0);
    CHECK_EQ(iw_mpa_parser_feed(&p, req->bytes, req->len, &used), IW_MPA_ERROR);
    CHECK_EQ(used, 10);
    iw_mpa_parser_init(&p, IW_MPA_ANY, 0);
    CHECK_EQ(iw_mpa_parser_feed(&p, req->bytes, req->len, &used), IW_MPA_COMPLETE);
    CHECK_EQ(iw_mpa_parser_frame(&p)->kind, IW_MPA_REQUEST);

    /* Revisions. */
    const int revs[] = { 0, 3, 255 };
    for (size_t i = 0; i < 3; i++) {
        memcpy(b, req->bytes, req->len);
        b[17] = (uint8_t)revs[i];
        iw_mpa_parser_init(&p, IW_MPA_REQUEST, 0);
        CHECK_EQ(iw_mpa_parser_feed(&p, b, req->len, &used), IW_MPA_ERROR);
        CHECK_EQ(p.error, IW_MPA_ERR_REV);
        CHECK_EQ(used, 20);
    }
    /* Private data limits: RFC 512, ours configurable; checked on the header alone. */
    memcpy(b, req->bytes, 20);
    b[16] = 0, b[17] = 1;
    iw_put_be16(b + 18, 513);
    iw_mpa_parser_init(&p, IW_MPA_REQUEST, 0);
    CHECK_EQ(iw_mpa_parser_feed(&p, b, 20, &used), IW_MPA_ERROR);
    CHECK_EQ(p.error, IW_MPA_ERR_PD_RFC);
    iw_put_be16(b + 18, 0xFFFF);
    iw_mpa_parser_init(&p, IW_MPA_REQUEST, 0);
    CHECK_EQ(iw_mpa_parser_feed(&p, b, 20, &used), IW_MPA_ERROR);
    CHECK_EQ(p.error, IW_MPA_ERR_PD_RFC);
    iw_put_be16(b + 18, 257);
    iw_mpa_parser_init(&p, IW_MPA_REQUEST, 256);
    CHECK_EQ(iw_mpa_parser_feed(&p, b, 20, &used), IW_MPA_ERROR);
    CHECK_EQ(p.error, IW_MPA_ERR_PD_LIMIT);
    iw_put_be16(b + 18, 512);
    memset(b + 20, 0x5a, 512);
    iw_mpa_parser_init(&p, IW_MPA_REQUEST, 0);
    CHECK_EQ(iw_mpa_parser_feed(&p, b, 532, &used), IW_MPA_COMPLETE);
    CHECK(used == 532 && iw_mpa_parser_frame(&p)->ulp_pd_len == 512);
    /* Enhanced Rev 2 without room for the block; enhanced bit in Rev 1 is just reserved. */
    for (int pd = 0; pd < 4; pd++) {
        memcpy(b, req->bytes, 20);
        iw_put_be16(b + 18, (uint16_t)pd);
        iw_mpa_parser_init(&p, IW_MPA_REQUEST, 0);
        CHECK_EQ(iw_mpa_parser_feed(&p, b, 20 + (size_t)pd, &used), IW_MPA_ERROR);
        CHECK_EQ(p.error, IW_MPA_ERR_V2_SHORT);
    }
    memcpy(b, req->bytes, 20);
    b[17] = 1;
    iw_put_be16(b + 18, 0);
    iw_mpa_parser_init(&p, IW_MPA_REQUEST, 0);
    CHECK_EQ(iw_mpa_parser_feed(&p, b, 20, &used), IW_MPA_COMPLETE);
    CHECK(!iw_mpa_parser_frame(&p)->has_v2 && iw_mpa_parser_frame(&p)->enhanced);
    /* Reserved flag bits are reported but do not matter; M and R are reported. */
    memcpy(b, req->bytes, req->len);
    b[16] = 0xFF;
    iw_mpa_parser_init(&p, IW_MPA_REQUEST, 0);
    CHECK_EQ(iw_mpa_parser_feed(&p, b, req->len, &used), IW_MPA_COMPLETE);
    const struct iw_mpa_frame *pf = iw_mpa_parser_frame(&p);
    CHECK(pf->markers && pf->reject && pf->flags == 0xFF);
    /* Bytes behind the frame are left for the caller (siw calls them a protocol error). */
    memcpy(b, req->bytes, req->len);
    memcpy(b + req->len, "\x00\x0e\xc1\x40", 4);
    iw_mpa_parser_init(&p, IW_MPA_REQUEST, 0);
    CHECK_EQ(iw_mpa_parser_feed(&p, b, req->len + 4, &used), IW_MPA_COMPLETE);
    CHECK_EQ(used, req->len);
    CHECK_EQ(iw_mpa_parser_feed(&p, b + used, 4, &used), IW_MPA_COMPLETE);
    CHECK_EQ(used, 0);

    /* Random garbage never completes a frame by accident and never reads beyond its input. */
    for (int it = 0; it < 20000; it++) {
        size_t len = (size_t)(rnd() % 80);
        uint8_t *g = malloc(len + 1);
        for (size_t i = 0; i < len; i++)
            g[i] = (uint8_t)rnd();
        if (it % 2 && len >= 16)
            memcpy(g, it % 4 == 1 ? IW_MPA_KEY_REQ : IW_MPA_KEY_REP, 16);
        iw_mpa_parser_init(&p, IW_MPA_ANY, (uint16_t)(rnd() % 600));
        for (size_t pos = 0; pos < len;) {
            size_t n = 1 + (size_t)(rnd() % 9);
            if (n > len - pos)
                n = len - pos;
            enum iw_mpa_status st = iw_mpa_parser_feed(&p, g + pos, n, &used);
            CHECK(used <= n);
            pos += used;
            if (st != IW_MPA_NEED_MORE)
                break;
        }
        struct iw_mpa_frame f;
        size_t fl;
        iw_mpa_decode(g, len, IW_MPA_ANY, 0, &f, &fl, NULL);
        free(g);
    }

    /* Encoder refusals. */
    struct iw_mpa_frame f = { .kind = IW_MPA_REQUEST, .rev = 2, .enhanced = true };
    CHECK_EQ(iw_mpa_encode(&f, 0, b, 23), -ENOSPC);
    f.reject = true;
    CHECK_EQ(iw_mpa_encode(&f, 0, b, sizeof b), -EINVAL);
    f.reject = false;
    f.rev = 1;
    CHECK_EQ(iw_mpa_encode(&f, 0, b, sizeof b), -EINVAL);
    f.rev = 3;
    CHECK_EQ(iw_mpa_encode(&f, 0, b, sizeof b), -EINVAL);
    f.rev = 2;
    f.v2.ird = 0x4000;
    CHECK_EQ(iw_mpa_encode(&f, 0, b, sizeof b), -EINVAL);
    f.v2.ird = 1;
    f.v2.rtr = 0x8;
    CHECK_EQ(iw_mpa_encode(&f, 0, b, sizeof b), -EINVAL);
    f.v2.rtr = 0;
    f.ulp_pd_len = 4;
    CHECK_EQ(iw_mpa_encode(&f, 0, b, sizeof b), -EINVAL);
    f.kind = (enum iw_mpa_kind)IW_MPA_ANY;
    f.ulp_pd_len = 0;
    CHECK_EQ(iw_mpa_encode(&f, 0, b, sizeof b), -EINVAL);
    for (int e = 0; e <= IW_MPA_ERR_COUNT; e++)
        CHECK(iw_mpa_strerror((enum iw_mpa_error)e) != NULL);
}

/* Random and mutated streams: decoded identically however split, never a crash. */
static void test_fuzz(void)
{
    uint8_t valid[1024];
    size_t vlen = 0;
    for (size_t i = 0; i < wex_fpdu_count; i++) {
        if (!wex_fpdu[i].crc)
            continue;
        memcpy(valid + vlen, wex_fpdu[i].bytes, wex_fpdu[i].len);
        vlen += wex_fpdu[i].len;
    }
    for (int it = 0; it < 20000; it++) {
        struct iw_fpdu_rx_cfg cfg = { .crc = rnd() % 2, .check_seq = rnd() % 2, .strict_pad = rnd() % 2,
                                      .max_ulpdu = (uint32_t)(rnd() % 3 ? 0 : rnd() % 70000) };
        uint8_t buf[1024];
        size_t len;
        struct wsd_log log;
        if (it % 2) {
            len = (size_t)(rnd() % sizeof buf);
            for (size_t i = 0; i < len; i++)
                buf[i] = (uint8_t)rnd();
            /* Make random frames plausible often enough to get past the first four bytes. */
            if (len >= 4 && rnd() % 2) {
                buf[2] = (uint8_t)((buf[2] & 0xC0) | 1);
                buf[3] = (uint8_t)(0x40 | (rnd() % 8));
                iw_put_be16(buf, (uint16_t)(rnd() % 200));
            }
            decode3(&cfg, buf, len, &log);
        } else {
            memcpy(buf, valid, vlen);
            len = vlen;
            int muts = 1 + (int)(rnd() % 3);
            for (int m = 0; m < muts; m++)
                buf[rnd() % len] ^= (uint8_t)(1 + rnd() % 255);
            cfg.crc = true;
            cfg.check_seq = false;
            decode3(&cfg, buf, len, &log);
            /* A CRC-protected stream with a changed byte never decodes cleanly to its end. */
            CHECK_MSG(log.error || log.end_state != IW_FPDU_RX_HDR_START || log.end_hgot != 0,
                      "mutation %d slipped through (%zu FPDUs)", it, log.n);
        }
        wsd_log_free(&log);
    }
}

int main(void)
{
    test_header_errors();
    test_stream_rules();
    test_terminate_decode();
    test_caller_errors();
    test_truncation();
    test_mpa_hostile();
    test_fuzz();
    printf("hostile: OK\n");
    return 0;
}
