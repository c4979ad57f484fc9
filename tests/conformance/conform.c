/* conform.c - helpers of the NDKPI conformance suite; see conform.h. */
#define _GNU_SOURCE
#include "conform.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct cf_env cf_env = { .family = AF_INET, .tscale = 1.0 };
pid_t cf_peer_pid;
static const char *cf_role = "server";

/* ==== small utilities ==== */

int cf_ms(int ms)
{
    double v = ms * (cf_env.tscale > 0 ? cf_env.tscale : 1.0);
    return v > 2e9 ? 2000000000 : (int)v;
}

uint64_t cf_now_ms(void)
{
    return ndk_test_now_ms();
}

void cf_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void cf_note(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("  [%s] %s\n", cf_role, line);
    fflush(stdout);
}

const char *cf_status_name(NTSTATUS st)
{
    return ndk_rt_status_name(st);
}

static void deadline_ts(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void cond_init(pthread_mutex_t *m, pthread_cond_t *c)
{
    pthread_condattr_t ca;
    pthread_mutex_init(m, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
}

/* Waits on c (m held) until *counter >= n or the deadline passes. */
static bool cond_wait_count(pthread_mutex_t *m, pthread_cond_t *c, const int *counter, int n, int ms)
{
    struct timespec ts;
    deadline_ts(&ts, ms);
    while (*counter < n)
        if (pthread_cond_timedwait(c, m, &ts) == ETIMEDOUT)
            return *counter >= n;
    return true;
}

static atomic_uint_fast64_t cf_seq_counter;
uint64_t cf_seq(void)
{
    return atomic_fetch_add(&cf_seq_counter, 1) + 1;
}

/* CPU work for widening race windows inside a callback (no syscall, no blocking). */
static void spin_for(int ms)
{
    if (ms <= 0)
        return;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
            return;
    }
}

/* ==== asynchronous operations ==== */

#define CF_MAX_OPS 65536
static struct cf_op *cf_ops[CF_MAX_OPS];
static atomic_int cf_nops;

struct cf_op *cf_op_new(const char *what)
{
    struct cf_op *op = calloc(1, sizeof *op);
    CHECK(op);
    op->what = what;
    cond_init(&op->m, &op->c);
    int i = atomic_fetch_add(&cf_nops, 1);
    if (i < CF_MAX_OPS)
        cf_ops[i] = op;
    return op;
}

static void op_fire(struct cf_op *op, NTSTATUS st, NDK_OBJECT_HEADER *obj)
{
    op->seq_enter = cf_seq();
    spin_for(op->spin_ms);
    pthread_mutex_lock(&op->m);
    op->calls++;
    op->status = st;
    op->obj = obj;
    pthread_mutex_unlock(&op->m);
    if (op->hook)
        op->hook(op);
    pthread_mutex_lock(&op->m);
    op->seq_leave = cf_seq();
    pthread_cond_broadcast(&op->c);
    pthread_mutex_unlock(&op->m);
}

void cf_create_cb(void *ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj)
{
    op_fire(ctx, status, obj);
}

void cf_req_cb(void *ctx, NTSTATUS status)
{
    op_fire(ctx, status, NULL);
}

void cf_close_cb(void *ctx)
{
    op_fire(ctx, STATUS_SUCCESS, NULL);
}

bool cf_op_wait(struct cf_op *op, int ms)
{
    pthread_mutex_lock(&op->m);
    /* seq_leave marks the callback's return: waiters see a finished callback. */
    struct timespec ts;
    deadline_ts(&ts, ms);
    bool ok = true;
    while (op->seq_leave == 0)
        if (pthread_cond_timedwait(&op->c, &op->m, &ts) == ETIMEDOUT) {
            ok = op->seq_leave != 0;
            break;
        }
    pthread_mutex_unlock(&op->m);
    return ok;
}

int cf_op_calls(struct cf_op *op)
{
    pthread_mutex_lock(&op->m);
    int n = op->calls;
    pthread_mutex_unlock(&op->m);
    return n;
}

static void op_returned(struct cf_op *op, NTSTATUS st)
{
    pthread_mutex_lock(&op->m);
    op->returned = st;
    op->has_returned = true;
    pthread_mutex_unlock(&op->m);
}

NTSTATUS cf_req_done(struct cf_op *op, NTSTATUS st)
{
    op_returned(op, st);
    if (st != STATUS_PENDING) {
        CHECK_MSG(cf_op_calls(op) == 0, "%s returned %s (not pending) but called its completion (§0.4)", op->what,
                  cf_status_name(st));
        return st;
    }
    CHECK_MSG(cf_op_wait(op, cf_ms(20000)), "%s returned STATUS_PENDING but its completion never came (§0.4)",
              op->what);
    CHECK_MSG(cf_op_calls(op) == 1, "%s: completion called %d times (§0.4: exactly once)", op->what,
              cf_op_calls(op));
    pthread_mutex_lock(&op->m);
    NTSTATUS r = op->status;
    pthread_mutex_unlock(&op->m);
    CHECK_MSG(r != STATUS_PENDING, "%s completed with STATUS_PENDING", op->what);
    return r;
}

NTSTATUS cf_create_done(struct cf_op *op, NTSTATUS st, void *const *pp, NDK_OBJECT_TYPE type, NDK_VERSION version,
                        void **out)
{
    void *obj = NULL;
    if (st == STATUS_PENDING)
        CHECK_MSG(*pp == CF_SENTINEL, "%s returned STATUS_PENDING but wrote its output parameter (§0.4)", op->what);
    NTSTATUS r = cf_req_done(op, st);
    if (st == STATUS_PENDING) {
        pthread_mutex_lock(&op->m);
        obj = op->obj;
        pthread_mutex_unlock(&op->m);
    } else if (r == STATUS_SUCCESS) {
        obj = *pp;
        CHECK_MSG(obj != CF_SENTINEL, "%s returned STATUS_SUCCESS without writing the object pointer", op->what);
    }
    if (r == STATUS_SUCCESS) {
        CHECK_MSG(obj != NULL, "%s succeeded with a NULL object", op->what);
        cf_check_object(obj, type, version);
        *out = obj;
    } else {
        CHECK_MSG(r != STATUS_PENDING, "%s: STATUS_PENDING as a final status", op->what);
        *out = NULL;
    }
    return r;
}

void cf_audit(void)
{
    int n = atomic_load(&cf_nops);
    if (n > CF_MAX_OPS)
        n = CF_MAX_OPS;
    for (int i = 0; i < n; i++) {
        struct cf_op *op = cf_ops[i];
        pthread_mutex_lock(&op->m);
        int calls = op->calls;
        bool ret = op->has_returned;
        NTSTATUS st = op->returned;
        pthread_mutex_unlock(&op->m);
        if (!ret)
            continue;
        if (st == STATUS_PENDING)
            CHECK_MSG(calls == 1, "%s returned STATUS_PENDING; its completion ran %d times (§0.4: exactly once)",
                      op->what, calls);
        else
            CHECK_MSG(calls == 0, "%s returned %s; its completion ran %d times (§0.4: never)", op->what,
                      cf_status_name(st), calls);
    }
}

unsigned cf_dispatch_slots(NDK_OBJECT_TYPE type, NDK_VERSION v)
{
    bool v12 = v.Major > 1 || (v.Major == 1 && v.Minor >= 2);
    bool v21 = v.Major > 2 || (v.Major == 2 && v.Minor >= 1);
    switch (type) {
    case NdkObjectTypeAdapter: return 9;
    case NdkObjectTypeCq: return v12 ? 7 : 6;
    case NdkObjectTypePd: return 8;
    case NdkObjectTypeMr: return 7;
    case NdkObjectTypeMw: return 3;
    case NdkObjectTypeSrq: return 4;
    case NdkObjectTypeQp: return v12 ? 11 : 10;
    case NdkObjectTypeSharedEndpoint: return 3;
    case NdkObjectTypeConnector: return v21 ? 13 : 11;
    case NdkObjectTypeListener: return 5;
    default: return 0;
    }
}

void cf_check_object(const void *obj, NDK_OBJECT_TYPE type, NDK_VERSION version)
{
    const struct cf_obj *o = obj;
    CHECK_MSG(o->Header.ObjectType == type, "object type %d, expected %d (§1.4)", (int)o->Header.ObjectType,
              (int)type);
    CHECK_MSG(o->Header.Version.Major == version.Major && o->Header.Version.Minor == version.Minor,
              "object type %d: header version %u.%u, negotiated %u.%u (§1.4)", (int)type, o->Header.Version.Major,
              o->Header.Version.Minor, version.Major, version.Minor);
    CHECK_MSG(cf_all(&o->Header.NdkReserved, sizeof o->Header.NdkReserved, 0),
              "object type %d: NdkReserved not zeroed at creation (§1.4)", (int)type);
    CHECK_MSG(o->Dispatch != NULL, "object type %d: NULL Dispatch (§1.5)", (int)type);
    const void *const *slots = o->Dispatch;
    unsigned n = cf_dispatch_slots(type, version);
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(slots[i] != NULL, "object type %d: dispatch slot %u is NULL (§1.1: every slot is mandatory)",
                  (int)type, i);
}

struct cf_op *cf_close_start_ex(const void *table, void *obj, int spin_ms, NTSTATUS *st)
{
    NDK_FN_CLOSE_OBJECT fn = *(const NDK_FN_CLOSE_OBJECT *)table;
    struct cf_op *op = cf_op_new("NdkCloseXxx");
    op->spin_ms = spin_ms;
    NTSTATUS r = fn((NDK_OBJECT_HEADER *)obj, cf_close_cb, op);
    op_returned(op, r);
    CHECK_MSG(r == STATUS_SUCCESS || r == STATUS_PENDING, "close returned %s (§8.2: only SUCCESS or PENDING)",
              cf_status_name(r));
    if (r == STATUS_SUCCESS)
        CHECK_MSG(cf_op_calls(op) == 0, "close returned STATUS_SUCCESS but called its completion (§2.1)");
    if (st)
        *st = r;
    return op;
}

struct cf_op *cf_close_start_with(const void *table, void *obj, NTSTATUS *st)
{
    return cf_close_start_ex(table, obj, 0, st);
}

struct cf_op *cf_close_start(void *obj, NTSTATUS *st)
{
    return cf_close_start_with(((struct cf_obj *)obj)->Dispatch, obj, st);
}

bool cf_close_finished(struct cf_op *op)
{
    pthread_mutex_lock(&op->m);
    bool done = (op->has_returned && op->returned == STATUS_SUCCESS) || op->seq_leave != 0;
    pthread_mutex_unlock(&op->m);
    return done;
}

bool cf_close_wait(struct cf_op *op, int ms)
{
    pthread_mutex_lock(&op->m);
    bool inl = op->has_returned && op->returned == STATUS_SUCCESS;
    pthread_mutex_unlock(&op->m);
    return inl || cf_op_wait(op, ms);
}

void cf_close(void *obj)
{
    NTSTATUS st;
    struct cf_op *op = cf_close_start(obj, &st);
    CHECK_MSG(cf_close_wait(op, cf_ms(20000)), "close (object type %d) returned PENDING and never completed",
              (int)((struct cf_obj *)obj)->Header.ObjectType);
}

/* ==== adapter ==== */

static void rt_log(void *ctx, int level, const char *line)
{
    (void)ctx;
    fprintf(stderr, "  [%s rt%d] %s\n", cf_role, level, line);
}

SOCKADDR_INET cf_addr(uint16_t port)
{
    SOCKADDR_INET a = cf_env.addr;
    if (a.si_family == AF_INET6)
        a.Ipv6.sin6_port = htons(port);
    else
        a.Ipv4.sin_port = htons(port);
    return a;
}

uint16_t cf_port(const SOCKADDR_INET *a)
{
    return ntohs(a->si_family == AF_INET6 ? a->Ipv6.sin6_port : a->Ipv4.sin_port);
}

ULONG cf_addr_len(const SOCKADDR_INET *a)
{
    return a->si_family == AF_INET6 ? (ULONG)sizeof(struct sockaddr_in6) : (ULONG)sizeof(struct sockaddr_in);
}

bool cf_addr_same_ip(const SOCKADDR_INET *a, const SOCKADDR_INET *b)
{
    if (a->si_family != b->si_family)
        return false;
    if (a->si_family == AF_INET6)
        return memcmp(&a->Ipv6.sin6_addr, &b->Ipv6.sin6_addr, sizeof(struct in6_addr)) == 0;
    return a->Ipv4.sin_addr.s_addr == b->Ipv4.sin_addr.s_addr;
}

SOCKADDR_INET cf_foreign_addr(uint16_t port)
{
    SOCKADDR_INET a;
    memset(&a, 0, sizeof a);
    if (cf_env.family == AF_INET6) {
        a.Ipv6.sin6_family = AF_INET6;
        inet_pton(AF_INET6, "2001:db8::7", &a.Ipv6.sin6_addr);
        a.Ipv6.sin6_port = htons(port);
    } else {
        a.Ipv4.sin_family = AF_INET;
        inet_pton(AF_INET, "192.0.2.7", &a.Ipv4.sin_addr);
        a.Ipv4.sin_port = htons(port);
    }
    return a;
}

void cf_rt_open(struct cf_ad *a)
{
    ndk_rt_config cfg;
    memset(a, 0, sizeof *a);
    memset(&cfg, 0, sizeof cfg);
    cfg.providers = cf_env.provider;
    cfg.no_monitor = TRUE;
    cfg.log = rt_log;
    cfg.log_level = cf_env.verbose ? NDK_LOG_DEBUG : NDK_LOG_WARNING;
    NTSTATUS st = ndk_rt_open(&cfg, &a->rt);
    CHECK_MSG(st == STATUS_SUCCESS, "ndk_rt_open: %s", cf_status_name(st));
    a->addr = cf_addr(0);
    a->addr_len = cf_addr_len(&a->addr);
    st = ndk_rt_find_adapter_by_address(a->rt, (struct sockaddr *)&a->addr, cf_env.provider, &a->id);
    if (st != STATUS_SUCCESS) {
        ndk_rt_close(a->rt);
        ndk_test_skip("no '%s' adapter serves %s (%s)", cf_env.provider, cf_env.addr_text, cf_status_name(st));
    }
}

NDK_ADAPTER_INFO cf_query_info(NDK_ADAPTER *ad)
{
    NDK_ADAPTER_INFO info;
    ULONG size = sizeof info;
    memset(&info, 0, sizeof info);
    NTSTATUS st = ad->Dispatch->NdkQueryAdapterInfo(ad, &info, &size);
    CHECK_ST(st, STATUS_SUCCESS);
    return info;
}

NTSTATUS cf_ad_open_version(struct cf_ad *a, NDK_VERSION v)
{
    NTSTATUS st = ndk_rt_open_adapter(a->rt, a->id, v, &a->ad);
    if (st != STATUS_SUCCESS) {
        a->ad = NULL;
        return st;
    }
    cf_check_object(a->ad, NdkObjectTypeAdapter, a->ad->Header.Version);
    a->info = cf_query_info(a->ad);
    a->version = a->info.Version;
    return st;
}

void cf_ad_open(struct cf_ad *a)
{
    cf_rt_open(a);
    NTSTATUS st = cf_ad_open_version(a, (NDK_VERSION){ 2, 0 });
    if (st == NDIS_STATUS_BAD_VERSION)
        st = cf_ad_open_version(a, (NDK_VERSION){ 1, 2 });
    CHECK_MSG(st == STATUS_SUCCESS, "ndk_rt_open_adapter: %s", cf_status_name(st));
}

void cf_ad_close(struct cf_ad *a)
{
    if (a->ad)
        ndk_rt_close_adapter(a->rt, a->ad);
    a->ad = NULL;
    if (a->rt)
        ndk_rt_close(a->rt);
    a->rt = NULL;
    cf_audit();
}

/* ==== objects ==== */

#define CREATE_BEGIN(T, name) struct cf_op *op = cf_op_new(name); T *obj = CF_SENTINEL; NTSTATUS st
#define CREATE_END(type) return cf_create_done(op, st, (void *const *)&obj, type, a->version, (void **)out)

NTSTATUS cf_try_pd(struct cf_ad *a, NDK_PD **out)
{
    CREATE_BEGIN(NDK_PD, "NdkCreatePd");
    st = a->ad->Dispatch->NdkCreatePd(a->ad, cf_create_cb, op, &obj);
    CREATE_END(NdkObjectTypePd);
}

NDK_PD *cf_pd(struct cf_ad *a)
{
    NDK_PD *pd;
    CHECK_ST(cf_try_pd(a, &pd), STATUS_SUCCESS);
    return pd;
}

/* CQ/SRQ wrappers are never freed (see cf_cq_close) and stay reachable from this list from their
 * creation on, so that a late notification lands in valid memory and leak checkers do not report
 * the retention. */
static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;   /* guards the list below */
static void **graveyard;
static size_t graveyard_len, graveyard_cap;

void cf_keep_for_late_callbacks(void *p)
{
    pthread_mutex_lock(&graveyard_lock);
    if (graveyard_len == graveyard_cap) {
        size_t cap = graveyard_cap ? graveyard_cap * 2 : 64;
        void **grown = realloc(graveyard, cap * sizeof *grown);
        CHECK(grown);
        graveyard = grown;
        graveyard_cap = cap;
    }
    graveyard[graveyard_len++] = p;
    pthread_mutex_unlock(&graveyard_lock);
}

static void cq_notify_cb(void *ctx, NTSTATUS st)
{
    struct cf_cq *cq = ctx;
    pthread_mutex_lock(&cq->m);
    if (cq->in_cb)
        cq->overlap = true;
    cq->in_cb++;
    pthread_mutex_unlock(&cq->m);
    if (cq->hook)
        cq->hook(cq, st);
    pthread_mutex_lock(&cq->m);
    cq->in_cb--;
    cq->notifies++;
    cq->last = st;
    pthread_cond_broadcast(&cq->c);
    pthread_mutex_unlock(&cq->m);
}

NTSTATUS cf_try_cq(struct cf_ad *a, ULONG depth, struct cf_cq **out)
{
    struct cf_cq *cq = calloc(1, sizeof *cq);
    CHECK(cq);
    cond_init(&cq->m, &cq->c);
    cq->a = a;
    cq->depth = depth;
    struct cf_op *op = cf_op_new("NdkCreateCq");
    NDK_CQ *obj = CF_SENTINEL;
    NTSTATUS st = a->ad->Dispatch->NdkCreateCq(a->ad, depth, cq_notify_cb, cq, NULL, cf_create_cb, op, &obj);
    st = cf_create_done(op, st, (void *const *)&obj, NdkObjectTypeCq, a->version, (void **)&cq->cq);
    if (st != STATUS_SUCCESS) {
        free(cq);
        *out = NULL;
    } else {
        /* Never freed, however the case closes it (see cf_keep_for_late_callbacks). */
        cf_keep_for_late_callbacks(cq);
        *out = cq;
    }
    return st;
}

struct cf_cq *cf_cq(struct cf_ad *a, ULONG depth)
{
    struct cf_cq *cq;
    CHECK_ST(cf_try_cq(a, depth, &cq), STATUS_SUCCESS);
    return cq;
}

void cf_cq_close(struct cf_cq *cq)
{
    if (!cq)
        return;
    cf_close(cq->cq);
    pthread_mutex_lock(&cq->m);
    CHECK_MSG(!cq->overlap, "two CQ notifications ran at the same time (§5.7 rule 3)");
    CHECK_MSG(cq->in_cb == 0, "a CQ notification is running after the CQ close completed (§3.4)");
    pthread_mutex_unlock(&cq->m);
    /* Deliberately not freed: a late notification (a provider bug) must hit valid memory so the
     * case can report it rather than crash in the allocator. */
    cq->cq = NULL;
}

void cf_cq_arm(struct cf_cq *cq, ULONG type)
{
    cq->cq->Dispatch->NdkArmCq(cq->cq, type);
}

int cf_cq_notifies(struct cf_cq *cq)
{
    pthread_mutex_lock(&cq->m);
    int n = cq->notifies;
    CHECK_MSG(!cq->overlap, "two CQ notifications ran at the same time (§5.7 rule 3)");
    pthread_mutex_unlock(&cq->m);
    return n;
}

NTSTATUS cf_cq_last(struct cf_cq *cq)
{
    pthread_mutex_lock(&cq->m);
    NTSTATUS st = cq->last;
    pthread_mutex_unlock(&cq->m);
    return st;
}

bool cf_cq_wait_notifies(struct cf_cq *cq, int n, int ms)
{
    pthread_mutex_lock(&cq->m);
    bool ok = cond_wait_count(&cq->m, &cq->c, &cq->notifies, n, ms);
    pthread_mutex_unlock(&cq->m);
    return ok;
}

ULONG cf_cq_poll(struct cf_cq *cq, NDK_RESULT_EX *r, ULONG n)
{
    ULONG got = cq->cq->Dispatch->NdkGetCqResultsEx(cq->cq, r, n);
    CHECK_MSG(got <= n, "NdkGetCqResultsEx returned %u > %u", got, n);
    return got;
}

bool cf_cq_next(struct cf_cq *cq, NDK_RESULT_EX *r, int ms)
{
    uint64_t end = cf_now_ms() + (uint64_t)ms;
    for (;;) {
        if (cf_cq_poll(cq, r, 1) == 1)
            return true;
        int seen = cf_cq_notifies(cq);
        cf_cq_arm(cq, NDK_CQ_NOTIFY_ANY);
        if (cf_cq_poll(cq, r, 1) == 1)
            return true;
        uint64_t now = cf_now_ms();
        if (now >= end)
            return false;
        /* The arm catches the next completion; a lost notification still ends the wait at the
         * deadline, where the final poll decides. */
        if (!cf_cq_wait_notifies(cq, seen + 1, (int)(end - now)))
            return cf_cq_poll(cq, r, 1) == 1;
    }
}

NDK_RESULT_EX cf_cq_expect(struct cf_cq *cq, uintptr_t ctx, NTSTATUS st, int type)
{
    return cf_cq_expect_xfer(cq, ctx, st, type, 0);
}

NDK_RESULT_EX cf_cq_expect_xfer(struct cf_cq *cq, uintptr_t ctx, NTSTATUS st, int type, size_t bytes)
{
    NDK_RESULT_EX r;
    memset(&r, 0, sizeof r);
    int ms = cf_ms(15000 + (int)(bytes >> 24) * 1000);
    CHECK_MSG(cf_cq_next(cq, &r, ms), "no completion for request %#lx within %d ms", (unsigned long)ctx, ms);
    CHECK_MSG((uintptr_t)r.RequestContext == ctx, "completion for request %#lx (status %s, type %d), expected %#lx",
              (unsigned long)(uintptr_t)r.RequestContext, cf_status_name(r.Status), (int)r.Type, (unsigned long)ctx);
    CHECK_MSG(r.Status == st, "request %#lx completed with %s (0x%08x), expected %s", (unsigned long)ctx,
              cf_status_name(r.Status), (unsigned)r.Status, cf_status_name(st));
    if (type)
        CHECK_MSG((int)r.Type == type, "request %#lx: completion type %d, expected %d (§4.3)", (unsigned long)ctx,
                  (int)r.Type, type);
    if (r.Status == STATUS_SUCCESS)
        CHECK_MSG(r.ProviderErrorCode == 0, "successful completion with ProviderErrorCode %#x (§4.2)",
                  r.ProviderErrorCode);
    return r;
}

NDK_RESULT_EX cf_cq_expect_error(struct cf_cq *cq, uintptr_t ctx, int type)
{
    NDK_RESULT_EX r;
    memset(&r, 0, sizeof r);
    CHECK_MSG(cf_cq_next(cq, &r, cf_ms(15000)), "no completion for request %#lx within %d ms", (unsigned long)ctx,
              cf_ms(15000));
    CHECK_MSG((uintptr_t)r.RequestContext == ctx, "completion for request %#lx (status %s), expected %#lx",
              (unsigned long)(uintptr_t)r.RequestContext, cf_status_name(r.Status), (unsigned long)ctx);
    CHECK_MSG(!NT_SUCCESS(r.Status), "request %#lx completed with %s, expected an error", (unsigned long)ctx,
              cf_status_name(r.Status));
    if (type)
        CHECK_MSG((int)r.Type == type, "request %#lx: completion type %d, expected %d (§4.3)", (unsigned long)ctx,
                  (int)r.Type, type);
    cf_note("request %#lx failed as expected: %s (provider code %#x)", (unsigned long)ctx, cf_status_name(r.Status),
            r.ProviderErrorCode);
    return r;
}

void cf_cq_expect_none(struct cf_cq *cq, int ms)
{
    NDK_RESULT_EX r;
    uint64_t end = cf_now_ms() + (uint64_t)ms;
    do {
        if (cf_cq_poll(cq, &r, 1) == 1)
            ndk_test_fail(__FILE__, __LINE__, "unexpected completion: request %#lx status %s type %d",
                          (unsigned long)(uintptr_t)r.RequestContext, cf_status_name(r.Status), (int)r.Type);
        cf_sleep_ms(5);
    } while (cf_now_ms() < end);
}

static void srq_notify_cb(void *ctx, NTSTATUS st)
{
    struct cf_srq *s = ctx;
    pthread_mutex_lock(&s->m);
    s->notifies++;
    s->last = st;
    pthread_cond_broadcast(&s->c);
    pthread_mutex_unlock(&s->m);
}

NTSTATUS cf_try_srq(NDK_PD *pd, struct cf_ad *a, ULONG depth, ULONG sge, ULONG threshold, struct cf_srq **out)
{
    struct cf_srq *s = calloc(1, sizeof *s);
    CHECK(s);
    cond_init(&s->m, &s->c);
    struct cf_op *op = cf_op_new("NdkCreateSrq");
    NDK_SRQ *obj = CF_SENTINEL;
    NTSTATUS st = pd->Dispatch->NdkCreateSrq(pd, depth, sge, threshold, srq_notify_cb, s, NULL, cf_create_cb, op,
                                             &obj);
    st = cf_create_done(op, st, (void *const *)&obj, NdkObjectTypeSrq, a->version, (void **)&s->srq);
    if (st != STATUS_SUCCESS) {
        free(s);
        s = NULL;
    } else {
        cf_keep_for_late_callbacks(s);
    }
    *out = s;
    return st;
}

struct cf_srq *cf_srq(NDK_PD *pd, struct cf_ad *a, ULONG depth, ULONG sge, ULONG threshold)
{
    struct cf_srq *s;
    CHECK_ST(cf_try_srq(pd, a, depth, sge, threshold, &s), STATUS_SUCCESS);
    return s;
}

void cf_srq_close(struct cf_srq *s)
{
    if (s && s->srq) {
        cf_close(s->srq);
        s->srq = NULL;
    }
}

int cf_srq_notifies(struct cf_srq *s)
{
    pthread_mutex_lock(&s->m);
    int n = s->notifies;
    pthread_mutex_unlock(&s->m);
    return n;
}

bool cf_srq_wait_notifies(struct cf_srq *s, int n, int ms)
{
    pthread_mutex_lock(&s->m);
    bool ok = cond_wait_count(&s->m, &s->c, &s->notifies, n, ms);
    pthread_mutex_unlock(&s->m);
    return ok;
}

NTSTATUS cf_srq_modify(struct cf_srq *s, ULONG depth, ULONG threshold)
{
    struct cf_op *op = cf_op_new("NdkModifySrq");
    return cf_req_done(op, s->srq->Dispatch->NdkModifySrq(s->srq, depth, threshold, cf_req_cb, op));
}

NTSTATUS cf_try_qp(struct cf_ad *a, NDK_PD *pd, struct cf_cq *rcq, struct cf_cq *icq, void *qpctx, ULONG rq_depth,
                   ULONG iq_depth, ULONG rsge, ULONG isge, ULONG inline_size, NDK_QP **out)
{
    CREATE_BEGIN(NDK_QP, "NdkCreateQp");
    st = pd->Dispatch->NdkCreateQp(pd, rcq->cq, icq->cq, qpctx, rq_depth, iq_depth, rsge, isge, inline_size,
                                   cf_create_cb, op, &obj);
    CREATE_END(NdkObjectTypeQp);
}

NTSTATUS cf_try_qp_srq(struct cf_ad *a, NDK_PD *pd, struct cf_cq *rcq, struct cf_cq *icq, NDK_SRQ *srq, void *qpctx,
                       ULONG iq_depth, ULONG isge, ULONG inline_size, NDK_QP **out)
{
    CREATE_BEGIN(NDK_QP, "NdkCreateQpWithSrq");
    st = pd->Dispatch->NdkCreateQpWithSrq(pd, rcq->cq, icq->cq, srq, qpctx, iq_depth, isge, inline_size,
                                          cf_create_cb, op, &obj);
    CREATE_END(NdkObjectTypeQp);
}

NTSTATUS cf_try_mr(struct cf_ad *a, NDK_PD *pd, BOOLEAN fast, NDK_MR **out)
{
    CREATE_BEGIN(NDK_MR, "NdkCreateMr");
    st = pd->Dispatch->NdkCreateMr(pd, fast, cf_create_cb, op, &obj);
    CREATE_END(NdkObjectTypeMr);
}

NDK_MR *cf_mr(struct cf_ad *a, NDK_PD *pd, BOOLEAN fast)
{
    NDK_MR *mr;
    CHECK_ST(cf_try_mr(a, pd, fast, &mr), STATUS_SUCCESS);
    return mr;
}

NTSTATUS cf_try_mw(struct cf_ad *a, NDK_PD *pd, NDK_MW **out)
{
    CREATE_BEGIN(NDK_MW, "NdkCreateMw");
    st = pd->Dispatch->NdkCreateMw(pd, cf_create_cb, op, &obj);
    CREATE_END(NdkObjectTypeMw);
}

NDK_MW *cf_mw(struct cf_ad *a, NDK_PD *pd)
{
    NDK_MW *mw;
    CHECK_ST(cf_try_mw(a, pd, &mw), STATUS_SUCCESS);
    return mw;
}

NTSTATUS cf_try_connector(struct cf_ad *a, NDK_CONNECTOR **out)
{
    CREATE_BEGIN(NDK_CONNECTOR, "NdkCreateConnector");
    st = a->ad->Dispatch->NdkCreateConnector(a->ad, cf_create_cb, op, &obj);
    CREATE_END(NdkObjectTypeConnector);
}

NDK_CONNECTOR *cf_connector(struct cf_ad *a)
{
    NDK_CONNECTOR *c;
    CHECK_ST(cf_try_connector(a, &c), STATUS_SUCCESS);
    return c;
}

NTSTATUS cf_try_sep(struct cf_ad *a, const SOCKADDR_INET *addr, NDK_SHARED_ENDPOINT **out)
{
    CREATE_BEGIN(NDK_SHARED_ENDPOINT, "NdkCreateSharedEndpoint");
    st = a->ad->Dispatch->NdkCreateSharedEndpoint(a->ad, (PSOCKADDR)addr, cf_addr_len(addr), cf_create_cb, op, &obj);
    CREATE_END(NdkObjectTypeSharedEndpoint);
}

NTSTATUS cf_register(NDK_MR *mr, MDL *mdl, SIZE_T len, ULONG flags)
{
    struct cf_op *op = cf_op_new("NdkRegisterMr");
    return cf_req_done(op, mr->Dispatch->NdkRegisterMr(mr, mdl, len, flags, cf_req_cb, op));
}

NTSTATUS cf_deregister(NDK_MR *mr)
{
    struct cf_op *op = cf_op_new("NdkDeregisterMr");
    return cf_req_done(op, mr->Dispatch->NdkDeregisterMr(mr, cf_req_cb, op));
}

NTSTATUS cf_init_frmr(NDK_MR *mr, ULONG pages, BOOLEAN remote)
{
    struct cf_op *op = cf_op_new("NdkInitializeFastRegisterMr");
    return cf_req_done(op, mr->Dispatch->NdkInitializeFastRegisterMr(mr, pages, remote, cf_req_cb, op));
}

NTSTATUS cf_listen(NDK_LISTENER *l, const SOCKADDR_INET *addr)
{
    struct cf_op *op = cf_op_new("NdkListen");
    return cf_req_done(op, l->Dispatch->NdkListen(l, (PSOCKADDR)addr, cf_addr_len(addr), cf_req_cb, op));
}

NTSTATUS cf_disconnect(NDK_CONNECTOR *c)
{
    struct cf_op *op = cf_op_new("NdkDisconnect");
    return cf_req_done(op, c->Dispatch->NdkDisconnect(c, cf_req_cb, op));
}

SOCKADDR_INET cf_listener_addr(NDK_LISTENER *l)
{
    SOCKADDR_INET a;
    ULONG len = sizeof a;
    memset(&a, 0, sizeof a);
    CHECK_ST(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&a, &len), STATUS_SUCCESS);
    CHECK_EQ(len, cf_addr_len(&a));
    return a;
}

