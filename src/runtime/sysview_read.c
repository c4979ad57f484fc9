/* sysview_read.c - the reading side of the system view (ndk_rt_sysview_read in
 * ndk/runtime.h): every live process's registry the caller may read, copied record by record
 * under each record's sequence lock, so the publishers never stop or wait for a reader.
 *
 * Registries are another user's data when root reads them: every size, count and string is
 * checked or bounded here, and nothing in a file is trusted to point anywhere. */
#define _GNU_SOURCE
#pragma GCC visibility push(default)
#include <ndk/runtime.h>
#pragma GCC visibility pop
#include "rt_internal.h"
#include "sysview_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ndk_status.h"

_Static_assert(sizeof(struct ndk_sv_rec) == NDK_SV_RECORD_SIZE, "record size is part of the format");
_Static_assert(sizeof(struct ndk_sv_header) <= NDK_SV_PAGE, "the header fits its page");
_Static_assert(sizeof(((NDIS_NDK_STATISTICS_INFO *)0)->CounterSet) == NDK_SV_COUNTERS * sizeof(uint64_t),
               "the adapter record holds the NDK counter set");

const char *ndk_rt_sysview_type_name(unsigned type)
{
    static const char *const names[NDK_SV_TYPE_COUNT] = {
        [NDK_SV_FREE] = "free", [NDK_SV_ADAPTER] = "adapter", [NDK_SV_QP] = "qp", [NDK_SV_CQ] = "cq",
        [NDK_SV_SRQ] = "srq", [NDK_SV_PD] = "pd", [NDK_SV_MR] = "mr", [NDK_SV_MW] = "mw",
        [NDK_SV_CONNECTOR] = "connector", [NDK_SV_LISTENER] = "listener",
        [NDK_SV_SHARED_ENDPOINT] = "shared-endpoint",
    };
    return type < NDK_SV_TYPE_COUNT ? names[type] : "?";
}

#define TERMINATE(field) ((field)[sizeof(field) - 1] = '\0')

/* Strings in a copied record end inside their field, whatever the file held. */
static void sanitize(struct ndk_sv_rec *r)
{
    switch (r->type) {
    case NDK_SV_ADAPTER:
        TERMINATE(r->u.adapter.provider);
        TERMINATE(r->u.adapter.ifname);
        break;
    case NDK_SV_QP:
        TERMINATE(r->u.qp.state);
        break;
    case NDK_SV_CONNECTOR:
        TERMINATE(r->u.conn.state);
        break;
    case NDK_SV_LISTENER:
    case NDK_SV_SHARED_ENDPOINT:
        TERMINATE(r->u.ep.state);
        break;
    default:
        break;
    }
}

/* The sequence number again, ordered after the copy's loads. gcc rejects fences under
 * -fsanitize=thread, so TSan builds (test builds on x86-64, where loads are not reordered with
 * older loads) take a plain sequentially consistent load instead. */
static inline uint32_t rt_sv_seq_after_copy(const struct ndk_sv_rec *src)
{
#if defined(__SANITIZE_THREAD__)
    return __atomic_load_n(&src->seq, __ATOMIC_SEQ_CST);
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&src->seq, __ATOMIC_RELAXED);
#endif
}

/* Copies a record its owner may be rewriting: 1 with a consistent copy, 0 for a free or
 * unknown record, or one that kept changing. */
static int copy_record(const struct ndk_sv_rec *src, struct ndk_sv_rec *dst)
{
    for (int tries = 0; tries < 64; tries++) {
        uint32_t s1 = __atomic_load_n(&src->seq, __ATOMIC_ACQUIRE);
        if (s1 & 1)
            continue;
        memcpy(dst, (const void *)src, sizeof *dst);
        if (rt_sv_seq_after_copy(src) != s1)
            continue;
        if (dst->type == NDK_SV_FREE || dst->type >= NDK_SV_TYPE_COUNT)
            return 0;
        sanitize(dst);
        return 1;
    }
    return 0;
}

struct reader {
    ndk_rt_sysview *sv;
    size_t cap;
    int own_known;
    dev_t own_dev;
    ino_t own_ino;
};

