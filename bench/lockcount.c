/* bench/lockcount.c: an LD_PRELOAD shim that counts, per thread, the calls a process makes to
 * pthread_mutex_lock, pthread_mutex_trylock (and how many of them took the lock),
 * pthread_mutex_unlock and pthread_cond_wait/timedwait, and writes them at exit, for
 * bench/cost.sh's mutex pairs per round trip.
 *
 *   cc -shared -fPIC -O2 -o lockcount.so lockcount.c -ldl
 *   LC_OUT=/tmp/x LD_PRELOAD=./lockcount.so prog ...   -> /tmp/x.PID
 *
 * Each output line: "thread TID NAME lock trylock trylock_ok unlock condwait", then
 * "total - - ..." with the sums. Only calls through the dynamic symbols are seen (every call a
 * shared library or program makes); glibc's own internal locks (stdio, malloc) are not mutexes
 * of the program's and are not counted. A thread's counters are written by that thread only,
 * with relaxed stores (no read-modify-write, so the counting adds no atomic operation of its
 * own); the exit handler reads them with relaxed loads.
 *
 * LC_SITES=1 also counts per call site: each of the first LC_SITE_THREADS threads keeps a table
 * of (caller's return address, mutex address) -> locks, trylocks that took it, unlocks, written
 * by that thread only. At exit each row follows the totals as
 * "site TID OBJECT OFFSET MUTEX lock try_ok unlock" (OFFSET: the return address inside OBJECT;
 * addr2line -f -i -e OBJECT OFFSET-1 names the caller). Off by default, and cost.sh leaves it off. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LC_SLOTS 1024

enum { LC_LOCK, LC_TRY, LC_TRY_OK, LC_UNLOCK, LC_COND, LC_N };

struct lc_slot {
    unsigned long v[LC_N];
    long tid;
};

static struct lc_slot lc_slots[LC_SLOTS];
static unsigned lc_used;    /* slots handed out; taken once per thread with an atomic add */
static unsigned long lc_lost[LC_N]; /* threads beyond LC_SLOTS share this row (relaxed adds) */
static __thread struct lc_slot *lc_me;

#define LC_SITE_THREADS 64
#define LC_SITE_ROWS 512 /* per thread; a power of two (open addressing) */

enum { LC_S_LOCK, LC_S_TRY_OK, LC_S_UNLOCK, LC_S_N };

struct lc_site {
    const void *ra;
    const void *mutex;
    unsigned long v[LC_S_N];
    uintptr_t base;   /* ra's object's load address, looked up when the row is made: */
    char obj[160];    /* the provider may be unloaded before the exit handler runs */
};

static struct lc_site lc_site_tab[LC_SITE_THREADS][LC_SITE_ROWS];
static unsigned long lc_site_full; /* rows that found no room (relaxed adds) */
static int lc_sites_on = -1;       /* -1: LC_SITES not read yet */

static int (*lc_real_lock)(pthread_mutex_t *);
static int (*lc_real_trylock)(pthread_mutex_t *);
static int (*lc_real_unlock)(pthread_mutex_t *);
static int (*lc_real_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*lc_real_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);

static void lc_resolve(void)
{
    lc_real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
    lc_real_trylock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_trylock");
    lc_real_unlock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
    lc_real_cond_wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_cond_wait");
    lc_real_cond_timedwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))dlsym(
        RTLD_NEXT, "pthread_cond_timedwait");
}