/* ==== memory ==== */

void cf_mem_alloc(struct cf_mem *m, size_t len, size_t guard, size_t offset)
{
    memset(m, 0, sizeof *m);
    size_t g = (guard + 4095) & ~(size_t)4095;
    m->map_len = g + offset + len + g + 4096;
    m->map_len = (m->map_len + 4095) & ~(size_t)4095;
    m->map = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK_MSG(m->map != MAP_FAILED, "mmap(%zu): %s", m->map_len, strerror(errno));
    m->buf = m->map + g + offset;
    m->len = len;
    m->guard = guard;
    if (guard) {
        memset(m->buf - guard, 0xA5, guard);
        memset(m->buf + len, 0x5A, guard);
    }
}

bool cf_mem_guards_ok(const struct cf_mem *m)
{
    return !m->guard || (cf_all(m->buf - m->guard, m->guard, 0xA5) && cf_all(m->buf + m->len, m->guard, 0x5A));
}

void cf_mem_reg(struct cf_mem *m, struct cf_ad *a, NDK_PD *pd, ULONG flags)
{
    m->mr = cf_mr(a, pd, FALSE);
    m->mdl = IoAllocateMdl(m->buf, (ULONG)m->len, FALSE, FALSE, NULL);
    CHECK(m->mdl);
    CHECK_ST(cf_register(m->mr, m->mdl, m->len, flags), STATUS_SUCCESS);
    m->ltok = m->mr->Dispatch->NdkGetLocalTokenFromMr(m->mr);
    m->rtok = m->mr->Dispatch->NdkGetRemoteTokenFromMr(m->mr);
}