static int add_process(struct reader *rd, ndk_rt_sv_process *p)
{
    ndk_rt_sysview *sv = rd->sv;
    if (sv->count == rd->cap) {
        size_t cap = rd->cap ? rd->cap * 2 : 16;
        ndk_rt_sv_process *n = realloc(sv->processes, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        sv->processes = n;
        rd->cap = cap;
    }
    sv->processes[sv->count++] = *p;
    return 0;
}

/* Reads one registry file. May block (file I/O). 0 also when the file is skipped. */
static int read_file(struct reader *rd, int dfd, const char *name, uid_t dir_uid)
{
    char *end;
    long pid = strtol(name, &end, 10);
    if (pid <= 0 || strcmp(end, ".ndk") != 0)
        return 0;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == EACCES || errno == EPERM)
            rd->sv->skipped++;
        return 0;
    }
    struct stat st;
    int own = 0;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != dir_uid || st.st_size < (off_t)NDK_SV_PAGE) {
        close(fd);
        return 0;
    }
    own = rd->own_known && st.st_dev == rd->own_dev && st.st_ino == rd->own_ino;
    if (!own && rt_sysview_file_locked(fd) == 0) {
        /* Nobody holds its lock: the process is gone. Remove it if we may. */
        unlinkat(dfd, name, 0);
        close(fd);
        return 0;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return 0;
    const struct ndk_sv_header *h = (const void *)map;
    int rc = 0;
    ndk_rt_sv_process p;
    memset(&p, 0, sizeof p);
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != NDK_SV_MAGIC || h->version != NDK_SV_VERSION ||
        h->record_size != NDK_SV_RECORD_SIZE || h->chunk_records != NDK_SV_CHUNK_RECORDS || h->pid != (uint32_t)pid)
        goto out;
    memcpy(&p.header, h, sizeof p.header);
    TERMINATE(p.header.comm);
    TERMINATE(p.header.exe);
    p.header.uid = (uint32_t)st.st_uid;       /* the file's owner, not what it claims */
    uint64_t chunk = (uint64_t)NDK_SV_CHUNK_RECORDS * NDK_SV_RECORD_SIZE;
    uint64_t nchunks = __atomic_load_n(&h->nchunks, __ATOMIC_ACQUIRE);
    uint64_t fit = (size - NDK_SV_PAGE) / chunk;
    if (nchunks > fit)
        nchunks = fit;
    if (nchunks > NDK_SV_MAX_CHUNKS)
        nchunks = NDK_SV_MAX_CHUNKS;
    size_t max = (size_t)(nchunks * NDK_SV_CHUNK_RECORDS);
    p.records = max ? malloc(max * sizeof *p.records) : NULL;
    if (max && !p.records) {
        rc = -ENOMEM;
        goto out;
    }
    const struct ndk_sv_rec *recs = (const void *)(map + NDK_SV_PAGE);
    for (size_t i = 0; i < max; i++)
        if (copy_record(&recs[i], &p.records[p.count]))
            p.count++;
    rc = add_process(rd, &p);
    if (rc == 0)
        p.records = NULL;
out:
    free(p.records);
    munmap((void *)map, size);
    return rc;
}

/* Reads every registry in dir, whose files must belong to dir_uid. May block. */
static int read_dir(struct reader *rd, const char *dir, uid_t dir_uid)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)))
        rc = read_file(rd, dirfd(d), e->d_name, dir_uid);
    closedir(d);
    return rc;
}

/* A directory another user owns is read only when it looks like one the runtime made: a real
 * directory of that user that nobody else may write. */
static int dir_owner(const char *dir, uid_t *uid)
{
    struct stat st;
    if (lstat(dir, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode) || (st.st_mode & 022))
        return -EPERM;
    *uid = st.st_uid;
    return 0;
}

static int cmp_pid(const void *a, const void *b)
{
    const ndk_rt_sv_process *x = a, *y = b;
    return x->header.pid < y->header.pid ? -1 : x->header.pid > y->header.pid;
}

