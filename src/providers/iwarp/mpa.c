/* MPA Request / Reply frame encode and decode (RFC 5044 §7.1, RFC 6581).
 *
 * Talks to: nothing. Called by cm.c and connector.c. */
#include "mpa.h"

#include <errno.h>
#include <string.h>

static const char mpa_key_req[IW_MPA_KEY_LEN] = IW_MPA_KEY_REQ;
static const char mpa_key_rep[IW_MPA_KEY_LEN] = IW_MPA_KEY_REP;

int iw_mpa_v2_pack(const struct iw_mpa_v2 *v, uint8_t out[IW_MPA_V2_LEN])
{
    if (v->ird > IW_MPA_V2_VALUE_MASK || v->ord > IW_MPA_V2_VALUE_MASK || (v->rtr & ~IW_MPA_RTR_ALL))
        return -EINVAL;
    uint16_t ird = v->ird, ord = v->ord;
    if (v->p2p)
        ird |= IW_MPA_V2_IRD_P2P;
    if (v->rtr & IW_MPA_RTR_SEND)
        ird |= IW_MPA_V2_IRD_RTR_SEND;
    if (v->rtr & IW_MPA_RTR_WRITE)
        ord |= IW_MPA_V2_ORD_RTR_WRITE;
    if (v->rtr & IW_MPA_RTR_READ)
        ord |= IW_MPA_V2_ORD_RTR_READ;
    iw_put_be16(out + IW_MPA_V2_OFF_IRD, ird);
    iw_put_be16(out + IW_MPA_V2_OFF_ORD, ord);
    return 0;
}

void iw_mpa_v2_unpack(const uint8_t in[IW_MPA_V2_LEN], struct iw_mpa_v2 *v)
{
    uint16_t ird = iw_get_be16(in + IW_MPA_V2_OFF_IRD);
    uint16_t ord = iw_get_be16(in + IW_MPA_V2_OFF_ORD);

    v->ird = ird & IW_MPA_V2_VALUE_MASK;
    v->ord = ord & IW_MPA_V2_VALUE_MASK;
    v->p2p = (ird & IW_MPA_V2_IRD_P2P) != 0;
    v->rtr = 0;
    if (ird & IW_MPA_V2_IRD_RTR_SEND)
        v->rtr |= IW_MPA_RTR_SEND;
    if (ord & IW_MPA_V2_ORD_RTR_WRITE)
        v->rtr |= IW_MPA_RTR_WRITE;
    if (ord & IW_MPA_V2_ORD_RTR_READ)
        v->rtr |= IW_MPA_RTR_READ;
}

/* RFC 6581: the block exists only when both the revision and the flag say so. */
static bool mpa_wants_v2(uint8_t rev, bool enhanced)
{
    return rev == IW_MPA_REV2 && enhanced;
}

size_t iw_mpa_frame_len(const struct iw_mpa_frame *f)
{
    return IW_MPA_HDR_LEN + (mpa_wants_v2(f->rev, f->enhanced) ? IW_MPA_V2_LEN : 0) + f->ulp_pd_len;
}

int iw_mpa_encode(const struct iw_mpa_frame *f, uint16_t max_pd, void *buf, size_t cap)
{
    uint8_t *out = buf;
    bool v2 = mpa_wants_v2(f->rev, f->enhanced);
    size_t pd = (v2 ? IW_MPA_V2_LEN : 0) + (size_t)f->ulp_pd_len;
    uint8_t v2buf[IW_MPA_V2_LEN];

    if (f->kind != IW_MPA_REQUEST && f->kind != IW_MPA_REPLY)
        return -EINVAL;
    if (f->rev != IW_MPA_REV1 && f->rev != IW_MPA_REV2)
        return -EINVAL;
    /* RFC 5044 §7.1: R has meaning in a Reply only; an initiator sends 0. */
    if (f->kind == IW_MPA_REQUEST && f->reject)
        return -EINVAL;
    /* RFC 6581: the enhanced bit is reserved in Rev 1 frames. */
    if (f->rev == IW_MPA_REV1 && f->enhanced)
        return -EINVAL;
    if (f->ulp_pd_len && !f->ulp_pd)
        return -EINVAL;
    if (v2 && iw_mpa_v2_pack(&f->v2, v2buf) < 0)
        return -EINVAL;
    if (max_pd == 0 || max_pd > IW_MPA_PD_MAX_RFC)
        max_pd = IW_MPA_PD_MAX_RFC;
    if (pd > max_pd)
        return -EMSGSIZE;
    if (cap < IW_MPA_HDR_LEN + pd)
        return -ENOSPC;

    memcpy(out + IW_MPA_OFF_KEY, f->kind == IW_MPA_REQUEST ? mpa_key_req : mpa_key_rep, IW_MPA_KEY_LEN);
    out[IW_MPA_OFF_FLAGS] = (uint8_t)((f->markers ? IW_MPA_FLAG_M : 0) | (f->crc ? IW_MPA_FLAG_C : 0) |
                                      (f->reject ? IW_MPA_FLAG_R : 0) |
                                      (f->enhanced ? IW_MPA_FLAG_ENHANCED : 0));
    out[IW_MPA_OFF_REV] = f->rev;
    iw_put_be16(out + IW_MPA_OFF_PD_LEN, (uint16_t)pd);
    uint8_t *p = out + IW_MPA_OFF_PD;
    if (v2) {
        memcpy(p, v2buf, IW_MPA_V2_LEN);
        p += IW_MPA_V2_LEN;
    }
    if (f->ulp_pd_len)
        memcpy(p, f->ulp_pd, f->ulp_pd_len);
    return (int)(IW_MPA_HDR_LEN + pd);
}