void cf_mem_free(struct cf_mem *m)
{
    if (m->mr) {
        CHECK_ST(cf_deregister(m->mr), STATUS_SUCCESS);
        cf_close(m->mr);
    }
    if (m->mdl)
        NdkMdlChainFree(m->mdl);
    if (m->map)
        munmap(m->map, m->map_len);
    memset(m, 0, sizeof *m);
}

NDK_SGE cf_sge(const struct cf_mem *m, size_t off, ULONG len)
{
    NDK_SGE s;
    memset(&s, 0, sizeof s);
    s.VirtualAddress = m->buf + off;
    s.Length = len;
    s.MemoryRegionToken = m->ltok;
    return s;
}

static inline uint64_t pat_word(uint32_t seed, uint64_t w)
{
    uint64_t x = (w + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed << 32 | seed);
    x ^= x >> 29;
    return x;
}

static inline uint8_t pat_byte(uint32_t seed, size_t j)
{
    return (uint8_t)(pat_word(seed, j >> 3) >> ((j & 7) * 8));
}

void cf_fill(void *p, size_t n, uint32_t seed, size_t off)
{
    uint8_t *b = p;
    size_t i = 0;
    for (; i < n && ((off + i) & 7); i++)
        b[i] = pat_byte(seed, off + i);
    for (; i + 8 <= n; i += 8) {
        uint64_t w = pat_word(seed, (off + i) >> 3);
        memcpy(b + i, &w, 8);
    }
    for (; i < n; i++)
        b[i] = pat_byte(seed, off + i);
}

