/*
 * smb2_auth.c - NTLMv2 authentication (MS-NLMP 3.1.5, 3.3.2), its SPNEGO wrapping (RFC 4178,
 * the two tokens a client sends), SMB 3.x key derivation (MS-SMB2 3.1.4.2), AES-CMAC signing
 * (3.1.4.1) and the 3.1.1 preauth integrity hash (3.2.5.2). Digests come from nettle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <nettle/cmac.h>
#include <nettle/hmac.h>
#include <nettle/md4.h>
#include <nettle/sha2.h>

#include "smb2_auth.h"
#include "smb2_wire.h"
#include "smbd_wire.h"

/* UTF-8 to UTF-16LE (BMP only; others become '?'); upper folds ASCII. Returns bytes written. */
size_t smb2_utf16(const char *s, uint8_t *out, size_t cap, bool upper)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p && n + 2 <= cap) {
        uint32_t cp = *p++;
        if (cp >= 0xC0 && cp < 0xE0 && (*p & 0xC0) == 0x80) {
            cp = (cp & 0x1F) << 6 | (*p++ & 0x3F);
        } else if (cp >= 0xE0 && cp < 0xF0 && (p[0] & 0xC0) == 0x80 && (p[1] & 0xC0) == 0x80) {
            cp = (cp & 0x0F) << 12 | (p[0] & 0x3F) << 6 | (p[1] & 0x3F);
            p += 2;
        } else if (cp >= 0x80) {
            while ((*p & 0xC0) == 0x80)
                p++;
            cp = '?';
        }
        if (upper && cp >= 'a' && cp <= 'z')
            cp -= 32;
        out[n++] = (uint8_t)cp;
        out[n++] = (uint8_t)(cp >> 8);
    }
    return n;
}

void smb2_random(void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = getrandom(p, len, 0);
        if (n <= 0)
            continue;
        p += n;
        len -= (size_t)n;
    }
}

/* ---- SPNEGO: DER with definite lengths ---- */

static size_t der_len_size(size_t len) { return len < 0x80 ? 1 : len < 0x100 ? 2 : 3; }

/* Writes tag + length header for content of len bytes at out; returns header size. */
static size_t der_hdr(uint8_t *out, uint8_t tag, size_t len)
{
    out[0] = tag;
    if (len < 0x80) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len < 0x100) {
        out[1] = 0x81;
        out[2] = (uint8_t)len;
        return 3;
    }
    out[1] = 0x82;
    out[2] = (uint8_t)(len >> 8);
    out[3] = (uint8_t)len;
    return 4;
}

static size_t der_total(size_t content) { return 1 + der_len_size(content) + content; }

static const uint8_t spnego_oid[] = { 0x06, 0x06, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x02 };
static const uint8_t ntlmssp_oid[] = { 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a };

size_t smb2_spnego_init(const uint8_t *tok, size_t len, uint8_t *out, size_t cap)
{
    size_t mt_seq = sizeof ntlmssp_oid, mt = der_total(mt_seq);          /* [0] { SEQ { oid } } */
    size_t a0 = der_total(mt), octet = der_total(len), a2 = der_total(octet);
    size_t seq = a0 + a2, init = der_total(seq), app = sizeof spnego_oid + der_total(init), total = der_total(app);
    if (total > cap || len > 0xFFFF - 64)
        return 0;
    size_t o = 0;
    o += der_hdr(out + o, 0x60, app);
    memcpy(out + o, spnego_oid, sizeof spnego_oid);
    o += sizeof spnego_oid;
    o += der_hdr(out + o, 0xa0, init);
    o += der_hdr(out + o, 0x30, seq);
    o += der_hdr(out + o, 0xa0, mt);
    o += der_hdr(out + o, 0x30, mt_seq);
    memcpy(out + o, ntlmssp_oid, sizeof ntlmssp_oid);
    o += sizeof ntlmssp_oid;
    o += der_hdr(out + o, 0xa2, octet);
    o += der_hdr(out + o, 0x04, len);
    memcpy(out + o, tok, len);
    return o + len;
}

size_t smb2_spnego_resp(const uint8_t *tok, size_t len, uint8_t *out, size_t cap)
{
    size_t octet = der_total(len), a2 = der_total(octet), seq = der_total(a2), total = der_total(seq);
    if (total > cap || len > 0xFFFF - 64)
        return 0;
    size_t o = 0;
    o += der_hdr(out + o, 0xa1, seq);
    o += der_hdr(out + o, 0x30, a2);
    o += der_hdr(out + o, 0xa2, octet);
    o += der_hdr(out + o, 0x04, len);
    memcpy(out + o, tok, len);
    return o + len;
}