NTSTATUS ndk_rt_sysview_read(const char *dir, ndk_rt_sysview **out)
{
    if (!out)
        return STATUS_INVALID_PARAMETER;
    *out = NULL;
    struct reader rd;
    memset(&rd, 0, sizeof rd);
    rd.sv = calloc(1, sizeof *rd.sv);
    if (!rd.sv)
        return STATUS_INSUFFICIENT_RESOURCES;
    rd.own_known = rt_sysview_own_file(&rd.own_dev, &rd.own_ino);

    char def[RT_SV_PATH_MAX];
    int explicit_dir = dir || (getenv("NDK_RUNTIME_DIR") && *getenv("NDK_RUNTIME_DIR"));
    if (!dir) {
        if (rt_sysview_default_dir(def, sizeof def) < 0) {
            free(rd.sv);
            return STATUS_NAME_TOO_LONG;
        }
        dir = def;
    }
    snprintf(rd.sv->dir, sizeof rd.sv->dir, "%s", dir);
    uid_t uid = 0;
    int rc = dir_owner(dir, &uid);
    int found = rc == 0;
    if (rc == 0)
        rc = read_dir(&rd, dir, uid);
    else if (rc == -EACCES || rc == -EPERM) {
        rd.sv->skipped++;
        rc = 0;
    }
    if ((rc == 0 || rc == -ENOENT) && !explicit_dir && geteuid() == 0) {
        /* Root sees every user's registry in its default places. */
        static const char *const patterns[] = { "/run/user/*/openndk", "/tmp/openndk-*" };
        rc = 0;
        for (size_t i = 0; i < 2 && rc == 0; i++) {
            glob_t g;
            if (glob(patterns[i], GLOB_NOSORT, NULL, &g) != 0)
                continue;
            for (size_t j = 0; j < g.gl_pathc && rc == 0; j++)
                if (dir_owner(g.gl_pathv[j], &uid) == 0) {
                    found = 1;
                    rc = read_dir(&rd, g.gl_pathv[j], uid);
                }
            globfree(&g);
        }
    }
    if (rc < 0 && rc != -ENOENT) {
        NTSTATUS st = rc == -ENOMEM ? STATUS_INSUFFICIENT_RESOURCES : ndk_status_from_errno(rc);
        ndk_rt_sysview_free(rd.sv);
        return st;
    }
    if (!found && rd.sv->skipped == 0) {
        ndk_rt_sysview_free(rd.sv);
        return STATUS_NOT_FOUND;
    }
    if (rd.sv->count > 1)
        qsort(rd.sv->processes, rd.sv->count, sizeof *rd.sv->processes, cmp_pid);
    *out = rd.sv;
    return STATUS_SUCCESS;
}

void ndk_rt_sysview_free(ndk_rt_sysview *sv)
{
    if (!sv)
        return;
    for (ULONG i = 0; i < sv->count; i++)
        free(sv->processes[i].records);
    free(sv->processes);
    free(sv);
}

/* OID_NDK_STATISTICS counts the whole adapter, as on Windows: adds the counters every other
 * process keeps for the same provider on the same interface of the same network namespace.
 * May block (file I/O); no lock held. */
void rt_sysview_add_peers(const char *provider, uint32_t ifindex, uint64_t counters[NDK_SV_COUNTERS])
{
    uint64_t ns = rt_sysview_net_ns();
    if (!ns)
        return;
    ndk_rt_sysview *sv = NULL;
    if (ndk_rt_sysview_read(NULL, &sv) != STATUS_SUCCESS)
        return;
    for (ULONG i = 0; i < sv->count; i++) {
        const ndk_rt_sv_process *p = &sv->processes[i];
        if (p->header.pid == (uint32_t)getpid() || p->header.net_ns != ns)
            continue;
        for (ULONG j = 0; j < p->count; j++) {
            const struct ndk_sv_rec *r = &p->records[j];
            if (r->type != NDK_SV_ADAPTER || !(r->u.adapter.flags & NDK_SV_ADAPTER_COUNTERS) ||
                r->u.adapter.ifindex != ifindex || strcmp(r->u.adapter.provider, provider) != 0)
                continue;
            for (int k = 0; k < NDK_SV_COUNTERS; k++)
                counters[k] += r->u.adapter.counters[k];
        }
    }
    ndk_rt_sysview_free(sv);
}
