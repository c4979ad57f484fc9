/*
 * wire.h - the connection's wire tap: packet capture (capture.c into a pcapng file, pcapng.c)
 * and wire faults (wirefault.c), both below the data path and the CM, where the bytes meet the
 * TCP socket (wire.c). docs/diagnostics.md and ndk-iwarp(7) describe what the user sees.
 *
 * Cost when off: a connection that is neither captured nor faulted has no tap (wire == NULL),
 * and every hook is one predictable branch on that pointer: no lock, no system call, no
 * allocation on the data path. A tapped connection's sends and receives go through wire.c,
 * which may copy (a corrupted byte is never written into the consumer's memory), delay, cut
 * or reset them, and records what actually crossed the socket.
 *
 * Included by cm.c, connector.c, provider.c, qp.c, rx.c, tx.c and the wire files.
 */
#ifndef IWARP_WIRE_TAP_H
#define IWARP_WIRE_TAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "iwarp.h"

/* ---- pcapng.c: one capture file, shared by every connection of the process that names the
 * same path (a file is process-wide by nature). Its mutex's job: the FILE and its order of
 * blocks; a leaf lock. ---- */
struct iw_pcapng;
/* Opens (or shares) the file at path ("%p" becomes the pid); NULL with a logged reason. Any
 * thread; may block (file I/O). */
struct iw_pcapng *iw_pcapng_open(const char *path);
void iw_pcapng_close(struct iw_pcapng *f);
/* Writes one Ethernet frame as an Enhanced Packet Block: hdr (hlen bytes) followed by the
 * payload pieces. Any thread; takes the file's lock; may block (buffered file I/O). */
void iw_pcapng_frame(struct iw_pcapng *f, uint64_t ts_us, const uint8_t *hdr, size_t hlen, const struct iovec *pl,
                     size_t plcnt, size_t pllen);
void iw_pcapng_flush(struct iw_pcapng *f);

/* ---- wirefault.c: the rules of iwarp.fault, parsed once per provider instance ---- */
enum iw_fault_kind {
    IW_FAULT_RESET,                   /* reset:bytes=N | reset:fpdu=N */
    IW_FAULT_CORRUPT,                 /* corrupt:fpdu=N[,offset=K] */
    IW_FAULT_STALL,                   /* stall:dir=tx|rx,ms=D[,bytes=N] */
    IW_FAULT_DROP_REPLY,              /* drop_reply */
    IW_FAULT_DELAY_REPLY,             /* delay_reply:ms=D */
    IW_FAULT_TERMINATE,               /* terminate:fpdu=N,layer=L,type=T,code=C */
};
/* A value or a range lo-hi drawn from the seed per connection. */
struct iw_fault_range {
    uint64_t lo, hi;
};
struct iw_fault_rule {
    enum iw_fault_kind kind;
    struct iw_fault_range bytes, fpdu, offset, ms;
    bool has_bytes, has_fpdu, has_offset;
    bool rx;                          /* stall: the receive direction */
    uint8_t layer, etype, ecode;      /* terminate (RFC 5040 §4.8) */
    uint16_t port;                    /* only connections with this local port (0: all) */
    uint32_t conn;                    /* only the conn-th connection of the instance (0: all) */
    char text[96];                    /* as written, for the log */
};
#define IW_FAULT_MAX_RULES 8u
struct iw_fault_rules {
    struct iw_fault_rule rule[IW_FAULT_MAX_RULES];
    unsigned n;
    uint64_t seed;
};
/* Parses "RULE[;RULE]..." (grammar in ndk-iwarp(7)); 0, or -EINVAL with *why set. */
int iw_fault_parse(const char *text, struct iw_fault_rules *out, const char **why);

/* ---- the provider instance's wire settings (provider.c reads them at load, frees at unload) ---- */
struct iw_wire_prov {
    char capture_path[256];           /* iwarp.capture; empty: no capture */
    uint16_t capture_port;            /* iwarp.capture_port; 0: every connection */
    struct iw_fault_rules faults;     /* iwarp.fault, iwarp.fault_seed */
    atomic_uint conn_seq;             /* connections set up so far (conn= of a rule) */
    pthread_mutex_t lock;             /* job: opening the capture file once (leaf) */
    struct iw_pcapng *file;           /* opened at the first captured connection */
    bool file_failed;
};