const uint8_t *smb2_find_ntlmssp(const uint8_t *blob, size_t len, size_t *tok_len)
{
    static const uint8_t sig[8] = { 'N', 'T', 'L', 'M', 'S', 'S', 'P', 0 };
    for (size_t i = 0; i + 8 <= len; i++)
        if (!memcmp(blob + i, sig, 8)) {
            *tok_len = len - i;
            return blob + i;
        }
    return NULL;
}

/* ---- NTLMSSP ---- */

#define NTLM_CLIENT_FLAGS (NTLMSSP_NEGOTIATE_UNICODE | NTLMSSP_REQUEST_TARGET | NTLMSSP_NEGOTIATE_SIGN | \
                           NTLMSSP_NEGOTIATE_NTLM | NTLMSSP_NEGOTIATE_ALWAYS_SIGN | NTLMSSP_NEGOTIATE_EXTENDED_SEC | \
                           NTLMSSP_NEGOTIATE_128 | NTLMSSP_NEGOTIATE_56)

size_t smb2_ntlm_negotiate(uint8_t out[32])
{
    memset(out, 0, 32);
    memcpy(out, "NTLMSSP", 8);
    smbd_put32(out + 8, NTLM_MSG_NEGOTIATE);
    smbd_put32(out + 12, NTLM_CLIENT_FLAGS);
    return 32;
}

static void ntlm_field(uint8_t *msg, size_t at, size_t *off, const void *data, size_t len)
{
    smbd_put16(msg + at, (uint16_t)len);
    smbd_put16(msg + at + 2, (uint16_t)len);
    smbd_put32(msg + at + 4, (uint32_t)*off);
    if (len)
        memcpy(msg + *off, data, len);
    *off += len;
}

int smb2_ntlm_authenticate(const uint8_t *chal, size_t chal_len, const char *user, const char *domain,
                           const char *password, uint8_t *out, size_t cap, size_t *out_len, uint8_t session_key[16])
{
    if (chal_len < NTLM_CHAL_MIN || memcmp(chal, "NTLMSSP", 8) || smbd_get32(chal + 8) != NTLM_MSG_CHALLENGE)
        return -EPROTO;
    uint32_t sflags = smbd_get32(chal + NTLM_CHAL_FLAGS);
    const uint8_t *server_chal = chal + NTLM_CHAL_CHALLENGE;
    uint16_t ti_len = smbd_get16(chal + NTLM_CHAL_TARGET_INFO);
    uint32_t ti_off = smbd_get32(chal + NTLM_CHAL_TARGET_INFO + 4);
    if ((uint64_t)ti_off + ti_len > chal_len)
        return -EPROTO;
    const uint8_t *ti = chal + ti_off;
    bool anonymous = !user || !*user;

    uint8_t u16user[512], u16dom[512], u16ws[64];
    size_t ulen = anonymous ? 0 : smb2_utf16(user, u16user, sizeof u16user, false);
    size_t dlen = smb2_utf16(domain ? domain : "", u16dom, sizeof u16dom, false);
    size_t wlen = smb2_utf16("NDKSMB", u16ws, sizeof u16ws, false);

    uint8_t nt[64 + 4096 + 32];
    size_t ntlen = 0;
    uint8_t lm[24] = { 0 };
    size_t lmlen = anonymous ? 0 : sizeof lm;
    memset(session_key, 0, 16);
    if (!anonymous) {
        /* NTOWFv2 = HMAC_MD5(MD4(UTF16(pw)), UTF16(UPPER(user) || domain)) (3.3.2). */
        uint8_t pw16[1024], nthash[16], id[1024], owf[16];
        size_t plen = smb2_utf16(password ? password : "", pw16, sizeof pw16, false);
        struct md4_ctx md4;
        md4_init(&md4);
        md4_update(&md4, plen, pw16);
        md4_digest(&md4, 16, nthash);
        memset(pw16, 0, sizeof pw16);
        size_t idlen = smb2_utf16(user, id, sizeof id / 2, true);
        memcpy(id + idlen, u16dom, dlen);
        idlen += dlen;
        struct hmac_md5_ctx h;
        hmac_md5_set_key(&h, 16, nthash);
        hmac_md5_update(&h, idlen, id);
        hmac_md5_digest(&h, 16, owf);
        memset(nthash, 0, sizeof nthash);
        if (ti_len > 4096)
            return -EPROTO;
        /* temp = 01 01 00*6 FILETIME ClientChallenge 00*4 AvPairs 00*4 */
        uint8_t *temp = nt + 16;
        size_t t = 0;
        temp[t++] = 1;
        temp[t++] = 1;
        memset(temp + t, 0, 6);
        t += 6;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t ft = ((uint64_t)now.tv_sec + 11644473600ull) * 10000000ull + (uint64_t)now.tv_nsec / 100;
        smbd_put64(temp + t, ft);
        t += 8;
        smb2_random(temp + t, 8);
        t += 8;
        memset(temp + t, 0, 4);
        t += 4;
        memcpy(temp + t, ti, ti_len);
        t += ti_len;
        memset(temp + t, 0, 4);
        t += 4;
        hmac_md5_set_key(&h, 16, owf);
        hmac_md5_update(&h, 8, server_chal);
        hmac_md5_update(&h, t, temp);
        hmac_md5_digest(&h, 16, nt);            /* NTProofStr */
        ntlen = 16 + t;
        /* SessionBaseKey = HMAC_MD5(NTOWFv2, NTProofStr) = the exported key (no KEY_EXCH). */
        hmac_md5_set_key(&h, 16, owf);
        hmac_md5_update(&h, 16, nt);
        hmac_md5_digest(&h, 16, session_key);
        memset(owf, 0, sizeof owf);
    }
    size_t need = NTLM_AUTH_FIXED + lmlen + ntlen + dlen + ulen + wlen;
    if (need > cap)
        return -EMSGSIZE;
    memset(out, 0, NTLM_AUTH_FIXED);
    memcpy(out, "NTLMSSP", 8);
    smbd_put32(out + 8, NTLM_MSG_AUTHENTICATE);
    size_t off = NTLM_AUTH_FIXED;
    ntlm_field(out, NTLM_AUTH_LM, &off, lm, lmlen);
    ntlm_field(out, NTLM_AUTH_NT, &off, nt, ntlen);
    ntlm_field(out, NTLM_AUTH_DOMAIN, &off, u16dom, dlen);
    ntlm_field(out, NTLM_AUTH_USER, &off, u16user, ulen);
    ntlm_field(out, NTLM_AUTH_WORKSTATION, &off, u16ws, wlen);
    ntlm_field(out, NTLM_AUTH_SESSION_KEY, &off, NULL, 0);
    uint32_t flags = (sflags & NTLM_CLIENT_FLAGS) | NTLMSSP_NEGOTIATE_UNICODE;
    if (anonymous)
        flags |= NTLMSSP_NEGOTIATE_ANONYMOUS;
    smbd_put32(out + NTLM_AUTH_FLAGS, flags);
    *out_len = off;
    return 0;
}