/* Key byte i matches what we expect? Both keys agree everywhere but byte 9. */
static bool mpa_key_byte_ok(enum iw_mpa_kind expect, size_t i, uint8_t b)
{
    if (i != IW_MPA_KEY_DIFF_OFF)
        return b == (uint8_t)mpa_key_req[i];
    if (expect == IW_MPA_REQUEST)
        return b == IW_MPA_KEY_REQ_BYTE9;
    if (expect == IW_MPA_REPLY)
        return b == IW_MPA_KEY_REP_BYTE9;
    return b == IW_MPA_KEY_REQ_BYTE9 || b == IW_MPA_KEY_REP_BYTE9;
}

static uint16_t mpa_limit(uint16_t max_pd)
{
    return (max_pd == 0 || max_pd > IW_MPA_PD_MAX_RFC) ? IW_MPA_PD_MAX_RFC : max_pd;
}

/* Decodes and validates the 20-byte header (key already checked) into *f; returns the first
 * rule it breaks. Receiver rules from RFC 5044 §7.1 and RFC 6581. */
static enum iw_mpa_error mpa_parse_header(const uint8_t *h, uint16_t max_pd, struct iw_mpa_frame *f)
{
    memset(f, 0, sizeof *f);
    f->kind = h[IW_MPA_KEY_DIFF_OFF] == IW_MPA_KEY_REQ_BYTE9 ? IW_MPA_REQUEST : IW_MPA_REPLY;
    f->flags = h[IW_MPA_OFF_FLAGS];
    f->rev = h[IW_MPA_OFF_REV];
    f->markers = (f->flags & IW_MPA_FLAG_M) != 0;
    f->crc = (f->flags & IW_MPA_FLAG_C) != 0;
    f->reject = (f->flags & IW_MPA_FLAG_R) != 0;
    f->enhanced = (f->flags & IW_MPA_FLAG_ENHANCED) != 0;
    f->pd_len = iw_get_be16(h + IW_MPA_OFF_PD_LEN);

    /* Rev 0 is the pre-standard RDMAC framing, which we do not speak; > 2 is unknown. */
    if (f->rev != IW_MPA_REV1 && f->rev != IW_MPA_REV2)
        return IW_MPA_ERR_REV;
    if (f->pd_len > IW_MPA_PD_MAX_RFC)
        return IW_MPA_ERR_PD_RFC;
    if (f->pd_len > mpa_limit(max_pd))
        return IW_MPA_ERR_PD_LIMIT;
    /* In Rev 1 the 0x10 bit is reserved: ignore it rather than look for a block. */
    f->has_v2 = mpa_wants_v2(f->rev, f->enhanced);
    if (f->has_v2 && f->pd_len < IW_MPA_V2_LEN)
        return IW_MPA_ERR_V2_SHORT;
    return IW_MPA_ERR_NONE;
}

static void mpa_attach_pd(struct iw_mpa_frame *f, const uint8_t *pd)
{
    if (f->has_v2) {
        iw_mpa_v2_unpack(pd, &f->v2);
        pd += IW_MPA_V2_LEN;
        f->ulp_pd_len = (uint16_t)(f->pd_len - IW_MPA_V2_LEN);
    } else {
        f->ulp_pd_len = f->pd_len;
    }
    f->ulp_pd = f->ulp_pd_len ? pd : NULL;
}