/* Called by the counting thread itself; no lock held. */
static void lc_count(int what)
{
    struct lc_slot *s = lc_me;
    if (!s) {
        unsigned i = __atomic_fetch_add(&lc_used, 1, __ATOMIC_RELAXED);
        if (i >= LC_SLOTS) {
            __atomic_fetch_add(&lc_lost[what], 1, __ATOMIC_RELAXED);
            return;
        }
        s = &lc_slots[i];
        __atomic_store_n(&s->tid, (long)syscall(SYS_gettid), __ATOMIC_RELAXED);
        lc_me = s;
    }
    __atomic_store_n(&s->v[what], __atomic_load_n(&s->v[what], __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* Called by the counting thread itself after lc_count (so lc_me is set); no lock held. */
static void lc_site_count(const void *ra, const void *m, int what)
{
    int on = __atomic_load_n(&lc_sites_on, __ATOMIC_RELAXED);
    if (on < 0) {
        const char *e = getenv("LC_SITES");
        on = e && *e == '1';
        __atomic_store_n(&lc_sites_on, on, __ATOMIC_RELAXED);
    }
    if (!on || !lc_me)
        return;
    size_t t = (size_t)(lc_me - lc_slots);
    if (t >= LC_SITE_THREADS)
        return;
    struct lc_site *tab = lc_site_tab[t];
    size_t h = (((size_t)ra >> 2) ^ ((size_t)m >> 4) * 31u) & (LC_SITE_ROWS - 1);
    for (unsigned i = 0; i < LC_SITE_ROWS; i++, h = (h + 1) & (LC_SITE_ROWS - 1)) {
        struct lc_site *r = &tab[h];
        const void *cur = __atomic_load_n(&r->ra, __ATOMIC_RELAXED);
        if (!cur) {
            Dl_info di;
            if (dladdr(ra, &di) && di.dli_fname) {
                r->base = (uintptr_t)di.dli_fbase;
                snprintf(r->obj, sizeof r->obj, "%s", di.dli_fname);
            } else {
                snprintf(r->obj, sizeof r->obj, "?");
            }
            __atomic_store_n(&r->mutex, m, __ATOMIC_RELAXED);
            __atomic_store_n(&r->ra, ra, __ATOMIC_RELEASE);
            cur = ra;
        }
        if (cur == ra && __atomic_load_n(&r->mutex, __ATOMIC_RELAXED) == m) {
            __atomic_store_n(&r->v[what], __atomic_load_n(&r->v[what], __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
            return;
        }
    }
    __atomic_fetch_add(&lc_site_full, 1, __ATOMIC_RELAXED);
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (!lc_real_lock)
        lc_resolve();
    lc_count(LC_LOCK);
    lc_site_count(__builtin_return_address(0), m, LC_S_LOCK);
    return lc_real_lock(m);
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
    if (!lc_real_trylock)
        lc_resolve();
    lc_count(LC_TRY);
    int rc = lc_real_trylock(m);
    if (rc == 0) {
        lc_count(LC_TRY_OK);
        lc_site_count(__builtin_return_address(0), m, LC_S_TRY_OK);
    }
    return rc;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
    if (!lc_real_unlock)
        lc_resolve();
    lc_count(LC_UNLOCK);
    lc_site_count(__builtin_return_address(0), m, LC_S_UNLOCK);
    return lc_real_unlock(m);
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    if (!lc_real_cond_wait)
        lc_resolve();
    lc_count(LC_COND);
    return lc_real_cond_wait(c, m);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
    if (!lc_real_cond_timedwait)
        lc_resolve();
    lc_count(LC_COND);
    return lc_real_cond_timedwait(c, m, t);
}

__attribute__((constructor)) static void lc_init(void)
{
    lc_resolve();
}

/* The thread's current name when it still runs, else "-". */
static void lc_name(long tid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(buf, (int)len, f)) {
        snprintf(buf, len, "-");
    } else {
        buf[strcspn(buf, "\n")] = '\0';
        for (char *p = buf; *p; p++)
            if (*p == ' ')
                *p = '_';
    }
    if (f)
        fclose(f);
}

/* One row per thread and (call site, mutex) of the first n threads (exit handler). */
static void lc_report_sites(FILE *f, unsigned n)
{
    if (n > LC_SITE_THREADS)
        n = LC_SITE_THREADS;
    for (unsigned t = 0; t < n; t++) {
        long tid = __atomic_load_n(&lc_slots[t].tid, __ATOMIC_RELAXED);
        for (unsigned i = 0; i < LC_SITE_ROWS; i++) {
            struct lc_site *r = &lc_site_tab[t][i];
            const void *ra = __atomic_load_n(&r->ra, __ATOMIC_ACQUIRE);
            if (!ra)
                continue;
            fprintf(f, "site %ld %s 0x%lx %p %lu %lu %lu\n", tid, r->obj, (unsigned long)((uintptr_t)ra - r->base),
                    __atomic_load_n(&r->mutex, __ATOMIC_RELAXED), __atomic_load_n(&r->v[LC_S_LOCK], __ATOMIC_RELAXED),
                    __atomic_load_n(&r->v[LC_S_TRY_OK], __ATOMIC_RELAXED),
                    __atomic_load_n(&r->v[LC_S_UNLOCK], __ATOMIC_RELAXED));
        }
    }
    fprintf(f, "site_full %lu\n", __atomic_load_n(&lc_site_full, __ATOMIC_RELAXED));
}

__attribute__((destructor)) static void lc_report(void)
{
    const char *out = getenv("LC_OUT");
    if (!out || !*out)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s.%ld", out, (long)getpid());
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    unsigned long tot[LC_N] = {0};
    unsigned n = __atomic_load_n(&lc_used, __ATOMIC_RELAXED);
    if (n > LC_SLOTS)
        n = LC_SLOTS;
    for (unsigned i = 0; i < n; i++) {
        unsigned long v[LC_N];
        for (int k = 0; k < LC_N; k++) {
            v[k] = __atomic_load_n(&lc_slots[i].v[k], __ATOMIC_RELAXED);
            tot[k] += v[k];
        }
        long tid = __atomic_load_n(&lc_slots[i].tid, __ATOMIC_RELAXED);
        char name[32];
        lc_name(tid, name, sizeof name);
        fprintf(f, "thread %ld %s %lu %lu %lu %lu %lu\n", tid, name, v[LC_LOCK], v[LC_TRY], v[LC_TRY_OK],
                v[LC_UNLOCK], v[LC_COND]);
    }
    for (int k = 0; k < LC_N; k++)
        tot[k] += __atomic_load_n(&lc_lost[k], __ATOMIC_RELAXED);
    fprintf(f, "total - - %lu %lu %lu %lu %lu\n", tot[LC_LOCK], tot[LC_TRY], tot[LC_TRY_OK], tot[LC_UNLOCK],
            tot[LC_COND]);
    if (__atomic_load_n(&lc_sites_on, __ATOMIC_RELAXED) == 1)
        lc_report_sites(f, n);
    fclose(f);
}