long long cf_verify(const void *p, size_t n, uint32_t seed, size_t off)
{
    const uint8_t *b = p;
    size_t i = 0;
    for (; i < n && ((off + i) & 7); i++)
        if (b[i] != pat_byte(seed, off + i))
            return (long long)i;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = pat_word(seed, (off + i) >> 3), g;
        memcpy(&g, b + i, 8);
        if (g != w)
            break;
    }
    for (; i < n; i++)
        if (b[i] != pat_byte(seed, off + i))
            return (long long)i;
    return -1;
}

bool cf_all(const void *p, size_t n, uint8_t v)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != v)
            return false;
    return true;
}

void cf_sizes(const NDK_ADAPTER_INFO *info, size_t sizes[CF_NSIZES])
{
    size_t max = info->MaxTransferLength;
    const char *cap = getenv("NDK_CONFORM_MAX_TRANSFER");
    size_t lim = cap ? (size_t)strtoull(cap, NULL, 0) : ((size_t)1 << 30);
    if (max > info->MaxRegistrationSize)
        max = info->MaxRegistrationSize;
    if (max > lim) {
        cf_note("max transfer %zu capped at %zu (NDK_CONFORM_MAX_TRANSFER)", max, lim);
        max = lim;
    }
    size_t s[CF_NSIZES] = { 0, 1, 4095, 4096, 65536, max };
    for (int i = 0; i < CF_NSIZES; i++)
        sizes[i] = s[i] > max ? max : s[i];
}

