/*
 * ndk/sysview.h - the system view's file format: what every OpenNDK runtime publishes about the
 * NDK objects of its process, so that `ndkinfo` in another process can list the machine's
 * connections, endpoints, counters and resources without stopping anyone (ndk-sysview(7)).
 *
 * One file per process, "<pid>.ndk" in the runtime directory (NDK_RUNTIME_DIR; else /run/openndk
 * for root, $XDG_RUNTIME_DIR/openndk, or /tmp/openndk-<uid>), mode 0600 in a 0700 directory. The
 * process holds a POSIX write lock on the file while it lives: a file nobody locks is a dead
 * process's and any reader that may removes it.
 *
 *   offset 0                     struct ndk_sv_header (one page)
 *   NDK_SV_PAGE + k * chunk      chunk k: header.chunk_records records of NDK_SV_RECORD_SIZE
 *
 * The file only grows (chunks are appended; header.nchunks is stored after the chunk exists), so a
 * reader may map what fstat() says and read any chunk below nchunks.
 *
 * Records: each is owned by one object. Its owner rewrites the descriptive fields between
 * ndk_sv_begin() and ndk_sv_end() (a sequence lock: a reader copies the record and retries while
 * seq is odd or changed). Counters are words the owner's engine writes with ndk_sv_add() (one
 * writer at a time, no read-modify-write, no lock); readers take them as they are.
 *
 * Nothing here may let another process learn a memory key or a buffer's contents: no STag,
 * token, address or data is ever published (ndk-sysview(7), "Security").
 *
 * This header is a file format: it includes nothing but <stdint.h>, so readers in any language
 * and tests can take it alone.
 */
#ifndef NDK_SYSVIEW_H
#define NDK_SYSVIEW_H

#include <stdint.h>

#define NDK_SV_MAGIC        0x3157454956534b4eull   /* "NKSVIEW1" little-endian */
#define NDK_SV_VERSION      1u
#define NDK_SV_PAGE         4096u
#define NDK_SV_RECORD_SIZE  512u
#define NDK_SV_CHUNK_RECORDS 64u
#define NDK_SV_MAX_CHUNKS   4096u                   /* 262,144 records, 128 MiB: the file's bound */

/* An address, provider-neutral: family 2 (AF_INET) or 10 (AF_INET6), port in host order. */
struct ndk_sv_addr {
    uint16_t family;
    uint16_t port;
    uint32_t scope_id;
    uint8_t  addr[16];                /* IPv4: the first 4 bytes */
};

struct ndk_sv_header {
    uint64_t magic;                   /* NDK_SV_MAGIC, stored last when the file is ready */
    uint32_t version;                 /* NDK_SV_VERSION */
    uint32_t record_size;             /* NDK_SV_RECORD_SIZE */
    uint32_t chunk_records;           /* NDK_SV_CHUNK_RECORDS */
    uint32_t nchunks;                 /* chunks that exist (release store after ftruncate) */
    uint32_t pid;
    uint32_t uid;
    uint64_t start_time;              /* /proc/<pid>/stat field 22 (clock ticks after boot) */
    uint64_t net_ns;                  /* inode of /proc/self/ns/net: adapters match within one */
    uint64_t created_ns;              /* CLOCK_REALTIME at publication */
    char     comm[16];                /* /proc/self/comm */
    char     exe[128];                /* the start of the command line, for humans */
};

enum ndk_sv_type {
    NDK_SV_FREE = 0,
    NDK_SV_ADAPTER,                   /* an adapter bound in this process (the runtime's record) */
    NDK_SV_QP,
    NDK_SV_CQ,
    NDK_SV_SRQ,
    NDK_SV_PD,
    NDK_SV_MR,
    NDK_SV_MW,
    NDK_SV_CONNECTOR,
    NDK_SV_LISTENER,
    NDK_SV_SHARED_ENDPOINT,
    NDK_SV_TYPE_COUNT
};

/* The NDK performance counters, in the order of NDIS_NDK_PERFORMANCE_COUNTERS (30 words). */
#define NDK_SV_COUNTERS 30

/* ndk_sv_adapter.flags */
#define NDK_SV_ADAPTER_COUNTERS 0x1u  /* the provider keeps its NDK counters in this record:
                                       * OID_NDK_STATISTICS adds every process's (whole adapter) */

struct ndk_sv_adapter {
    char     provider[32];
    char     ifname[16];
    uint32_t ifindex;
    uint32_t flags;                   /* NDK_SV_ADAPTER_* */
    uint32_t open_instances;          /* NDK_ADAPTER instances open now */
    uint32_t missing;                 /* counters the provider does not keep: bit k is counters[k]
                                       * (its MissingCounterMask, written by the runtime); 0 in
                                       * records of runtimes before it, which did not say */
    uint64_t counters[NDK_SV_COUNTERS];   /* atomic words: any thread of the owner adds */
};

