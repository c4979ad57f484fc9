/*
 * smb2_client.h - a small SMB2/3 client (MS-SMB2) over SMB Direct (smbd.h) or TCP (port 445
 * framing): NEGOTIATE 3.0.2/3.1.1, SESSION_SETUP (NTLMv2 or anonymous/guest), TREE_CONNECT,
 * CREATE, READ/WRITE (RDMA channel with remote or local invalidation over SMB Direct, inline
 * otherwise), QUERY_INFO, QUERY_DIRECTORY, CLOSE, LOGOFF. One thread drives one client.
 *
 * Functions return 0, a negative errno for transport and local failures, or a positive
 * NTSTATUS the server answered with (smb2_status_name names it).
 */
#ifndef SMB2_CLIENT_H
#define SMB2_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smbd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How SMB2 messages travel: SMB Direct (framing by the transport, RDMA buffers) or TCP. */
typedef struct smb2_transport {
    void *ctx;
    bool  rdma;                      /* register/release available */
    int  (*send)(void *ctx, const uint8_t *msg, size_t len);
    int  (*recv)(void *ctx, uint8_t **msg, size_t *len, uint32_t *invalidated, int timeout_ms);
    int  (*reg)(void *ctx, void *buf, size_t len, bool peer_writes, void **mr, smbd_buffer_desc *d, unsigned *n);
    int  (*release)(void *ctx, void *mr, uint32_t invalidated);
    void (*close)(void *ctx);
    size_t max_message;              /* largest SMB2 message the peer accepts */
    uint32_t max_rdma;               /* MaxReadWriteSize */
    bool  remote_invalidate;
} smb2_transport;

/* Wraps an SMB Direct connection (smb2_close closes it). */
void smb2_transport_smbd(smbd_conn *c, smb2_transport *t);
/* TCP to host:port (445): SMB2 with the 4-byte Direct TCP length prefix (MS-SMB2 2.1). */
int smb2_transport_tcp(const SOCKADDR_INET *dst, int timeout_ms, smb2_transport *t);

typedef struct smb2_client smb2_client;

typedef struct smb2_options {
    uint16_t max_dialect;            /* 0x0311 (default) or 0x0302 */
    bool     sign;                   /* require signing (forces inline I/O) */
    bool     no_rdma;                /* inline READ/WRITE even over SMB Direct */
    int      timeout_ms;             /* per response */
    /* Go on when the final SESSION_SETUP signature does not verify (MS-SMB2 3.2.5.3.1 says
     * fail): ksmbd 6.1.192 signs it with a key we cannot reproduce, although it accepts and
     * produces correct signatures on every later message (see smb2_info.final_signature_ok). */
    bool     accept_unverified_setup;
} smb2_options;

typedef struct smb2_info {
    uint16_t dialect;
    uint32_t max_read, max_write, max_transact;
    bool     signing;                /* the session signs */
    bool     guest, anonymous;
    bool     final_signature_ok;     /* 3.1.1: the final SESSION_SETUP signature verified */
    uint64_t rdma_reads, rdma_writes, inline_reads, inline_writes;
} smb2_info;

int smb2_open(smb2_transport *t, const smb2_options *o, smb2_client **out);
const smb2_info *smb2_get_info(const smb2_client *c);
const char *smb2_error_text(const smb2_client *c);
const char *smb2_status_name(uint32_t status);

int smb2_negotiate(smb2_client *c);
/* user NULL or "": anonymous (guest where the server maps it). */
int smb2_session_setup(smb2_client *c, const char *user, const char *domain, const char *password);
int smb2_tree_connect(smb2_client *c, const char *server, const char *share);

typedef struct smb2_fid { uint8_t id[16]; } smb2_fid;
enum { SMB2_OPEN_READ, SMB2_OPEN_WRITE, SMB2_OPEN_DIR };
/* path relative to the share, '/' or '\\' separated; "" is the root. */
int smb2_create(smb2_client *c, const char *path, int mode, smb2_fid *fid, uint64_t *size, bool *is_dir);
int smb2_close_file(smb2_client *c, const smb2_fid *fid);
int smb2_query_size(smb2_client *c, const smb2_fid *fid, uint64_t *size);

/* Reads/writes len bytes at off, split into requests of at most the negotiated size, with up
 * to depth requests in flight. *done: bytes transferred (a read stops at end of file). */
int smb2_read(smb2_client *c, const smb2_fid *fid, uint64_t off, void *buf, size_t len, unsigned depth,
              size_t *done);
int smb2_write(smb2_client *c, const smb2_fid *fid, uint64_t off, const void *buf, size_t len, unsigned depth,
               size_t *done);
/* The largest single READ/WRITE this client issues. */
uint32_t smb2_io_size(const smb2_client *c, bool write);
void smb2_set_io_size(smb2_client *c, uint32_t size);

typedef struct smb2_dirent {
    const char *name;                /* UTF-8 */
    uint64_t    size;
    uint64_t    mtime;               /* FILETIME */
    bool        is_dir;
} smb2_dirent;
typedef void (*smb2_dir_fn)(void *ctx, const smb2_dirent *e);
int smb2_query_directory(smb2_client *c, const smb2_fid *dir, smb2_dir_fn fn, void *ctx);

/* Records the duration of each READ/WRITE (submit to response, ns) into ns[0..cap) while
 * set; *count counts them all (it may exceed cap). NULL stops recording. */
void smb2_set_latency_sink(smb2_client *c, uint64_t *ns, size_t cap, size_t *count);

int smb2_logoff(smb2_client *c);
/* Frees the client and closes its transport. */
void smb2_close(smb2_client *c);

#ifdef __cplusplus
}
#endif

#endif /* SMB2_CLIENT_H */