void iw_mpa_parser_init(struct iw_mpa_parser *p, enum iw_mpa_kind expect, uint16_t max_pd)
{
    memset(p, 0, sizeof *p);
    p->expect = expect;
    p->max_pd = mpa_limit(max_pd);
    p->status = IW_MPA_NEED_MORE;
    p->need = IW_MPA_HDR_LEN;
}

static void mpa_fail(struct iw_mpa_parser *p, enum iw_mpa_error e)
{
    p->error = e;
    p->status = IW_MPA_ERROR;
}

enum iw_mpa_status iw_mpa_parser_feed(struct iw_mpa_parser *p, const void *data, size_t len,
                                      size_t *consumed)
{
    const uint8_t *in = data;
    size_t used = 0;

    while (p->status == IW_MPA_NEED_MORE && used < len) {
        if (p->got < IW_MPA_KEY_LEN) {
            /* Byte by byte through the key, so a non-MPA peer is caught at its first wrong
             * byte instead of after we wait for 20 bytes it may never send. */
            uint8_t b = in[used++];
            if (!mpa_key_byte_ok(p->expect, p->got, b)) {
                mpa_fail(p, IW_MPA_ERR_KEY);
                break;
            }
            p->buf[p->got++] = b;
            continue;
        }
        size_t take = p->need - p->got;
        if (take > len - used)
            take = len - used;
        memcpy(p->buf + p->got, in + used, take);
        p->got = (uint16_t)(p->got + take);
        used += take;
        if (p->got < p->need)
            break;
        if (p->need == IW_MPA_HDR_LEN) {
            enum iw_mpa_error e = mpa_parse_header(p->buf, p->max_pd, &p->frame);
            if (e != IW_MPA_ERR_NONE) {
                mpa_fail(p, e);
                break;
            }
            p->need = (uint16_t)(IW_MPA_HDR_LEN + p->frame.pd_len);
        }
        if (p->got == p->need) {
            mpa_attach_pd(&p->frame, p->buf + IW_MPA_HDR_LEN);
            p->status = IW_MPA_COMPLETE;
        }
    }
    *consumed = used;
    return p->status;
}

const struct iw_mpa_frame *iw_mpa_parser_frame(const struct iw_mpa_parser *p)
{
    return p->status == IW_MPA_COMPLETE ? &p->frame : NULL;
}

enum iw_mpa_status iw_mpa_decode(const void *buf, size_t len, enum iw_mpa_kind expect,
                                 uint16_t max_pd, struct iw_mpa_frame *f, size_t *frame_len,
                                 enum iw_mpa_error *err)
{
    const uint8_t *in = buf;
    enum iw_mpa_error e = IW_MPA_ERR_NONE;

    for (size_t i = 0; i < IW_MPA_KEY_LEN && i < len; i++) {
        if (!mpa_key_byte_ok(expect, i, in[i])) {
            e = IW_MPA_ERR_KEY;
            goto fail;
        }
    }
    if (len < IW_MPA_HDR_LEN)
        return IW_MPA_NEED_MORE;
    e = mpa_parse_header(in, max_pd, f);
    if (e != IW_MPA_ERR_NONE)
        goto fail;
    if (len < (size_t)IW_MPA_HDR_LEN + f->pd_len)
        return IW_MPA_NEED_MORE;
    mpa_attach_pd(f, in + IW_MPA_HDR_LEN);
    if (frame_len)
        *frame_len = IW_MPA_HDR_LEN + (size_t)f->pd_len;
    return IW_MPA_COMPLETE;
fail:
    if (err)
        *err = e;
    return IW_MPA_ERROR;
}

const char *iw_mpa_strerror(enum iw_mpa_error e)
{
    static const char *const names[IW_MPA_ERR_COUNT] = {
        [IW_MPA_ERR_NONE]     = "no error",
        [IW_MPA_ERR_KEY]      = "bad MPA key",
        [IW_MPA_ERR_REV]      = "unsupported MPA revision",
        [IW_MPA_ERR_PD_RFC]   = "private data longer than RFC 5044 allows (512)",
        [IW_MPA_ERR_PD_LIMIT] = "private data longer than the configured limit",
        [IW_MPA_ERR_V2_SHORT] = "enhanced MPA v2 frame without its IRD/ORD block",
    };
    if ((unsigned)e >= IW_MPA_ERR_COUNT)
        return "unknown MPA error";
    return names[e];
}
