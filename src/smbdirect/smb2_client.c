/*
 * smb2_client.c - the SMB2/3 client: message framing, MessageId and credit accounting
 * (MS-SMB2 3.2.4.1), signing, and the commands (3.2.4.2-3.2.4.x).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndk_sync_time.h"
#include "smb2_auth.h"
#include "smb2_client.h"
#include "smb2_wire.h"
#include "smbd_wire.h"

#define SMB2_CREDIT_ASK   256
#define SMB2_INLINE_MAX   (128u * 1024)
#define SMB2_MAX_DEPTH    64

typedef struct smb2_stash {
    struct smb2_stash *next;
    uint64_t mid;
    uint8_t *msg;
    size_t   len;
    uint32_t inv;
} smb2_stash;

struct smb2_client {
    smb2_transport t;
    smb2_options   o;
    smb2_info      info;
    uint64_t       next_mid;
    uint32_t       credits;
    uint64_t       session_id;
    uint32_t       tree_id;
    uint8_t        signing_key[16];
    bool           sign;
    bool           have_key;         /* an authenticated (not guest) session */
    uint16_t       server_secmode;
    uint8_t        preauth[64];
    uint8_t        guid[16];
    smb2_stash    *stash;
    uint32_t       io_read, io_write;
    uint64_t      *lat;
    size_t         lat_cap, *lat_count;
    char           err[200];
};