/* ==== two processes ==== */

void cf_pair(void (*server)(int fd, void *arg), void (*client)(int fd, void *arg), void *arg, int timeout_ms)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    CHECK_MSG(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        close(sv[0]);
        cf_role = "client";
        client(sv[1], arg);
        fflush(NULL);
        _exit(0);
    }
    close(sv[1]);
    cf_peer_pid = pid;
    server(sv[0], arg);
    close(sv[0]);
    if (cf_peer_pid > 0)
        ndk_test_wait_ok(pid, timeout_ms, "client process");
    cf_peer_pid = 0;
}

static void write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        CHECK_MSG(w > 0, "sync channel write: %s", strerror(errno));
        b += w;
        n -= (size_t)w;
    }
}

void cf_send_bytes(int fd, const void *p, size_t n)
{
    write_all(fd, p, n);
}

void cf_recv_bytes(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    int ms = cf_ms(60000);
    while (n) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int r = poll(&pfd, 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK_MSG(r == 1, "the other process did not answer within %d ms", ms);
        ssize_t got = read(fd, b, n);
        if (got < 0 && errno == EINTR)
            continue;
        CHECK_MSG(got > 0, "the other process went away (it failed or died)");
        b += got;
        n -= (size_t)got;
    }
}

void cf_tell(int fd, uint32_t tag, uint64_t addr, uint32_t token, uint64_t len, uint64_t arg)
{
    struct cf_msg m = { .tag = tag, .token = token, .addr = addr, .len = len, .arg = arg };
    write_all(fd, &m, sizeof m);
}

