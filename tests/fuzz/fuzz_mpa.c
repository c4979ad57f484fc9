/* MPA Request / Reply parser (RFC 5044 §7.1, RFC 6581).
 *
 * Input: kind (1 byte: 0 Request, 1 Reply, else either), max_pd (2 bytes), split seed (1 byte),
 * then the stream. Checks that the one-shot decoder, the resumable parser fed in one piece and
 * the parser fed in pieces agree on status, error, frame and consumption; that the parser stops
 * exactly at the end of the frame and stays put afterwards; and that a decoded frame the encoder
 * may send re-encodes to exactly the bytes that came in. */
#include <string.h>

#include "fuzz.h"
#include "mpa.h"

static const enum iw_mpa_kind kinds[4] = { IW_MPA_REQUEST, IW_MPA_REPLY, IW_MPA_ANY, IW_MPA_ANY };

struct feed_result {
    enum iw_mpa_status st;
    enum iw_mpa_error err;
    size_t consumed;
};

/* Feeds data in pieces whose sizes come from a small generator seeded by the input (0 = one
 * piece); checks the consumption contract of every call. */
static struct feed_result feed(struct iw_mpa_parser *p, const uint8_t *data, size_t len, uint8_t seed)
{
    struct feed_result r = { IW_MPA_NEED_MORE, IW_MPA_ERR_NONE, 0 };
    uint32_t x = seed * 2654435761u + 1;
    size_t pos = 0;

    do {
        size_t piece = len - pos;
        if (seed) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            size_t want = x % 23;           /* 0-byte feeds are legal and must change nothing */
            if (want < piece)
                piece = want;
        }
        size_t used = 12345;
        enum iw_mpa_status st = iw_mpa_parser_feed(p, data + pos, piece, &used);
        FZ_CHECK(used <= piece, "consumed %zu of %zu", used, piece);
        FZ_CHECK(st == p->status, "returned %d, parser says %d", st, p->status);
        if (st == IW_MPA_NEED_MORE)
            FZ_CHECK(used == piece, "NEED_MORE after %zu of %zu bytes", used, piece);
        pos += used;
        r.st = st;
        if (st != IW_MPA_NEED_MORE)
            break;
    } while (pos < len);
    r.err = p->error;
    r.consumed = pos;
    if (r.st != IW_MPA_NEED_MORE) {
        /* Terminal: more input changes nothing. */
        size_t used = 1;
        uint8_t more[8] = { 0 };
        FZ_CHECK(iw_mpa_parser_feed(p, more, sizeof more, &used) == r.st && used == 0,
                 "parser moved after its terminal status");
    }
    return r;
}

static void frames_equal(const struct iw_mpa_frame *a, const struct iw_mpa_frame *b)
{
    FZ_CHECK(a->kind == b->kind && a->rev == b->rev && a->markers == b->markers && a->crc == b->crc &&
             a->reject == b->reject && a->enhanced == b->enhanced && a->flags == b->flags &&
             a->has_v2 == b->has_v2 && a->pd_len == b->pd_len && a->ulp_pd_len == b->ulp_pd_len,
             "frame fields differ");
    FZ_CHECK(!a->has_v2 || (a->v2.ird == b->v2.ird && a->v2.ord == b->v2.ord && a->v2.p2p == b->v2.p2p &&
                            a->v2.rtr == b->v2.rtr), "v2 block differs");
    FZ_CHECK((a->ulp_pd == NULL) == (a->ulp_pd_len == 0) && (b->ulp_pd == NULL) == (b->ulp_pd_len == 0),
             "ulp_pd NULL-ness does not follow its length");
    FZ_CHECK(a->ulp_pd_len == 0 || memcmp(a->ulp_pd, b->ulp_pd, a->ulp_pd_len) == 0, "private data differs");
}

/* The receiver rules of RFC 5044 §7.1 / RFC 6581, written
 * independently of mpa.c: the status a decoder must report for s[0..n), and the error. */
static enum iw_mpa_status model(const uint8_t *s, size_t n, enum iw_mpa_kind expect, uint16_t limit,
                                enum iw_mpa_error *err)
{
    static const char req[] = IW_MPA_KEY_REQ, rep[] = IW_MPA_KEY_REP;
    *err = IW_MPA_ERR_NONE;
    for (size_t i = 0; i < IW_MPA_KEY_LEN && i < n; i++) {
        bool ok = (expect != IW_MPA_REPLY && s[i] == (uint8_t)req[i]) ||
                  (expect != IW_MPA_REQUEST && s[i] == (uint8_t)rep[i]);
        if (!ok) {
            *err = IW_MPA_ERR_KEY;
            return IW_MPA_ERROR;
        }
    }
    if (n < IW_MPA_HDR_LEN)
        return IW_MPA_NEED_MORE;
    uint8_t rev = s[IW_MPA_OFF_REV];
    uint16_t pd = iw_get_be16(s + IW_MPA_OFF_PD_LEN);
    if (rev != 1 && rev != 2)
        *err = IW_MPA_ERR_REV;
    else if (pd > IW_MPA_PD_MAX_RFC)
        *err = IW_MPA_ERR_PD_RFC;
    else if (pd > limit)
        *err = IW_MPA_ERR_PD_LIMIT;
    else if (rev == 2 && (s[IW_MPA_OFF_FLAGS] & IW_MPA_FLAG_ENHANCED) && pd < IW_MPA_V2_LEN)
        *err = IW_MPA_ERR_V2_SHORT;
    if (*err != IW_MPA_ERR_NONE)
        return IW_MPA_ERROR;
    return n < (size_t)IW_MPA_HDR_LEN + pd ? IW_MPA_NEED_MORE : IW_MPA_COMPLETE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz_in in = { data, size };
    enum iw_mpa_kind expect = kinds[fz_u8(&in) & 3];
    uint16_t max_pd = fz_u16(&in);
    uint8_t seed = fz_u8(&in);
    const uint8_t *s = in.p;
    size_t n = in.n;
    uint16_t limit = (max_pd == 0 || max_pd > IW_MPA_PD_MAX_RFC) ? IW_MPA_PD_MAX_RFC : max_pd;