/* ---- keys, signatures, preauth ---- */

void smb2_kdf(const uint8_t key[16], const char *label, size_t label_len, const uint8_t *ctx, size_t ctx_len,
              uint8_t out[16])
{
    static const uint8_t one[4] = { 0, 0, 0, 1 }, zero = 0, bits[4] = { 0, 0, 0, 0x80 };
    struct hmac_sha256_ctx h;
    uint8_t full[SHA256_DIGEST_SIZE];
    hmac_sha256_set_key(&h, 16, key);
    hmac_sha256_update(&h, 4, one);
    hmac_sha256_update(&h, label_len, (const uint8_t *)label);
    hmac_sha256_update(&h, 1, &zero);
    hmac_sha256_update(&h, ctx_len, ctx);
    hmac_sha256_update(&h, 4, bits);
    hmac_sha256_digest(&h, sizeof full, full);
    memcpy(out, full, 16);
}

void smb2_sign(const uint8_t key[16], uint8_t *msg, size_t len)
{
    smbd_put32(msg + SMB2_HDR_FLAGS, smbd_get32(msg + SMB2_HDR_FLAGS) | SMB2_FLAGS_SIGNED);
    memset(msg + SMB2_HDR_SIGNATURE, 0, 16);
    struct cmac_aes128_ctx c;
    cmac_aes128_set_key(&c, key);
    cmac_aes128_update(&c, len, msg);
    cmac_aes128_digest(&c, 16, msg + SMB2_HDR_SIGNATURE);
}

bool smb2_verify(const uint8_t key[16], const uint8_t *msg, size_t len)
{
    if (len < SMB2_HDR_SIZE)
        return false;
    uint8_t *copy = malloc(len);
    if (!copy)
        return false;
    memcpy(copy, msg, len);
    smb2_sign(key, copy, len);
    bool ok = memcmp(copy + SMB2_HDR_SIGNATURE, msg + SMB2_HDR_SIGNATURE, 16) == 0;
    free(copy);
    return ok;
}

void smb2_preauth_update(uint8_t hash[64], const uint8_t *msg, size_t len)
{
    struct sha512_ctx s;
    sha512_init(&s);
    sha512_update(&s, 64, hash);
    sha512_update(&s, len, msg);
    sha512_digest(&s, 64, hash);
}