struct cf_msg cf_hear(int fd, uint32_t tag)
{
    struct cf_msg m;
    cf_recv_bytes(fd, &m, sizeof m);
    CHECK_MSG(m.tag == tag, "sync: got tag %#x, expected %#x", m.tag, tag);
    return m;
}

struct cf_msg cf_hear_any(int fd)
{
    struct cf_msg m;
    cf_recv_bytes(fd, &m, sizeof m);
    return m;
}

void cf_sync(int fd, uint32_t tag)
{
    cf_tell(fd, tag, 0, 0, 0, 0);
    cf_hear(fd, tag);
}

bool cf_peer_gone(int fd, int ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    if (poll(&pfd, 1, ms) != 1)
        return false;
    char c;
    return read(fd, &c, 1) <= 0;
}

/* ==== connections ==== */

static void connect_event_cb(void *ctx, NDK_CONNECTOR *conn)
{
    struct cf_conn *c = ctx;
    pthread_mutex_lock(&c->m);
    if (c->n_incoming < (int)(sizeof c->incoming / sizeof c->incoming[0]))
        c->incoming[c->n_incoming++] = conn;
    c->total_incoming++;
    pthread_cond_broadcast(&c->c);
    pthread_mutex_unlock(&c->m);
}

static void disconnect_event_cb(void *ctx)
{
    struct cf_conn *c = ctx;
    pthread_mutex_lock(&c->m);
    c->disc_events++;
    pthread_cond_broadcast(&c->c);
    pthread_mutex_unlock(&c->m);
}