static int smb2_err(smb2_client *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int smb2_err(smb2_client *c, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return rc;
}

const char *smb2_error_text(const smb2_client *c) { return c->err; }
const smb2_info *smb2_get_info(const smb2_client *c) { return &c->info; }

const char *smb2_status_name(uint32_t st)
{
    switch (st) {
    case SMB2_STATUS_SUCCESS: return "STATUS_SUCCESS";
    case SMB2_STATUS_NO_MORE_FILES: return "STATUS_NO_MORE_FILES";
    case SMB2_STATUS_MORE_PROCESSING_REQUIRED: return "STATUS_MORE_PROCESSING_REQUIRED";
    case SMB2_STATUS_INVALID_PARAMETER: return "STATUS_INVALID_PARAMETER";
    case SMB2_STATUS_END_OF_FILE: return "STATUS_END_OF_FILE";
    case SMB2_STATUS_ACCESS_DENIED: return "STATUS_ACCESS_DENIED";
    case SMB2_STATUS_OBJECT_NAME_NOT_FOUND: return "STATUS_OBJECT_NAME_NOT_FOUND";
    case SMB2_STATUS_LOGON_FAILURE: return "STATUS_LOGON_FAILURE";
    case SMB2_STATUS_BAD_NETWORK_NAME: return "STATUS_BAD_NETWORK_NAME";
    case SMB2_STATUS_NOT_SUPPORTED: return "STATUS_NOT_SUPPORTED";
    case SMB2_STATUS_USER_SESSION_DELETED: return "STATUS_USER_SESSION_DELETED";
    case 0xC0000033u: return "STATUS_OBJECT_NAME_INVALID";
    case 0xC000003Au: return "STATUS_OBJECT_PATH_NOT_FOUND";
    case 0xC00000BAu: return "STATUS_FILE_IS_A_DIRECTORY";
    case 0xC0000103u: return "STATUS_NOT_A_DIRECTORY";
    default: {
        static __thread char buf[24];
        snprintf(buf, sizeof buf, "0x%08X", st);
        return buf;
    }
    }
}

int smb2_open(smb2_transport *t, const smb2_options *o, smb2_client **out)
{
    smb2_client *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->t = *t;
    if (o)
        c->o = *o;
    if (!c->o.max_dialect)
        c->o.max_dialect = SMB2_DIALECT_0311;
    if (c->o.timeout_ms <= 0)
        c->o.timeout_ms = 30000;
    c->credits = 1;
    smb2_random(c->guid, sizeof c->guid);
    *out = c;
    return 0;
}

void smb2_close(smb2_client *c)
{
    if (!c)
        return;
    while (c->stash) {
        smb2_stash *s = c->stash;
        c->stash = s->next;
        free(s->msg);
        free(s);
    }
    if (c->t.close)
        c->t.close(c->t.ctx);
    free(c);
}

static uint16_t smb2_charge(size_t len) { return len ? (uint16_t)((len - 1) / 65536 + 1) : 1; }

/* Builds and sends one request; *mid receives its MessageId. msg has room for the header. */
static int smb2_send_req(smb2_client *c, uint16_t cmd, uint8_t *msg, size_t len, uint16_t charge, uint64_t *mid)
{
    if (charge > c->credits)
        return smb2_err(c, -EAGAIN, "no SMB2 credits (%u needed, %u held)", charge, c->credits);
    memset(msg, 0, SMB2_HDR_SIZE);
    smbd_put32(msg + SMB2_HDR_PROTOCOL, SMB2_PROTOCOL_ID);
    smbd_put16(msg + SMB2_HDR_STRUCT_SIZE, 64);
    smbd_put16(msg + SMB2_HDR_CREDIT_CHARGE, charge);
    smbd_put16(msg + SMB2_HDR_COMMAND, cmd);
    smbd_put16(msg + SMB2_HDR_CREDITS, SMB2_CREDIT_ASK);
    smbd_put64(msg + SMB2_HDR_MESSAGE_ID, c->next_mid);
    smbd_put32(msg + SMB2_HDR_TREE_ID, c->tree_id);
    smbd_put64(msg + SMB2_HDR_SESSION_ID, c->session_id);
    /* 3.1.1 protects TREE_CONNECT with a signature even when the session does not sign
     * (MS-SMB2 3.2.4.1.1; Samba refuses an unsigned one). */
    bool tcon = cmd == SMB2_TREE_CONNECT && c->have_key && c->info.dialect == SMB2_DIALECT_0311;
    if ((c->sign || tcon) && cmd != SMB2_NEGOTIATE && cmd != SMB2_SESSION_SETUP)
        smb2_sign(c->signing_key, msg, len);
    *mid = c->next_mid;
    c->next_mid += charge;
    c->credits -= charge;
    if (len > c->t.max_message)
        return smb2_err(c, -EMSGSIZE, "request of %zu bytes above the transport's %zu", len, c->t.max_message);
    int rc = c->t.send(c->t.ctx, msg, len);
    if (rc)
        return smb2_err(c, rc, "send failed: %s", strerror(-rc));
    return 0;
}

/* Waits for the response to mid; interim STATUS_PENDING responses are skipped. The caller
 * frees *msg. Returns 0 or a negative errno; the status is in the header. */
static int smb2_wait(smb2_client *c, uint64_t mid, uint8_t **msg, size_t *len, uint32_t *inv)
{
    for (smb2_stash **pp = &c->stash; *pp; pp = &(*pp)->next) {
        if ((*pp)->mid == mid) {
            smb2_stash *s = *pp;
            *pp = s->next;
            *msg = s->msg;
            *len = s->len;
            if (inv)
                *inv = s->inv;
            free(s);
            return 0;
        }
    }
    for (;;) {
        uint8_t *m;
        size_t l;
        uint32_t tok = 0;
        int rc = c->t.recv(c->t.ctx, &m, &l, &tok, c->o.timeout_ms);
        if (rc)
            return smb2_err(c, rc, "no response (%s)", strerror(-rc));
        if (l < SMB2_HDR_SIZE || smbd_get32(m) != SMB2_PROTOCOL_ID ||
            !(smbd_get32(m + SMB2_HDR_FLAGS) & SMB2_FLAGS_SERVER_TO_REDIR)) {
            free(m);
            return smb2_err(c, -EPROTO, "malformed SMB2 response (%zu bytes)", l);
        }
        if (smbd_get32(m + SMB2_HDR_NEXT_COMMAND)) {
            free(m);
            return smb2_err(c, -EPROTO, "compound response not expected");
        }
        c->credits += smbd_get16(m + SMB2_HDR_CREDITS);
        uint32_t flags = smbd_get32(m + SMB2_HDR_FLAGS);
        uint32_t status = smbd_get32(m + SMB2_HDR_STATUS);
        uint64_t rmid = smbd_get64(m + SMB2_HDR_MESSAGE_ID);
        if ((flags & SMB2_FLAGS_ASYNC_COMMAND) && status == SMB2_STATUS_PENDING) {
            free(m);
            continue;
        }
        if (c->sign && (flags & SMB2_FLAGS_SIGNED) && smbd_get16(m + SMB2_HDR_COMMAND) != SMB2_SESSION_SETUP &&
            !smb2_verify(c->signing_key, m, l)) {
            free(m);
            return smb2_err(c, -EBADMSG, "response signature does not verify");
        }
        if (rmid == mid) {
            *msg = m;
            *len = l;
            if (inv)
                *inv = tok;
            return 0;
        }
        smb2_stash *s = malloc(sizeof *s);
        if (!s) {
            free(m);
            return -ENOMEM;
        }
        *s = (smb2_stash){ c->stash, rmid, m, l, tok };
        c->stash = s;
    }
}

static uint32_t smb2_status(const uint8_t *m) { return smbd_get32(m + SMB2_HDR_STATUS); }

/* One request, one response, with the usual status check. */
static int smb2_call(smb2_client *c, uint16_t cmd, uint8_t *req, size_t len, uint16_t charge, uint8_t **resp,
                     size_t *rlen, const char *what)
{
    uint64_t mid = 0;   /* set by smb2_send_req on success; -O3 cannot see that */
    int rc = smb2_send_req(c, cmd, req, len, charge, &mid);
    if (rc)
        return rc;
    rc = smb2_wait(c, mid, resp, rlen, NULL);
    if (rc)
        return rc;
    uint32_t st = smb2_status(*resp);
    if (st != SMB2_STATUS_SUCCESS && st != SMB2_STATUS_MORE_PROCESSING_REQUIRED) {
        free(*resp);
        *resp = NULL;
        smb2_err(c, (int)st, "%s: %s", what, smb2_status_name(st));
        return (int)st;
    }
    return 0;
}

/* ---- NEGOTIATE (3.2.4.2.2.2) ---- */

int smb2_negotiate(smb2_client *c)
{
    uint8_t req[256] = { 0 };
    uint8_t *b = req + SMB2_HDR_SIZE;
    bool v311 = c->o.max_dialect >= SMB2_DIALECT_0311;
    uint16_t ndialects = v311 ? 2 : 1;
    smbd_put16(b, SMB2_NEGREQ_SIZE);
    smbd_put16(b + SMB2_NEGREQ_DIALECT_COUNT, ndialects);
    smbd_put16(b + SMB2_NEGREQ_SECURITY_MODE, SMB2_SIGNING_ENABLED | (c->o.sign ? SMB2_SIGNING_REQUIRED : 0));
    /* No encryption capability: ksmbd then turns session signing off, and RDMA needs neither. */
    smbd_put32(b + SMB2_NEGREQ_CAPABILITIES, SMB2_GLOBAL_CAP_LARGE_MTU);
    memcpy(b + SMB2_NEGREQ_CLIENT_GUID, c->guid, 16);
    smbd_put16(b + SMB2_NEGREQ_DIALECTS, SMB2_DIALECT_0302);
    if (v311)
        smbd_put16(b + SMB2_NEGREQ_DIALECTS + 2, SMB2_DIALECT_0311);
    size_t len = SMB2_HDR_SIZE + SMB2_NEGREQ_DIALECTS + 2u * ndialects;
    if (v311) {
        len = (len + 7) & ~(size_t)7;
        smbd_put32(b + SMB2_NEGREQ_CONTEXT_OFFSET, (uint32_t)len);
        smbd_put16(b + SMB2_NEGREQ_CONTEXT_COUNT, 2);
        uint8_t *x = req + len;
        smbd_put16(x, SMB2_PREAUTH_INTEGRITY_CAPABILITIES);
        smbd_put16(x + 2, 38);
        smbd_put16(x + 8, 1);                 /* HashAlgorithmCount */
        smbd_put16(x + 10, 32);               /* SaltLength */
        smbd_put16(x + 12, SMB2_PREAUTH_SHA512);
        smb2_random(x + 14, 32);
        len += 8 + 38;
        len = (len + 7) & ~(size_t)7;
        x = req + len;
        smbd_put16(x, SMB2_SIGNING_CAPABILITIES);
        smbd_put16(x + 2, 4);
        smbd_put16(x + 8, 1);
        smbd_put16(x + 10, SMB2_SIGNING_AES_CMAC);
        len += 8 + 4;
    }
    uint64_t mid = 0;   /* set by smb2_send_req on success; -O3 cannot see that */
    int rc = smb2_send_req(c, SMB2_NEGOTIATE, req, len, 1, &mid);
    if (rc)
        return rc;
    memset(c->preauth, 0, sizeof c->preauth);
    smb2_preauth_update(c->preauth, req, len);
    uint8_t *m;
    size_t ml;
    if ((rc = smb2_wait(c, mid, &m, &ml, NULL)))
        return rc;
    uint32_t st = smb2_status(m);
    if (st != SMB2_STATUS_SUCCESS) {
        free(m);
        return smb2_err(c, (int)st, "NEGOTIATE: %s", smb2_status_name(st));
    }
    if (ml < SMB2_HDR_SIZE + SMB2_NEGRESP_MIN_SIZE) {
        free(m);
        return smb2_err(c, -EPROTO, "NEGOTIATE response of %zu bytes", ml);
    }
    const uint8_t *r = m + SMB2_HDR_SIZE;
    uint16_t dialect = smbd_get16(r + SMB2_NEGRESP_DIALECT);
    if (dialect != SMB2_DIALECT_0302 && !(v311 && dialect == SMB2_DIALECT_0311)) {
        free(m);
        return smb2_err(c, -EPROTO, "server chose dialect 0x%04x", dialect);
    }
    c->info.dialect = dialect;
    c->server_secmode = smbd_get16(r + SMB2_NEGRESP_SECURITY_MODE);
    c->info.max_transact = smbd_get32(r + SMB2_NEGRESP_MAX_TRANSACT);
    c->info.max_read = smbd_get32(r + SMB2_NEGRESP_MAX_READ);
    c->info.max_write = smbd_get32(r + SMB2_NEGRESP_MAX_WRITE);
    if (dialect == SMB2_DIALECT_0311)
        smb2_preauth_update(c->preauth, m, ml);
    free(m);
    if (c->info.max_read < 4096 || c->info.max_write < 4096)
        return smb2_err(c, -EPROTO, "server MaxRead %u / MaxWrite %u", c->info.max_read, c->info.max_write);
    return 0;
}

/* ---- SESSION_SETUP (3.2.4.2.3, 3.2.5.3) ---- */

static int smb2_sess_req(smb2_client *c, const uint8_t *blob, size_t blen, uint8_t preauth[64], uint64_t *mid)
{
    size_t len = SMB2_HDR_SIZE + SMB2_SESSREQ_FIXED + blen;
    uint8_t *req = calloc(1, len);
    if (!req)
        return -ENOMEM;
    uint8_t *b = req + SMB2_HDR_SIZE;
    smbd_put16(b, SMB2_SESSREQ_SIZE);
    b[SMB2_SESSREQ_SECURITY_MODE] = (uint8_t)(SMB2_SIGNING_ENABLED | (c->o.sign ? SMB2_SIGNING_REQUIRED : 0));
    smbd_put16(b + SMB2_SESSREQ_SECBUF_OFFSET, SMB2_HDR_SIZE + SMB2_SESSREQ_FIXED);
    smbd_put16(b + SMB2_SESSREQ_SECBUF_LENGTH, (uint16_t)blen);
    memcpy(b + SMB2_SESSREQ_FIXED, blob, blen);
    int rc = smb2_send_req(c, SMB2_SESSION_SETUP, req, len, 1, mid);
    if (!rc)
        smb2_preauth_update(preauth, req, len);
    free(req);
    return rc;
}

int smb2_session_setup(smb2_client *c, const char *user, const char *domain, const char *password)
{
    uint8_t preauth[64], tok[32], blob[4096], auth[4096], key[16];
    memcpy(preauth, c->preauth, 64);
    size_t blen = smb2_spnego_init(tok, smb2_ntlm_negotiate(tok), blob, sizeof blob);
    uint64_t mid = 0;   /* set by smb2_send_req on success; -O3 cannot see that */
    int rc = smb2_sess_req(c, blob, blen, preauth, &mid);
    if (rc)
        return rc;
    uint8_t *m;
    size_t ml;
    if ((rc = smb2_wait(c, mid, &m, &ml, NULL)))
        return rc;
    uint32_t st = smb2_status(m);
    if (st != SMB2_STATUS_MORE_PROCESSING_REQUIRED) {
        free(m);
        return smb2_err(c, st ? (int)st : -EPROTO, "SESSION_SETUP (negotiate): %s", smb2_status_name(st));
    }
    c->session_id = smbd_get64(m + SMB2_HDR_SESSION_ID);
    smb2_preauth_update(preauth, m, ml);
    uint16_t so = smbd_get16(m + SMB2_HDR_SIZE + SMB2_SESSRESP_SECBUF_OFFSET);
    uint16_t sl = smbd_get16(m + SMB2_HDR_SIZE + SMB2_SESSRESP_SECBUF_LENGTH);
    if (ml < SMB2_HDR_SIZE + 8 || (size_t)so + sl > ml) {
        free(m);
        return smb2_err(c, -EPROTO, "SESSION_SETUP response security buffer out of bounds");
    }
    size_t clen;
    const uint8_t *chal = smb2_find_ntlmssp(m + so, sl, &clen);
    size_t alen = 0;
    rc = chal ? smb2_ntlm_authenticate(chal, clen, user, domain, password, auth, sizeof auth, &alen, key) : -EPROTO;
    free(m);
    if (rc)
        return smb2_err(c, rc, "no usable NTLMSSP CHALLENGE from the server");
    blen = smb2_spnego_resp(auth, alen, blob, sizeof blob);
    memset(auth, 0, sizeof auth);
    if ((rc = smb2_sess_req(c, blob, blen, preauth, &mid)))
        return rc;
    if ((rc = smb2_wait(c, mid, &m, &ml, NULL)))
        return rc;
    st = smb2_status(m);
    if (st != SMB2_STATUS_SUCCESS) {
        free(m);
        return smb2_err(c, st ? (int)st : -EPROTO, "SESSION_SETUP: %s", smb2_status_name(st));
    }
    uint16_t sflags = smbd_get16(m + SMB2_HDR_SIZE + SMB2_SESSRESP_FLAGS);
    c->info.guest = sflags & SMB2_SESSION_FLAG_IS_GUEST;
    c->info.anonymous = (sflags & SMB2_SESSION_FLAG_IS_NULL) || !user || !*user;
    bool have_key = !c->info.guest && !c->info.anonymous;
    if (c->info.dialect == SMB2_DIALECT_0311)
        smb2_kdf(key, "SMBSigningKey", 14, preauth, 64, c->signing_key);
    else
        smb2_kdf(key, "SMB2AESCMAC", 12, (const uint8_t *)"SmbSign", 8, c->signing_key);
    bool signed_resp = smbd_get32(m + SMB2_HDR_FLAGS) & SMB2_FLAGS_SIGNED;
    if (have_key && signed_resp) {
        c->info.final_signature_ok = smb2_verify(c->signing_key, m, ml);
        if (!c->info.final_signature_ok) {
            /* Say which key the server did use, to tell a server quirk from our bug. */
            static const uint8_t zero[16];
            uint8_t k[16];
            const char *which = "none of: derived, zero session key, raw session key, key over body only, zero signing key";
            if (c->info.dialect == SMB2_DIALECT_0311)
                smb2_kdf(zero, "SMBSigningKey", 14, preauth, 64, k);
            else
                smb2_kdf(zero, "SMB2AESCMAC", 12, (const uint8_t *)"SmbSign", 8, k);
            uint16_t so2 = smbd_get16(m + SMB2_HDR_SIZE + SMB2_SESSRESP_SECBUF_OFFSET);
            uint16_t sl2 = smbd_get16(m + SMB2_HDR_SIZE + SMB2_SESSRESP_SECBUF_LENGTH);
            size_t body = (size_t)so2 + sl2 > SMB2_HDR_SIZE + 8 ? (size_t)so2 + sl2 : SMB2_HDR_SIZE + 9;
            if (smb2_verify(k, m, ml))
                which = "a key derived from a zero session key";
            else if (smb2_verify(key, m, ml))
                which = "the session key itself";
            else if (body < ml && smb2_verify(c->signing_key, m, body))
                which = "our key over the body without trailing bytes";
            else if (smb2_verify(zero, m, ml))
                which = "an all-zero signing key";
            smb2_err(c, -EBADMSG, "the final SESSION_SETUP signature does not verify (%zu bytes; server used %s)", ml,
                     which);
            if (!c->o.accept_unverified_setup) {
                free(m);
                return -EBADMSG;
            }
        }
    } else if (have_key && c->info.dialect == SMB2_DIALECT_0311) {
        free(m);
        return smb2_err(c, -EBADMSG, "3.1.1 final SESSION_SETUP response not signed (MS-SMB2 3.2.5.3.1)");
    }
    free(m);
    memset(key, 0, sizeof key);
    c->have_key = have_key;
    c->sign = have_key && (c->o.sign || (c->server_secmode & SMB2_SIGNING_REQUIRED));
    c->info.signing = c->sign;
    return 0;
}

/* ---- TREE_CONNECT ---- */

int smb2_tree_connect(smb2_client *c, const char *server, const char *share)
{
    char path[600];
    snprintf(path, sizeof path, "\\\\%s\\%s", server, share);
    uint8_t req[SMB2_HDR_SIZE + SMB2_TREEREQ_FIXED + 1200] = { 0 };
    uint8_t *b = req + SMB2_HDR_SIZE;
    size_t pl = smb2_utf16(path, b + SMB2_TREEREQ_FIXED, 1200, false);
    smbd_put16(b, SMB2_TREEREQ_SIZE);
    smbd_put16(b + SMB2_TREEREQ_PATH_OFFSET, SMB2_HDR_SIZE + SMB2_TREEREQ_FIXED);
    smbd_put16(b + SMB2_TREEREQ_PATH_LENGTH, (uint16_t)pl);
    uint8_t *m;
    size_t ml;
    int rc = smb2_call(c, SMB2_TREE_CONNECT, req, SMB2_HDR_SIZE + SMB2_TREEREQ_FIXED + pl, 1, &m, &ml, "TREE_CONNECT");
    if (rc)
        return rc;
    c->tree_id = smbd_get32(m + SMB2_HDR_TREE_ID);
    free(m);
    return 0;
}

/* ---- CREATE / CLOSE / QUERY_INFO ---- */

int smb2_create(smb2_client *c, const char *path, int mode, smb2_fid *fid, uint64_t *size, bool *is_dir)
{
    char name[1024];
    while (*path == '/' || *path == '\\')
        path++;
    snprintf(name, sizeof name, "%s", path);
    size_t n = strlen(name);
    while (n && (name[n - 1] == '/' || name[n - 1] == '\\'))
        name[--n] = 0;
    for (char *p = name; *p; p++)
        if (*p == '/')
            *p = '\\';
    uint8_t req[SMB2_HDR_SIZE + SMB2_CREATEREQ_FIXED + 2048] = { 0 };
    uint8_t *b = req + SMB2_HDR_SIZE;
    size_t nl = smb2_utf16(name, b + SMB2_CREATEREQ_FIXED, 2048, false);
    smbd_put16(b, SMB2_CREATEREQ_SIZE);
    smbd_put32(b + SMB2_CREATEREQ_IMPERSONATION, 2);
    uint32_t access = SMB2_ACCESS_FILE_RO, disp = SMB2_FILE_OPEN, opts = 0;
    if (mode == SMB2_OPEN_WRITE) {
        access = SMB2_ACCESS_FILE_RW;
        disp = SMB2_FILE_OVERWRITE_IF;
        opts = SMB2_FILE_NON_DIRECTORY_FILE;
    } else if (mode == SMB2_OPEN_DIR) {
        access = SMB2_ACCESS_DIR_LIST;
        opts = SMB2_FILE_DIRECTORY_FILE;
    }
    smbd_put32(b + SMB2_CREATEREQ_DESIRED_ACCESS, access);
    smbd_put32(b + SMB2_CREATEREQ_FILE_ATTRS, mode == SMB2_OPEN_WRITE ? 0x80 : 0);
    smbd_put32(b + SMB2_CREATEREQ_SHARE_ACCESS, 7);
    smbd_put32(b + SMB2_CREATEREQ_DISPOSITION, disp);
    smbd_put32(b + SMB2_CREATEREQ_OPTIONS, opts);
    smbd_put16(b + SMB2_CREATEREQ_NAME_OFFSET, SMB2_HDR_SIZE + SMB2_CREATEREQ_FIXED);
    smbd_put16(b + SMB2_CREATEREQ_NAME_LENGTH, (uint16_t)nl);
    size_t len = SMB2_HDR_SIZE + SMB2_CREATEREQ_FIXED + (nl ? nl : 1);
    uint8_t *m;
    size_t ml;
    int rc = smb2_call(c, SMB2_CREATE, req, len, 1, &m, &ml, "CREATE");
    if (rc)
        return rc;
    if (ml < SMB2_HDR_SIZE + SMB2_CREATERESP_MIN) {
        free(m);
        return smb2_err(c, -EPROTO, "CREATE response of %zu bytes", ml);
    }
    const uint8_t *r = m + SMB2_HDR_SIZE;
    memcpy(fid->id, r + SMB2_CREATERESP_FILE_ID, 16);
    if (size)
        *size = smbd_get64(r + SMB2_CREATERESP_END_OF_FILE);
    if (is_dir)
        *is_dir = smbd_get32(r + SMB2_CREATERESP_FILE_ATTRS) & SMB2_FILE_ATTRIBUTE_DIRECTORY;
    free(m);
    return 0;
}

int smb2_close_file(smb2_client *c, const smb2_fid *fid)
{
    uint8_t req[SMB2_HDR_SIZE + SMB2_CLOSEREQ_SIZE] = { 0 };
    smbd_put16(req + SMB2_HDR_SIZE, SMB2_CLOSEREQ_SIZE);
    memcpy(req + SMB2_HDR_SIZE + SMB2_CLOSEREQ_FILE_ID, fid->id, 16);
    uint8_t *m;
    size_t ml;
    int rc = smb2_call(c, SMB2_CLOSE, req, sizeof req, 1, &m, &ml, "CLOSE");
    if (!rc)
        free(m);
    return rc;
}

int smb2_query_size(smb2_client *c, const smb2_fid *fid, uint64_t *size)
{
    uint8_t req[SMB2_HDR_SIZE + SMB2_QIREQ_FIXED + 1] = { 0 };
    uint8_t *b = req + SMB2_HDR_SIZE;
    smbd_put16(b, SMB2_QIREQ_SIZE);
    b[SMB2_QIREQ_INFO_TYPE] = SMB2_0_INFO_FILE;
    b[SMB2_QIREQ_CLASS] = SMB2_FILE_STANDARD_INFO;
    smbd_put32(b + SMB2_QIREQ_OUTPUT_LENGTH, 24);
    memcpy(b + SMB2_QIREQ_FILE_ID, fid->id, 16);
    uint8_t *m;
    size_t ml;
    int rc = smb2_call(c, SMB2_QUERY_INFO, req, sizeof req, 1, &m, &ml, "QUERY_INFO");
    if (rc)
        return rc;
    uint16_t off = smbd_get16(m + SMB2_HDR_SIZE + SMB2_QIRESP_OFFSET);
    uint32_t len = smbd_get32(m + SMB2_HDR_SIZE + SMB2_QIRESP_LENGTH);
    if (len < 16 || (size_t)off + len > ml) {
        free(m);
        return smb2_err(c, -EPROTO, "QUERY_INFO output out of bounds");
    }
    *size = smbd_get64(m + off + 8);
    free(m);
    return 0;
}

/* ---- QUERY_DIRECTORY ---- */

static size_t smb2_utf8(const uint8_t *u16, size_t bytes, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i + 1 < bytes && o + 4 < cap; i += 2) {
        uint32_t cp = smbd_get16(u16 + i);
        if (cp >= 0xD800 && cp < 0xDC00 && i + 3 < bytes) {
            uint32_t lo = smbd_get16(u16 + i + 2);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 2;
        }
        if (cp < 0x80)
            out[o++] = (char)cp;
        else if (cp < 0x800) {
            out[o++] = (char)(0xC0 | cp >> 6);
            out[o++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out[o++] = (char)(0xE0 | cp >> 12);
            out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (cp & 0x3F));
        } else {
            out[o++] = (char)(0xF0 | cp >> 18);
            out[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    out[o] = 0;
    return o;
}

int smb2_query_directory(smb2_client *c, const smb2_fid *dir, smb2_dir_fn fn, void *ctx)
{
    uint32_t outlen = 65536;
    if (c->info.max_transact && c->info.max_transact < outlen)
        outlen = c->info.max_transact;
    for (bool first = true;; first = false) {
        uint8_t req[SMB2_HDR_SIZE + SMB2_QDREQ_FIXED + 2] = { 0 };
        uint8_t *b = req + SMB2_HDR_SIZE;
        smbd_put16(b, SMB2_QDREQ_SIZE);
        b[SMB2_QDREQ_CLASS] = SMB2_FILE_DIRECTORY_INFO;
        b[SMB2_QDREQ_FLAGS] = first ? SMB2_QD_RESTART_SCANS : 0;
        memcpy(b + SMB2_QDREQ_FILE_ID, dir->id, 16);
        smbd_put16(b + SMB2_QDREQ_NAME_OFFSET, SMB2_HDR_SIZE + SMB2_QDREQ_FIXED);
        smbd_put16(b + SMB2_QDREQ_NAME_LENGTH, 2);
        smbd_put32(b + SMB2_QDREQ_OUTPUT_LENGTH, outlen);
        b[SMB2_QDREQ_FIXED] = '*';
        uint64_t mid;
        int rc = smb2_send_req(c, SMB2_QUERY_DIRECTORY, req, sizeof req, smb2_charge(outlen), &mid);
        if (rc)
            return rc;
        uint8_t *m;
        size_t ml;
        if ((rc = smb2_wait(c, mid, &m, &ml, NULL)))
            return rc;
        uint32_t st = smb2_status(m);
        if (st == SMB2_STATUS_NO_MORE_FILES) {
            free(m);
            return 0;
        }
        if (st != SMB2_STATUS_SUCCESS) {
            free(m);
            return smb2_err(c, (int)st, "QUERY_DIRECTORY: %s", smb2_status_name(st));
        }
        uint16_t off = smbd_get16(m + SMB2_HDR_SIZE + SMB2_QDRESP_OFFSET);
        uint32_t len = smbd_get32(m + SMB2_HDR_SIZE + SMB2_QDRESP_LENGTH);
        if ((size_t)off + len > ml) {
            free(m);
            return smb2_err(c, -EPROTO, "QUERY_DIRECTORY output out of bounds");
        }
        const uint8_t *p = m + off, *end = p + len;
        while (p + SMB2_FDI_NAME <= end) {
            uint32_t next = smbd_get32(p + SMB2_FDI_NEXT);
            uint32_t nl = smbd_get32(p + SMB2_FDI_NAME_LENGTH);
            if (nl > (size_t)(end - p) - SMB2_FDI_NAME)
                break;
            char name[1024];
            smb2_utf8(p + SMB2_FDI_NAME, nl, name, sizeof name);
            smb2_dirent e = { name, smbd_get64(p + SMB2_FDI_EOF), smbd_get64(p + SMB2_FDI_MTIME),
                              (smbd_get32(p + SMB2_FDI_ATTRS) & SMB2_FILE_ATTRIBUTE_DIRECTORY) != 0 };
            fn(ctx, &e);
            if (next == 0 || next > (size_t)(end - p))
                break;
            p += next;
        }
        free(m);
    }
}

/* ---- READ / WRITE ---- */

static bool smb2_use_rdma(const smb2_client *c)
{
    /* MS-SMB2 3.2.4.6/3.2.4.7: no RDMA channel when the session signs. */
    return c->t.rdma && !c->o.no_rdma && !c->sign;
}

uint32_t smb2_io_size(const smb2_client *c, bool write)
{
    uint32_t set = write ? c->io_write : c->io_read;
    uint32_t max = write ? c->info.max_write : c->info.max_read;
    uint32_t lim = smb2_use_rdma(c) ? c->t.max_rdma : c->t.rdma ? SMB2_INLINE_MAX : 1024u * 1024;
    if (lim > max)
        lim = max;
    if (set && set < lim)
        lim = set;
    return lim;
}

void smb2_set_io_size(smb2_client *c, uint32_t size)
{
    c->io_read = c->io_write = size;
}

typedef struct smb2_io {
    uint64_t mid;
    uint64_t off;
    uint8_t *buf;
    uint32_t len;
    void    *mr;
    bool     busy;
    uint64_t t0;
} smb2_io;

/* Builds and sends one READ or WRITE for io (RDMA channel when usable). */
static int smb2_io_submit(smb2_client *c, const smb2_fid *fid, smb2_io *io, bool write)
{
    smbd_buffer_desc d[SMBD_MAX_DESCS];
    unsigned nd = 0;
    bool rdma = smb2_use_rdma(c);
    io->mr = NULL;
    if (rdma) {
        int rc = c->t.reg(c->t.ctx, io->buf, io->len, !write, &io->mr, d, &nd);
        if (rc)
            return smb2_err(c, rc, "registering %u bytes: %s", io->len, strerror(-rc));
    }
    size_t fixed = SMB2_HDR_SIZE + SMB2_READREQ_FIXED;
    size_t len = fixed + (rdma ? 16u * nd : write ? io->len : 1);
    uint8_t *req = calloc(1, len);
    if (!req)
        return -ENOMEM;
    uint8_t *b = req + SMB2_HDR_SIZE;
    /* 3.0.2 and 3.1.1 may ask for remote invalidation; 3.0 must not. */
    uint32_t channel = !rdma ? SMB2_CHANNEL_NONE
                       : c->t.remote_invalidate && c->info.dialect >= SMB2_DIALECT_0302 ? SMB2_CHANNEL_RDMA_V1_INVALIDATE
                                                                                         : SMB2_CHANNEL_RDMA_V1;
    uint8_t *descs = b + SMB2_READREQ_FIXED;
    for (unsigned i = 0; i < nd; i++) {
        smbd_put64(descs + 16 * i + SMBD_BUFDESC_OFFSET, d[i].offset);
        smbd_put32(descs + 16 * i + SMBD_BUFDESC_TOKEN, d[i].token);
        smbd_put32(descs + 16 * i + SMBD_BUFDESC_LENGTH, d[i].length);
    }
    if (!write) {
        smbd_put16(b, SMB2_READREQ_SIZE);
        b[SMB2_READREQ_PADDING] = 0x50;
        smbd_put32(b + SMB2_READREQ_LENGTH, io->len);
        smbd_put64(b + SMB2_READREQ_OFFSET, io->off);
        memcpy(b + SMB2_READREQ_FILE_ID, fid->id, 16);
        smbd_put32(b + SMB2_READREQ_CHANNEL, channel);
        if (rdma) {
            smbd_put32(b + SMB2_READREQ_REMAINING, io->len);
            smbd_put16(b + SMB2_READREQ_CHINFO_OFF, (uint16_t)fixed);
            smbd_put16(b + SMB2_READREQ_CHINFO_LEN, (uint16_t)(16 * nd));
        }
    } else {
        smbd_put16(b, SMB2_WRITEREQ_SIZE);
        smbd_put64(b + SMB2_WRITEREQ_OFFSET, io->off);
        memcpy(b + SMB2_WRITEREQ_FILE_ID, fid->id, 16);
        smbd_put32(b + SMB2_WRITEREQ_CHANNEL, channel);
        if (rdma) {
            smbd_put32(b + SMB2_WRITEREQ_REMAINING, io->len);
            smbd_put16(b + SMB2_WRITEREQ_CHINFO_OFF, (uint16_t)fixed);
            smbd_put16(b + SMB2_WRITEREQ_CHINFO_LEN, (uint16_t)(16 * nd));
        } else {
            smbd_put16(b + SMB2_WRITEREQ_DATA_OFFSET, (uint16_t)fixed);
            smbd_put32(b + SMB2_WRITEREQ_LENGTH, io->len);
            memcpy(b + SMB2_WRITEREQ_FIXED, io->buf, io->len);
        }
    }
    int rc = smb2_send_req(c, write ? SMB2_WRITE : SMB2_READ, req, len, smb2_charge(io->len), &io->mid);
    free(req);
    if (rc && io->mr) {
        c->t.release(c->t.ctx, io->mr, 0);
        io->mr = NULL;
    }
    if (!rc) {
        io->busy = true;
        io->t0 = ndk_sync_time_now_ns();
        if (rdma)
            write ? c->info.rdma_writes++ : c->info.rdma_reads++;
        else
            write ? c->info.inline_writes++ : c->info.inline_reads++;
    }
    return rc;
}

/* Waits for io's response; *got receives the bytes read or written. */
static int smb2_io_finish(smb2_client *c, smb2_io *io, bool write, uint32_t *got)
{
    uint8_t *m;
    size_t ml;
    uint32_t inv = 0;
    io->busy = false;
    int rc = smb2_wait(c, io->mid, &m, &ml, &inv);
    if (c->lat_count) {
        if (*c->lat_count < c->lat_cap)
            c->lat[*c->lat_count] = ndk_sync_time_now_ns() - io->t0;
        (*c->lat_count)++;
    }
    if (io->mr) {
        /* Before the buffer is trusted or reused (MS-SMB2 3.2.5.11/3.2.5.12). */
        int rr = c->t.release(c->t.ctx, io->mr, rc ? 0 : inv);
        io->mr = NULL;
        if (!rc && rr) {
            free(m);
            return smb2_err(c, rr, "invalidating the I/O buffer: %s", strerror(-rr));
        }
    }
    if (rc)
        return rc;
    uint32_t st = smb2_status(m);
    *got = 0;
    if (st == SMB2_STATUS_END_OF_FILE && !write) {
        free(m);
        return 0;
    }
    if (st != SMB2_STATUS_SUCCESS) {
        free(m);
        return smb2_err(c, (int)st, "%s: %s", write ? "WRITE" : "READ", smb2_status_name(st));
    }
    const uint8_t *r = m + SMB2_HDR_SIZE;
    if (ml < SMB2_HDR_SIZE + 16) {
        free(m);
        return smb2_err(c, -EPROTO, "short %s response", write ? "WRITE" : "READ");
    }
    if (write) {
        *got = smbd_get32(r + SMB2_WRITERESP_COUNT);
    } else {
        uint8_t doff = r[SMB2_READRESP_DATA_OFFSET];
        uint32_t dlen = smbd_get32(r + SMB2_READRESP_DATA_LENGTH);
        if (dlen) {
            if ((size_t)doff + dlen > ml || dlen > io->len) {
                free(m);
                return smb2_err(c, -EPROTO, "READ data out of bounds");
            }
            memcpy(io->buf, m + doff, dlen);
            *got = dlen;
        } else {
            *got = smbd_get32(r + SMB2_READRESP_REMAINING);      /* placed by RDMA Write */
        }
        if (*got > io->len) {
            free(m);
            return smb2_err(c, -EPROTO, "READ returned %u bytes for %u", *got, io->len);
        }
    }
    free(m);
    return 0;
}

static int smb2_rw(smb2_client *c, const smb2_fid *fid, uint64_t off, uint8_t *buf, size_t len, unsigned depth,
                   size_t *done, bool write)
{
    smb2_io io[SMB2_MAX_DEPTH];
    memset(io, 0, sizeof io);
    if (depth == 0)
        depth = 1;
    if (depth > SMB2_MAX_DEPTH)
        depth = SMB2_MAX_DEPTH;
    uint32_t chunk = smb2_io_size(c, write);
    size_t issued = 0, total = 0;
    unsigned head = 0, inflight = 0;
    bool eof = false;
    int rc = 0;
    *done = 0;
    while (!rc && ((issued < len && !eof) || inflight)) {
        while (!rc && inflight < depth && issued < len && !eof) {
            smb2_io *x = &io[(head + inflight) % depth];
            x->off = off + issued;
            x->buf = buf + issued;
            x->len = (uint32_t)(len - issued < chunk ? len - issued : chunk);
            if (smb2_charge(x->len) > c->credits && inflight)
                break;
            rc = smb2_io_submit(c, fid, x, write);
            if (!rc) {
                issued += x->len;
                inflight++;
            }
        }
        if (rc || !inflight)
            break;
        smb2_io *x = &io[head];
        uint32_t got;
        rc = smb2_io_finish(c, x, write, &got);
        head = (head + 1) % depth;
        inflight--;
        if (rc)
            break;
        if (got < x->len) {
            if (write)
                rc = smb2_err(c, -EIO, "short WRITE: %u of %u bytes", got, x->len);
            eof = true;
        }
        /* Bytes count only while contiguous from the start. */
        if (total == x->off - off)
            total += got;
    }
    /* On failure, collect what is still in flight so no buffer stays registered. */
    while (inflight) {
        smb2_io *x = &io[head];
        uint32_t got;
        smb2_io_finish(c, x, write, &got);
        head = (head + 1) % depth;
        inflight--;
    }
    *done = total;
    return rc;
}

int smb2_read(smb2_client *c, const smb2_fid *fid, uint64_t off, void *buf, size_t len, unsigned depth, size_t *done)
{
    return smb2_rw(c, fid, off, buf, len, depth, done, false);
}

int smb2_write(smb2_client *c, const smb2_fid *fid, uint64_t off, const void *buf, size_t len, unsigned depth,
               size_t *done)
{
    return smb2_rw(c, fid, off, (uint8_t *)buf, len, depth, done, true);
}

void smb2_set_latency_sink(smb2_client *c, uint64_t *ns, size_t cap, size_t *count)
{
    c->lat = ns;
    c->lat_cap = cap;
    c->lat_count = count;
}

int smb2_logoff(smb2_client *c)
{
    uint8_t req[SMB2_HDR_SIZE + 4] = { 0 };
    smbd_put16(req + SMB2_HDR_SIZE, 4);
    uint8_t *m;
    size_t ml;
    int rc = smb2_call(c, SMB2_LOGOFF, req, sizeof req, 1, &m, &ml, "LOGOFF");
    if (!rc)
        free(m);
    c->session_id = 0;
    c->sign = c->have_key = false;
    return rc;
}