    struct iw_mpa_frame f;
    size_t flen = 0;
    enum iw_mpa_error derr = IW_MPA_ERR_NONE;
    memset(&f, 0, sizeof f);
    enum iw_mpa_status dst = iw_mpa_decode(s, n, expect, max_pd, &f, &flen, &derr);

    static struct iw_mpa_parser p1, p2;
    iw_mpa_parser_init(&p1, expect, max_pd);
    iw_mpa_parser_init(&p2, expect, max_pd);
    struct feed_result r1 = feed(&p1, s, n, 0);
    struct feed_result r2 = feed(&p2, s, n, seed);

    FZ_CHECK(r1.st == r2.st && r1.err == r2.err && r1.consumed == r2.consumed,
             "one piece (%d/%d/%zu) and pieces (%d/%d/%zu) differ", r1.st, r1.err, r1.consumed,
             r2.st, r2.err, r2.consumed);
    FZ_CHECK(dst == r1.st, "decode says %d, parser %d", dst, r1.st);
    enum iw_mpa_error merr;
    enum iw_mpa_status mst = model(s, n, expect, limit, &merr);
    FZ_CHECK(mst == dst && (dst != IW_MPA_ERROR || merr == derr), "decode says %d/%s, the RFC rules %d/%s", dst,
             iw_mpa_strerror(derr), mst, iw_mpa_strerror(merr));
    FZ_CHECK((iw_mpa_parser_frame(&p1) != NULL) == (r1.st == IW_MPA_COMPLETE), "parser frame availability");
    FZ_CHECK(strlen(iw_mpa_strerror(r1.err)) > 0, "empty error string");

    switch (dst) {
    case IW_MPA_NEED_MORE:
        FZ_CHECK(r1.consumed == n, "NEED_MORE but %zu of %zu consumed", r1.consumed, n);
        break;
    case IW_MPA_ERROR:
        FZ_CHECK(derr == r1.err && derr != IW_MPA_ERR_NONE && derr < IW_MPA_ERR_COUNT,
                 "decode error %d, parser error %d", derr, r1.err);
        FZ_CHECK(iw_mpa_parser_frame(&p1) == NULL, "frame after an error");
        break;
    case IW_MPA_COMPLETE: {
        const struct iw_mpa_frame *pf = iw_mpa_parser_frame(&p1);
        FZ_CHECK(pf != NULL && iw_mpa_parser_frame(&p2) != NULL, "COMPLETE without a frame");
        FZ_CHECK(flen == r1.consumed && flen == (size_t)IW_MPA_HDR_LEN + f.pd_len && flen <= n,
                 "frame length %zu, consumed %zu", flen, r1.consumed);
        FZ_CHECK(f.pd_len <= limit, "PD_Length %u over the limit %u", f.pd_len, limit);
        FZ_CHECK(f.rev == IW_MPA_REV1 || f.rev == IW_MPA_REV2, "rev %u accepted", f.rev);
        FZ_CHECK(f.has_v2 == (f.rev == IW_MPA_REV2 && f.enhanced), "has_v2");
        FZ_CHECK(f.ulp_pd_len + (f.has_v2 ? IW_MPA_V2_LEN : 0) == f.pd_len, "ulp_pd_len");
        FZ_CHECK(f.ulp_pd_len == 0 || (f.ulp_pd >= s && f.ulp_pd + f.ulp_pd_len <= s + flen),
                 "private data outside the frame");
        FZ_CHECK(expect == IW_MPA_ANY || f.kind == expect, "kind %d, expected %d", f.kind, expect);
        FZ_CHECK(f.flags == s[IW_MPA_OFF_FLAGS], "flags byte");
        frames_equal(&f, pf);
        frames_equal(pf, iw_mpa_parser_frame(&p2));

        /* What the encoder may send must come back byte for byte. */
        bool sendable = !(f.flags & IW_MPA_FLAG_RSVD) && !(f.kind == IW_MPA_REQUEST && f.reject) &&
                        !(f.rev == IW_MPA_REV1 && f.enhanced);
        uint8_t out[IW_MPA_HDR_LEN + IW_MPA_PD_MAX_RFC];
        int rc = iw_mpa_encode(&f, max_pd, out, sizeof out);
        if (sendable) {
            FZ_CHECK(rc == (int)flen, "re-encode returned %d, frame was %zu bytes", rc, flen);
            FZ_CHECK(iw_mpa_frame_len(&f) == flen, "iw_mpa_frame_len");
            FZ_CHECK(memcmp(out, s, flen) == 0, "re-encoded frame differs from the input");
        } else {
            FZ_CHECK(rc < 0 || (f.flags & IW_MPA_FLAG_RSVD), "encoder accepted an unsendable frame");
        }
        break;
    }
    default:
        FZ_CHECK(0, "status %d", dst);
    }
    return 0;
}