static ULONG min_ul(ULONG a, ULONG b)
{
    return a < b ? a : b;
}

void cf_conn_init(struct cf_conn *c, const struct cf_qp_attr *attr)
{
    memset(c, 0, sizeof *c);
    cond_init(&c->m, &c->c);
    if (attr)
        c->attr = *attr;
    cf_ad_open(&c->ad);
    struct cf_qp_attr *t = &c->attr;
    const NDK_ADAPTER_INFO *in = &c->ad.info;
    if (!t->rq_depth)
        t->rq_depth = 32;
    if (!t->iq_depth)
        t->iq_depth = 32;
    if (!t->rsge)
        t->rsge = min_ul(4, in->MaxReceiveRequestSge);
    if (!t->isge)
        t->isge = min_ul(4, in->MaxInitiatorRequestSge);
    if (!t->cq_depth)
        t->cq_depth = t->rq_depth + t->iq_depth + 8;
    if (!t->ird)
        t->ird = min_ul(8, in->MaxInboundReadLimit);
    if (!t->ord)
        t->ord = min_ul(8, in->MaxOutboundReadLimit);
    c->pd = cf_pd(&c->ad);
    c->rcq = cf_cq(&c->ad, t->cq_depth);
    c->icq = t->shared_cq ? c->rcq : cf_cq(&c->ad, t->cq_depth);
    if (t->use_srq) {
        if (in->MaxSrqDepth == 0)
            ndk_test_skip("the adapter has no SRQ support (MaxSrqDepth 0)");
        c->srq = cf_srq(c->pd, &c->ad, t->srq_depth ? t->srq_depth : 64, t->rsge, t->srq_threshold);
        CHECK_ST(cf_try_qp_srq(&c->ad, c->pd, c->rcq, c->icq, c->srq->srq, c, t->iq_depth, t->isge, t->inline_size,
                               &c->qp),
                 STATUS_SUCCESS);
    } else {
        CHECK_ST(cf_try_qp(&c->ad, c->pd, c->rcq, c->icq, c, t->rq_depth, t->iq_depth, t->rsge, t->isge,
                           t->inline_size, &c->qp),
                 STATUS_SUCCESS);
    }
}

void cf_conn_listen(struct cf_conn *c)
{
    struct cf_op *op = cf_op_new("NdkCreateListener");
    NDK_LISTENER *obj = CF_SENTINEL;
    NTSTATUS st = c->ad.ad->Dispatch->NdkCreateListener(c->ad.ad, connect_event_cb, c, cf_create_cb, op, &obj);
    CHECK_ST(cf_create_done(op, st, (void *const *)&obj, NdkObjectTypeListener, c->ad.version, (void **)&c->lis),
             STATUS_SUCCESS);
    SOCKADDR_INET a = cf_addr(0);
    CHECK_ST(cf_listen(c->lis, &a), STATUS_SUCCESS);
    c->lis_addr = cf_listener_addr(c->lis);
    CHECK_MSG(cf_port(&c->lis_addr) != 0, "listener bound to port 0 (§2.12: the provider picks a port)");
}

