/* smb2_auth.h - NTLMv2, SPNEGO tokens, SMB 3.x keys, signing and preauth (smb2_auth.c). */
#ifndef SMB2_AUTH_H
#define SMB2_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

size_t smb2_utf16(const char *s, uint8_t *out, size_t cap, bool upper);
void smb2_random(void *buf, size_t len);

/* SPNEGO NegTokenInit carrying an NTLMSSP token, and the NegTokenResp for the next one.
 * Return the bytes written, 0 when cap is too small. */
size_t smb2_spnego_init(const uint8_t *tok, size_t len, uint8_t *out, size_t cap);
size_t smb2_spnego_resp(const uint8_t *tok, size_t len, uint8_t *out, size_t cap);
/* The NTLMSSP message inside a security blob (raw or SPNEGO-wrapped), or NULL. */
const uint8_t *smb2_find_ntlmssp(const uint8_t *blob, size_t len, size_t *tok_len);

size_t smb2_ntlm_negotiate(uint8_t out[32]);
/* AUTHENTICATE for the server's CHALLENGE: NTLMv2 for user/domain/password, anonymous when
 * user is NULL or empty. session_key receives the exported session key (zeros if anonymous).
 * 0, -EPROTO (bad challenge) or -EMSGSIZE. */
int smb2_ntlm_authenticate(const uint8_t *chal, size_t chal_len, const char *user, const char *domain,
                           const char *password, uint8_t *out, size_t cap, size_t *out_len, uint8_t session_key[16]);

/* SP800-108 counter-mode KDF with HMAC-SHA256, L = 128 (MS-SMB2 3.1.4.2). label_len counts
 * the label's NUL. */
void smb2_kdf(const uint8_t key[16], const char *label, size_t label_len, const uint8_t *ctx, size_t ctx_len,
              uint8_t out[16]);
/* AES-128-CMAC signature over the whole message (sets SMB2_FLAGS_SIGNED). */
void smb2_sign(const uint8_t key[16], uint8_t *msg, size_t len);
bool smb2_verify(const uint8_t key[16], const uint8_t *msg, size_t len);
/* H = SHA-512(H || msg). */
void smb2_preauth_update(uint8_t hash[64], const uint8_t *msg, size_t len);

#endif