/* ---- the connection's tap (wire.c, capture.c, wirefault.c) ---- */
#define IW_WIRE_MAX_ACTS IW_FAULT_MAX_RULES
/* A rule made concrete for one connection (its ranges drawn). */
struct iw_fault_act {
    const struct iw_fault_rule *rule;
    uint64_t at;                      /* stream offset (bytes) or FPDU number (1 = first) */
    uint32_t offset;                  /* corrupt: byte in the FPDU */
    uint8_t xor;                      /* corrupt: the flip, never 0 */
    uint32_t ms;                      /* stall / delay */
    uint64_t pos;                     /* corrupt: the byte's stream offset, once found */
    bool found;
    bool done;
};

struct iw_wire {
    atomic_uint refs;                 /* the connector's and the QP's */
    uint32_t id;                      /* connection number in the instance (logs) */
    bool active;                      /* we sent the MPA Request */
    /* Capture (capture.c). TX fields belong to the sender of the moment (the CM under
     * dev->lock until the hand-over, then the TX engine under dp->tx_owned); RX fields likewise
     * to the receiver. The other direction's sequence number is read for ACKs: atomics. */
    struct iw_pcapng *file;           /* NULL: not captured */
    SOCKADDR_INET local, peer;
    uint32_t mss;
    _Atomic uint32_t snd_nxt, rcv_nxt;
    /* TX stream position and the FPDU tracker (wire.c): FPDU framing starts at data_start. */
    uint64_t tx_bytes, rx_bytes;
    bool data;                        /* the data path owns the socket */
    bool crc;
    uint64_t data_start;
    uint64_t fpdu_next;               /* stream offset of the next FPDU's first byte */
    uint64_t fpdu_no;                 /* FPDUs whose start was sent (1 = first) */
    uint8_t len_hi;                   /* first byte of a split ULPDU length */
    bool len_split;
    /* Faults (wirefault.c). */
    struct iw_fault_act act[IW_WIRE_MAX_ACTS];
    unsigned nact;
    uint64_t stall_until_ms[2];       /* 0 tx, 1 rx */
    uint64_t reply_hold_until_ms;     /* delay_reply */
    bool reset_done;
};

/* At connection setup, TCP connected, before any byte of MPA (the connector's fd): the tap of
 * this connection, or NULL when neither capture nor a fault applies. Writes the synthesized
 * TCP handshake to the capture. CM context (dev->lock held); may block on file I/O. */
struct iw_wire *iw_wire_attach(struct iw_provider *prov, int fd, bool active);
void iw_wire_get(struct iw_wire *w);
void iw_wire_put(struct iw_wire *w);          /* flushes the capture at the last put */
/* The QP took the socket over: FPDU framing starts here (crc: negotiated). TX engine's owner. */
void iw_wire_data_start(struct iw_wire *w, bool crc);

/* The tapped send / receive (wire.c): as sendmsg / recvmsg with MSG_DONTWAIT (-1 and errno),
 * after the faults, recording what crossed. data: the data path (FPDU faults apply), else the
 * CM's handshake frames. Caller: the direction's owner (see struct iw_wire). */
ssize_t iw_wire_send(struct iw_wire *w, int fd, const struct iovec *iov, size_t cnt, bool data);
ssize_t iw_wire_recv(struct iw_wire *w, int fd, const struct iovec *iov, size_t cnt);
/* Bytes taken from the socket by other means (the CM's peek-then-consume, the ring). */
void iw_wire_received(struct iw_wire *w, const void *buf, size_t n);

/* capture.c: frames of n bytes (from iov) in one direction; the synthesized handshake. */
void iw_capture_bytes(struct iw_wire *w, bool tx, const struct iovec *iov, size_t cnt, size_t n);
void iw_capture_handshake(struct iw_wire *w, uint32_t isn_local, uint32_t isn_peer);
void iw_capture_reset(struct iw_wire *w);   /* the RST a reset fault sent (the sender) */
/* wirefault.c: the connection's concrete faults from the rules (0 when none apply). */
unsigned iw_fault_bind(struct iw_wire *w, const struct iw_fault_rules *r, uint16_t local_port);

#endif /* IWARP_WIRE_TAP_H */