NDK_CONNECTOR *cf_conn_next_incoming(struct cf_conn *c, int ms)
{
    NDK_CONNECTOR *r = NULL;
    struct timespec ts;
    deadline_ts(&ts, ms);
    pthread_mutex_lock(&c->m);
    while (c->n_incoming == 0)
        if (pthread_cond_timedwait(&c->c, &c->m, &ts) == ETIMEDOUT)
            break;
    if (c->n_incoming) {
        r = c->incoming[0];
        memmove(c->incoming, c->incoming + 1, sizeof(c->incoming[0]) * (size_t)(--c->n_incoming));
    }
    pthread_mutex_unlock(&c->m);
    if (r)
        cf_check_object(r, NdkObjectTypeConnector, c->ad.version);
    return r;
}

NTSTATUS cf_conn_accept(struct cf_conn *c, NDK_CONNECTOR *in, const void *pdata, ULONG len)
{
    c->conn = in;
    struct cf_op *op = cf_op_new("NdkAccept");
    NTSTATUS st = in->Dispatch->NdkAccept(in, c->qp, c->attr.ird, c->attr.ord, (PVOID)pdata, len,
                                          disconnect_event_cb, c, cf_req_cb, op);
    return cf_req_done(op, st);
}

NTSTATUS cf_conn_connect_only(struct cf_conn *c, const SOCKADDR_INET *dst, const void *pdata, ULONG len)
{
    if (!c->conn)
        c->conn = cf_connector(&c->ad);
    SOCKADDR_INET src = cf_addr(0);
    struct cf_op *op = cf_op_new("NdkConnect");
    NTSTATUS st = c->conn->Dispatch->NdkConnect(c->conn, c->qp, (PSOCKADDR)&src, cf_addr_len(&src), (PSOCKADDR)dst,
                                                cf_addr_len(dst), c->attr.ird, c->attr.ord, (PVOID)pdata, len,
                                                cf_req_cb, op);
    return cf_req_done(op, st);
}

NTSTATUS cf_conn_complete(struct cf_conn *c)
{
    struct cf_op *op = cf_op_new("NdkCompleteConnect");
    NTSTATUS st = c->conn->Dispatch->NdkCompleteConnect(c->conn, disconnect_event_cb, c, cf_req_cb, op);
    return cf_req_done(op, st);
}

NTSTATUS cf_conn_connect(struct cf_conn *c, const SOCKADDR_INET *dst, const void *pdata, ULONG len)
{
    NTSTATUS st = cf_conn_connect_only(c, dst, pdata, len);
    if (st != STATUS_SUCCESS)
        return st;
    return cf_conn_complete(c);
}

int cf_conn_disc_events(struct cf_conn *c)
{
    pthread_mutex_lock(&c->m);
    int n = c->disc_events;
    pthread_mutex_unlock(&c->m);
    return n;
}

bool cf_conn_wait_disc(struct cf_conn *c, int n, int ms)
{
    pthread_mutex_lock(&c->m);
    bool ok = cond_wait_count(&c->m, &c->c, &c->disc_events, n, ms);
    pthread_mutex_unlock(&c->m);
    return ok;
}

void cf_conn_fini(struct cf_conn *c)
{
    if (c->conn)
        cf_close(c->conn);
    c->conn = NULL;
    if (c->qp)
        cf_close(c->qp);
    c->qp = NULL;
    if (c->srq)
        cf_srq_close(c->srq);
    if (c->icq && c->icq != c->rcq)
        cf_cq_close(c->icq);
    if (c->rcq)
        cf_cq_close(c->rcq);
    c->icq = c->rcq = NULL;
    if (c->pd)
        cf_close(c->pd);
    c->pd = NULL;
    if (c->lis)
        cf_close(c->lis);
    c->lis = NULL;
    cf_ad_close(&c->ad);
}

#define TAG_ADDR 0xADD7u

void cf_server_up(struct cf_conn *c, int fd, const struct cf_qp_attr *attr)
{
    cf_conn_init(c, attr);
    cf_conn_listen(c);
    cf_send_bytes(fd, &c->lis_addr, sizeof c->lis_addr);
    NDK_CONNECTOR *in = cf_conn_next_incoming(c, cf_ms(15000));
    CHECK_MSG(in, "no connect event within %d ms", cf_ms(15000));
    CHECK_ST(cf_conn_accept(c, in, NULL, 0), STATUS_SUCCESS);
}

void cf_client_up(struct cf_conn *c, int fd, const struct cf_qp_attr *attr)
{
    SOCKADDR_INET dst;
    cf_conn_init(c, attr);
    cf_recv_bytes(fd, &dst, sizeof dst);
    CHECK_ST(cf_conn_connect(c, &dst, NULL, 0), STATUS_SUCCESS);
}

void cf_post_recv(struct cf_conn *c, uintptr_t ctx, const NDK_SGE *sge, ULONG n)
{
    NTSTATUS st = c->srq ? c->srq->srq->Dispatch->NdkSrqReceive(c->srq->srq, (PVOID)ctx, sge, n)
                         : c->qp->Dispatch->NdkReceive(c->qp, (PVOID)ctx, sge, n);
    CHECK_MSG(st == STATUS_SUCCESS, "posting receive %#lx: %s", (unsigned long)ctx, cf_status_name(st));
}

void cf_post_send(struct cf_conn *c, uintptr_t ctx, const NDK_SGE *sge, ULONG n, ULONG flags)
{
    NTSTATUS st = c->qp->Dispatch->NdkSend(c->qp, (PVOID)ctx, sge, n, flags);
    CHECK_MSG(st == STATUS_SUCCESS, "NdkSend %#lx: %s", (unsigned long)ctx, cf_status_name(st));
}

void cf_post_write(struct cf_conn *c, uintptr_t ctx, const NDK_SGE *sge, ULONG n, uint64_t raddr, UINT32 rtok,
                   ULONG flags)
{
    NTSTATUS st = c->qp->Dispatch->NdkWrite(c->qp, (PVOID)ctx, sge, n, raddr, rtok, flags);
    CHECK_MSG(st == STATUS_SUCCESS, "NdkWrite %#lx: %s", (unsigned long)ctx, cf_status_name(st));
}

void cf_post_read(struct cf_conn *c, uintptr_t ctx, const NDK_SGE *sge, ULONG n, uint64_t raddr, UINT32 rtok,
                  ULONG flags)
{
    NTSTATUS st = c->qp->Dispatch->NdkRead(c->qp, (PVOID)ctx, sge, n, raddr, rtok, flags);
    CHECK_MSG(st == STATUS_SUCCESS, "NdkRead %#lx: %s", (unsigned long)ctx, cf_status_name(st));
}
