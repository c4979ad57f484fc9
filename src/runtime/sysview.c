/* sysview.c - the publishing side of the system view (ndk/sysview.h, ndk-sysview(7)): one
 * registry file per process, shared by every runtime the process opens, in which providers and
 * the runtime keep one record per NDK object.
 *
 * The file only grows, one chunk at a time, and each chunk is its own mapping, so a record never
 * moves while its owner writes it. The process holds a POSIX write lock on the file while it
 * lives: readers take a file nobody locks for a dead process's (the lock goes with the process,
 * whatever way it ends).
 *
 * When publishing is off (NDK_SYSVIEW=0, `sysview = 0`), the directory is unusable or the file
 * is full, records are private memory: providers never need to know. */
#define _GNU_SOURCE
#include "rt_internal.h"
#include "sysview_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Marks a record that lives in private memory (ndk_sv_rec.pad); readers never see those. */
#define SV_PRIVATE 0x5056u

/* Job of sv_lock: everything in struct sv_state. Held only at object create and close and at
 * runtime open and close, never on the data path and never across a provider call. */
static pthread_mutex_t sv_lock = PTHREAD_MUTEX_INITIALIZER;

static struct sv_state {
    int refs;                         /* open runtimes of this process */
    pid_t owner;                      /* the process the state belongs to (a fork child is not) */
    int fd;                           /* the registry file, -1 when not publishing */
    char path[RT_SV_PATH_MAX];
    struct ndk_sv_header *header;
    struct ndk_sv_rec *chunks[NDK_SV_MAX_CHUNKS];
    uint32_t nchunks;
    struct ndk_sv_rec **free_recs;    /* records in the file not in use */
    size_t nfree, free_cap;
    size_t in_use;                    /* records in the file handed out */
    uint64_t next_id;
    int warned_full;
} sv = { .fd = -1 };

static uint64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Never blocks for long. The default directory when NDK_RUNTIME_DIR is unset. */
int rt_sysview_default_dir(char *buf, size_t len)
{
    const char *env = getenv("NDK_RUNTIME_DIR");
    int n;
    if (env && *env)
        n = snprintf(buf, len, "%s", env);
    else if (geteuid() == 0)
        n = snprintf(buf, len, "/run/openndk");
    else if (getenv("XDG_RUNTIME_DIR") && *getenv("XDG_RUNTIME_DIR"))
        n = snprintf(buf, len, "%s/openndk", getenv("XDG_RUNTIME_DIR"));
    else
        n = snprintf(buf, len, "/tmp/openndk-%u", (unsigned)geteuid());
    return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* Creates the directory (0700) or checks the one there: ours, a real directory, and nobody
 * else may write in it. May block (file system). */
static int ensure_dir(const char *dir)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (lstat(dir, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
        return -EPERM;
    return 0;
}

/* 1 when some process holds a lock on fd's file (a live registry), 0 when none, -errno. */
int rt_sysview_file_locked(int fd)
{
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    if (fcntl(fd, F_GETLK, &fl) < 0)
        return -errno;
    return fl.l_type != F_UNLCK;
}

/* Removes registries of processes that died (no lock held) from our directory. May block. */
static void sweep_dead(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        int tmp = l > 4 && !strcmp(e->d_name + l - 4, ".tmp");
        if (!tmp && !(l > 4 && !strcmp(e->d_name + l - 4, ".ndk")))
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            continue;
        struct stat st;
        /* A .tmp is unlocked for an instant while its process creates it: leave young ones. */
        int young = fstat(fd, &st) == 0 && tmp && (time_t)st.st_mtim.tv_sec + 10 > time(NULL);
        if (!young && S_ISREG(st.st_mode) && rt_sysview_file_locked(fd) == 0)
            unlinkat(dirfd(d), e->d_name, 0);
        close(fd);
    }
    closedir(d);
}

/* /proc/<pid>/stat field 22 (start time in clock ticks), 0 when unknown. */
static uint64_t start_time_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* comm may hold spaces and parentheses: count fields after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    unsigned long long v = 0;
    int field = 2;
    for (p++; *p && field < 22; p++)
        if (*p == ' ')
            field++;
    if (field == 22)
        v = strtoull(p, NULL, 10);
    return v;
}