/* Per-QP record: written by the provider. The *_posted / *_completed words are each written by
 * one thread at a time (the poster, the completer), so outstanding = posted - completed. */
struct ndk_sv_qp {
    char     state[16];               /* provider's name of the QP state: "RTS", "ERROR", ... */
    struct ndk_sv_addr local, remote; /* family 0 until connected */
    uint64_t pd, rcq, icq, srq, connector;   /* record ids (0: none) */
    uint32_t sq_depth, rq_depth;
    uint32_t ird, ord;
    int32_t  first_error;             /* first protocol error, -errno (0: none) */
    uint32_t pad;
    /* counters (ndk_sv_add) */
    uint64_t sq_posted, sq_completed, rq_posted, rq_completed;
    uint64_t sq_oldest_ns, rq_oldest_ns;     /* CLOCK_MONOTONIC post time of the oldest
                                              * outstanding request, 0 when none */
    uint64_t bytes_out, bytes_in, ops_out, ops_in;   /* payload bytes, completed operations */
    uint64_t errors;                  /* completions with an error status */
};

struct ndk_sv_cq {
    uint32_t depth;
    uint32_t pad;
    uint64_t completions;             /* counters: queued by the provider */
    uint64_t polled;                  /*           taken by the consumer */
    uint64_t errors;                  /*           error completions */
};

struct ndk_sv_srq {
    uint64_t pd;
    uint32_t depth;
    uint32_t pad;
    uint64_t posted, completed;       /* counters */
};

struct ndk_sv_mem {                   /* NDK_SV_MR and NDK_SV_MW: never a key or an address */
    uint64_t pd;
    uint64_t length;                  /* registered or bound length, 0 when none */
    uint32_t fast_register;           /* MR created for fast registration */
    uint32_t bound;                   /* registered (MR) or bound (MW) now */
};

struct ndk_sv_conn {                  /* NDK_SV_CONNECTOR */
    char     state[16];
    struct ndk_sv_addr local, remote;
    uint64_t qp;                      /* record id of the QP, 0 before connect/accept */
    uint32_t ird, ord;
};

struct ndk_sv_endpoint {              /* NDK_SV_LISTENER, NDK_SV_SHARED_ENDPOINT */
    char     state[16];
    struct ndk_sv_addr local;
};

struct ndk_sv_rec {
    uint32_t seq;                     /* odd while the owner rewrites; see ndk_sv_begin */
    uint16_t type;                    /* enum ndk_sv_type */
    uint16_t pad;
    uint64_t id;                      /* unique in the process, never reused: "qp#<id>" */
    uint64_t adapter;                 /* the adapter record's id (itself for NDK_SV_ADAPTER) */
    uint64_t created_ns;              /* CLOCK_MONOTONIC */
    union {
        struct ndk_sv_adapter  adapter;
        struct ndk_sv_qp       qp;
        struct ndk_sv_cq       cq;
        struct ndk_sv_srq      srq;
        struct ndk_sv_mem      mem;
        struct ndk_sv_conn     conn;
        struct ndk_sv_endpoint ep;
        uint8_t                raw[NDK_SV_RECORD_SIZE - 32];
    } u;
};

/* The owner's side. All are lock-free and never block; NULL is ignored. begin/end are for state
 * changes, not the data path: the read-modify-writes keep the record's stores between them
 * (acquire: none moves above the first; release: none moves below the second). */
static inline void ndk_sv_begin(struct ndk_sv_rec *r)
{
    if (r)
        __atomic_fetch_add(&r->seq, 1, __ATOMIC_ACQ_REL);
}
static inline void ndk_sv_end(struct ndk_sv_rec *r)
{
    if (r)
        __atomic_fetch_add(&r->seq, 1, __ATOMIC_RELEASE);
}
/* A counter word with one writer at a time: a plain load and store, no locked instruction. */
static inline void ndk_sv_add(uint64_t *w, uint64_t n)
{
    __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
static inline void ndk_sv_set(uint64_t *w, uint64_t v)
{
    __atomic_store_n(w, v, __ATOMIC_RELAXED);
}
/* A counter word several threads add to (the adapter's counters). */
static inline void ndk_sv_add_shared(uint64_t *w, uint64_t n)
{
    __atomic_fetch_add(w, n, __ATOMIC_RELAXED);
}

#endif /* NDK_SYSVIEW_H */