static void read_proc_self(struct ndk_sv_header *h)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/comm", "re");
    if (f) {
        if (fgets(buf, sizeof buf, f)) {
            buf[strcspn(buf, "\n")] = '\0';
            buf[sizeof h->comm - 1] = '\0';
            memcpy(h->comm, buf, strlen(buf) + 1);
        }
        fclose(f);
    }
    f = fopen("/proc/self/cmdline", "re");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        for (size_t i = 0; i + 1 < n; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[n < sizeof h->exe ? n : sizeof h->exe - 1] = '\0';
        memcpy(h->exe, buf, strlen(buf) + 1);
        fclose(f);
    }
    h->start_time = start_time_of(getpid());
    struct stat st;
    if (stat("/proc/self/ns/net", &st) == 0)
        h->net_ns = (uint64_t)st.st_ino;
}

/* sv_lock held. Creates and publishes this process's file; -errno leaves publishing off. */
static int open_file(struct ndk_rt *rt)
{
    char dir[RT_SV_PATH_MAX - 32];
    int rc = rt_sysview_default_dir(dir, sizeof dir);
    if (rc == 0)
        rc = ensure_dir(dir);
    if (rc == -EPERM)
        rt_log(rt, NDK_LOG_WARNING,
               "system view off: runtime directory %s is not a directory of this user that only it may write", dir);
    else if (rc < 0)
        rt_log(rt, NDK_LOG_WARNING, "system view off: runtime directory %s: %s", dir, strerror(-rc));
    if (rc < 0)
        return rc;
    sweep_dead(dir);
    char tmp[RT_SV_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/%d.tmp", dir, (int)getpid());
    snprintf(sv.path, sizeof sv.path, "%s/%d.ndk", dir, (int)getpid());
    int fd = -1;
    for (int tries = 0; tries < 2 && fd < 0; tries++) {
        fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
            unlink(tmp);      /* a dead process with our pid left it (pid reuse) */
    }
    if (fd < 0) {
        rc = -errno;
        rt_log(rt, NDK_LOG_WARNING, "system view off: %s: %s", tmp, strerror(-rc));
        return rc;
    }
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    void *map = MAP_FAILED;
    if (fchmod(fd, 0600) < 0 || fcntl(fd, F_SETLK, &fl) < 0 || ftruncate(fd, NDK_SV_PAGE) < 0 ||
        (map = mmap(NULL, NDK_SV_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        rc = -errno;
        rt_log(rt, NDK_LOG_WARNING, "system view off: %s: %s", tmp, strerror(-rc));
        close(fd);
        unlink(tmp);
        return rc;
    }
    struct ndk_sv_header *h = map;
    h->version = NDK_SV_VERSION;
    h->record_size = NDK_SV_RECORD_SIZE;
    h->chunk_records = NDK_SV_CHUNK_RECORDS;
    h->pid = (uint32_t)getpid();
    h->uid = (uint32_t)geteuid();
    h->created_ns = now_ns(CLOCK_REALTIME);
    read_proc_self(h);
    __atomic_store_n(&h->magic, NDK_SV_MAGIC, __ATOMIC_RELEASE);
    if (rename(tmp, sv.path) < 0) {
        rc = -errno;
        rt_log(rt, NDK_LOG_WARNING, "system view off: %s: %s", sv.path, strerror(-rc));
        munmap(map, NDK_SV_PAGE);
        close(fd);
        unlink(tmp);
        return rc;
    }
    sv.fd = fd;
    sv.header = h;
    /* Records of an earlier file (kept mapped for a leaked record) are not handed out again. */
    sv.nchunks = 0;
    sv.nfree = 0;
    sv.in_use = 0;
    return 0;
}

/* sv_lock held. Maps one more chunk and puts its records on the free list; -errno when full. */
static int grow(void)
{
    if (sv.fd < 0 || sv.nchunks >= NDK_SV_MAX_CHUNKS)
        return -ENOSPC;
    size_t chunk = (size_t)NDK_SV_CHUNK_RECORDS * NDK_SV_RECORD_SIZE;
    off_t off = (off_t)NDK_SV_PAGE + (off_t)sv.nchunks * (off_t)chunk;
    /* Room for every record of the file: all of them may be free at once. */
    size_t total = ((size_t)sv.nchunks + 1) * NDK_SV_CHUNK_RECORDS;
    if (sv.free_cap < total) {
        size_t cap = sv.free_cap ? sv.free_cap * 2 : 256;
        while (cap < total)
            cap *= 2;
        struct ndk_sv_rec **n = realloc(sv.free_recs, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        sv.free_recs = n;
        sv.free_cap = cap;
    }
    if (ftruncate(sv.fd, off + (off_t)chunk) < 0)
        return -errno;
    void *map = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_SHARED, sv.fd, off);
    if (map == MAP_FAILED)
        return -errno;
    struct ndk_sv_rec *recs = map;
    sv.chunks[sv.nchunks++] = recs;
    __atomic_store_n(&sv.header->nchunks, sv.nchunks, __ATOMIC_RELEASE);
    for (size_t i = NDK_SV_CHUNK_RECORDS; i-- > 0;)
        sv.free_recs[sv.nfree++] = &recs[i];
    return 0;
}

/* A fork child inherits the parent's mappings but not its lock: it publishes on its own once
 * it opens a runtime, and never writes the parent's file. sv_lock held. */
static void forget_parent_locked(void)
{
    if (sv.owner == getpid())
        return;
    if (sv.fd >= 0)
        close(sv.fd);
    free(sv.free_recs);
    memset(&sv, 0, sizeof sv);
    sv.fd = -1;
    sv.owner = getpid();
}

static int enabled(struct ndk_rt *rt)
{
    const char *v = getenv("NDK_SYSVIEW");
    if (!v || !*v)
        v = rt_config_get(rt, "sysview");
    return !v || !(!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no") || !strcasecmp(v, "false"));
}

/* fork() keeps only the calling thread: sv_lock is taken across it, so a child never inherits
 * it held by a thread (a provider's, creating or closing an object) that no longer exists. */
static void sv_fork_prepare(void)
{
    pthread_mutex_lock(&sv_lock);
}

static void sv_fork_done(void)
{
    pthread_mutex_unlock(&sv_lock);
}

static void sv_register_atfork(void)
{
    pthread_atfork(sv_fork_prepare, sv_fork_done, sv_fork_done);
}

/* At ndk_rt_open: the first runtime of the process publishes. May block (file system). */
void rt_sysview_acquire(struct ndk_rt *rt)
{
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

    pthread_once(&atfork_once, sv_register_atfork);
    pthread_mutex_lock(&sv_lock);
    forget_parent_locked();
    if (sv.refs++ == 0 && sv.fd < 0 && enabled(rt))
        open_file(rt);
    pthread_mutex_unlock(&sv_lock);
}

/* At ndk_rt_close, after every adapter halted: the last runtime removes the file. The chunks stay
 * mapped while a record is still handed out (a provider that leaked one may still write it). */
void rt_sysview_release(struct ndk_rt *rt)
{
    (void)rt;
    pthread_mutex_lock(&sv_lock);
    forget_parent_locked();
    if (sv.refs > 0 && --sv.refs == 0 && sv.fd >= 0) {
        unlink(sv.path);
        close(sv.fd);
        sv.fd = -1;
        if (sv.in_use == 0) {
            size_t chunk = (size_t)NDK_SV_CHUNK_RECORDS * NDK_SV_RECORD_SIZE;
            for (uint32_t i = 0; i < sv.nchunks; i++)
                munmap(sv.chunks[i], chunk);
            munmap(sv.header, NDK_SV_PAGE);
            free(sv.free_recs);
            sv.free_recs = NULL;
            sv.nfree = sv.free_cap = 0;
            sv.nchunks = 0;
            sv.header = NULL;
        }
    }
    pthread_mutex_unlock(&sv_lock);
}

/* Any thread; takes sv_lock briefly. See SysviewAlloc in ndk/provider.h. */
struct ndk_sv_rec *rt_sysview_alloc(struct ndk_rt *rt, uint64_t adapter, uint16_t type)
{
    struct ndk_sv_rec *r = NULL;
    pthread_mutex_lock(&sv_lock);
    forget_parent_locked();
    uint64_t id = ++sv.next_id;
    if (sv.fd >= 0 && sv.nfree == 0) {
        int rc = grow();
        if (rc < 0 && !sv.warned_full) {
            sv.warned_full = 1;
            rt_log(rt, NDK_LOG_WARNING, "system view: no room for more records (%s); new objects are not published",
                   strerror(-rc));
        }
    }
    if (sv.fd >= 0 && sv.nfree > 0) {
        r = sv.free_recs[--sv.nfree];
        sv.in_use++;
    }
    pthread_mutex_unlock(&sv_lock);
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return NULL;
        r->pad = SV_PRIVATE;
    }
    /* The record is free (type 0), so readers skip it until the type is stored last. */
    ndk_sv_begin(r);
    memset(&r->u, 0, sizeof r->u);
    r->id = id;
    r->adapter = type == NDK_SV_ADAPTER ? id : adapter;
    r->created_ns = now_ns(CLOCK_MONOTONIC);
    __atomic_store_n(&r->type, type, __ATOMIC_RELAXED);
    ndk_sv_end(r);
    return r;
}

/* 1 when r lies in one of our chunks. sv_lock held. */
static int ours_locked(const struct ndk_sv_rec *r)
{
    size_t chunk = (size_t)NDK_SV_CHUNK_RECORDS * NDK_SV_RECORD_SIZE;
    for (uint32_t i = 0; i < sv.nchunks; i++)
        if ((const char *)r >= (const char *)sv.chunks[i] && (const char *)r < (const char *)sv.chunks[i] + chunk)
            return 1;
    return 0;
}

/* Any thread; takes sv_lock briefly. The record's object no longer writes it. */
void rt_sysview_free(struct ndk_sv_rec *r)
{
    if (!r)
        return;
    if (r->pad == SV_PRIVATE) {
        free(r);
        return;
    }
    pthread_mutex_lock(&sv_lock);
    forget_parent_locked();
    if (ours_locked(r)) {
        ndk_sv_begin(r);
        __atomic_store_n(&r->type, (uint16_t)NDK_SV_FREE, __ATOMIC_RELAXED);
        memset(&r->u, 0, sizeof r->u);
        ndk_sv_end(r);
        sv.free_recs[sv.nfree++] = r;
        sv.in_use--;
    }
    pthread_mutex_unlock(&sv_lock);
}

/* The inode of our own registry (0 when not publishing), so a reader in this process does not
 * take its own file for a dead one: F_GETLK never reports the caller's own locks. */
int rt_sysview_own_file(dev_t *dev, ino_t *ino)
{
    int rc = 0;
    pthread_mutex_lock(&sv_lock);
    struct stat st;
    if (sv.fd >= 0 && sv.owner == getpid() && fstat(sv.fd, &st) == 0) {
        *dev = st.st_dev;
        *ino = st.st_ino;
        rc = 1;
    }
    pthread_mutex_unlock(&sv_lock);
    return rc;
}

/* Our header's net_ns (0 when not publishing). */
uint64_t rt_sysview_net_ns(void)
{
    pthread_mutex_lock(&sv_lock);
    uint64_t v = sv.header && sv.owner == getpid() ? sv.header->net_ns : 0;
    pthread_mutex_unlock(&sv_lock);
    return v;
}
