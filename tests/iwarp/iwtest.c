#define _GNU_SOURCE
#include "iwtest.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

const char *iwt_family_name(int family)
{
    return family == AF_INET6 ? "IPv6 (::1)" : "IPv4 (127.0.0.1)";
}

bool iwt_have_ipv6(void)
{
    struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    bool ok;

    if (fd < 0)
        return false;
    ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

SOCKADDR_INET iwt_addr(const struct iwt *t, uint16_t port)
{
    SOCKADDR_INET a;

    memset(&a, 0, sizeof a);
    if (t->family == AF_INET6) {
        a.Ipv6.sin6_family = AF_INET6;
        memcpy(&a.Ipv6.sin6_addr, &in6addr_loopback, sizeof a.Ipv6.sin6_addr);
        a.Ipv6.sin6_port = htons(port);
    } else {
        a.Ipv4.sin_family = AF_INET;
        a.Ipv4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.Ipv4.sin_port = htons(port);
    }
    return a;
}

uint16_t iwt_port(const SOCKADDR_INET *a)
{
    return ntohs(a->si_family == AF_INET6 ? a->Ipv6.sin6_port : a->Ipv4.sin_port);
}

ULONG iwt_addr_len(const SOCKADDR_INET *a)
{
    return a->si_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void iwt_log(void *ctx, int level, const char *line)
{
    (void)ctx;
    fprintf(stderr, "[rt %d] %s\n", level, line);
}

NTSTATUS iwt_open_version(struct iwt *t, int family, NDK_VERSION v)
{
    ndk_rt_config cfg;
    NTSTATUS st;

    memset(t, 0, sizeof *t);
    t->family = family;
    if (family == AF_INET6 && !iwt_have_ipv6())
        ndk_test_skip("::1 is not available here");
    memset(&cfg, 0, sizeof cfg);
    cfg.providers = "iwarp";
    cfg.interfaces = "lo";
    cfg.no_monitor = TRUE;
    cfg.log = iwt_log;
    cfg.log_level = getenv("IWT_VERBOSE") ? NDK_LOG_DEBUG : NDK_LOG_WARNING;
    st = ndk_rt_open(&cfg, &t->rt);
    CHECK_MSG(st == STATUS_SUCCESS, "ndk_rt_open: %s", ndk_rt_status_name(st));
    t->addr = iwt_addr(t, 0);
    st = ndk_rt_find_adapter_by_address(t->rt, (struct sockaddr *)&t->addr, "iwarp", &t->id);
    if (st != STATUS_SUCCESS)
        ndk_test_skip("no iwarp adapter for %s (%s): is the provider built?", iwt_family_name(family),
                      ndk_rt_status_name(st));
    return ndk_rt_open_adapter(t->rt, t->id, v, &t->ad);
}

void iwt_open(struct iwt *t, int family)
{
    NDK_VERSION v = { 2, 1 };
    NTSTATUS st = iwt_open_version(t, family, v);

    CHECK_MSG(st == STATUS_SUCCESS, "ndk_rt_open_adapter: %s", ndk_rt_status_name(st));
}

void iwt_close(struct iwt *t)
{
    if (t->ad)
        ndk_rt_close_adapter(t->rt, t->ad);
    t->ad = NULL;
    if (t->rt)
        ndk_rt_close(t->rt);
    t->rt = NULL;
}

void iwt_req_init(struct iwt_req *r)
{
    atomic_init(&r->done, 0);
    atomic_init(&r->status, (int)0x7fffffff);
}

void iwt_req_cb(void *ctx, NTSTATUS status)
{
    struct iwt_req *r = ctx;

    atomic_store(&r->status, status);
    atomic_fetch_add(&r->done, 1);
}

_Atomic(NDK_CONNECTOR *) iwt_incoming;
atomic_int iwt_connect_events, iwt_disconnect_events;

void iwt_on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    atomic_store(&iwt_incoming, c);
    atomic_fetch_add(&iwt_connect_events, 1);
}

void iwt_on_disconnect(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&iwt_disconnect_events, 1);
}

bool iwt_wait_atomic(atomic_int *flag, int value, int timeout_ms)
{
    uint64_t end = ndk_test_now_ms() + (uint64_t)timeout_ms;

    while (atomic_load(flag) < value) {
        if (ndk_test_now_ms() > end)
            return false;
        usleep(1000);
    }
    return true;
}

NTSTATUS iwt_req_wait(struct iwt_req *r, NTSTATUS st, int timeout_ms)
{
    if (st != STATUS_PENDING) {
        CHECK_MSG(atomic_load(&r->done) == 0, "completion called for a non-pending request (status 0x%08x)",
                  (unsigned)st);
        return st;
    }
    CHECK_MSG(iwt_wait_atomic(&r->done, 1, timeout_ms), "request completion did not arrive in %d ms", timeout_ms);
    CHECK_EQ(atomic_load(&r->done), 1);
    return atomic_load(&r->status);
}

void iwt_close_cb(void *ctx)
{
    struct iwt_close *c = ctx;
    atomic_fetch_add(&c->done, 1);
}

NTSTATUS iwt_close_start(void *obj, struct iwt_close *c)
{
    NDK_OBJECT_HEADER *h = obj;
    /* Every closable object is { Header; Dispatch } and slot 0 of every such table is close. */
    NDK_FN_CLOSE_OBJECT fn = **(NDK_FN_CLOSE_OBJECT *const *)((char *)obj + sizeof(NDK_OBJECT_HEADER));

    atomic_init(&c->done, 0);
    return fn(h, iwt_close_cb, c);
}

void iwt_close_obj(void *obj, int timeout_ms)
{
    struct iwt_close c;
    NTSTATUS st = iwt_close_start(obj, &c);

    if (st == STATUS_SUCCESS) {
        usleep(1000);
        CHECK_EQ(atomic_load(&c.done), 0);
        return;
    }
    CHECK_STATUS(st, STATUS_PENDING);
    CHECK_MSG(iwt_wait_atomic(&c.done, 1, timeout_ms), "close completion did not arrive in %d ms", timeout_ms);
}

static void iwt_cq_nop(void *ctx, NTSTATUS st)
{
    (void)ctx;
    (void)st;
}

void iwt_qp_create(struct iwt *t, struct iwt_qp *q, ULONG depth)
{
    NTSTATUS st;

    st = t->ad->Dispatch->NdkCreateCq(t->ad, depth * 2, iwt_cq_nop, NULL, NULL, NULL, NULL, &q->cq);
    CHECK_STATUS(st, STATUS_SUCCESS);
    st = t->ad->Dispatch->NdkCreatePd(t->ad, NULL, NULL, &q->pd);
    CHECK_STATUS(st, STATUS_SUCCESS);
    st = q->pd->Dispatch->NdkCreateQp(q->pd, q->cq, q->cq, q, depth, depth, 2, 2, 0, NULL, NULL, &q->qp);
    CHECK_STATUS(st, STATUS_SUCCESS);
}

void iwt_qp_destroy(struct iwt_qp *q)
{
    if (q->qp)
        iwt_close_obj(q->qp, 5000);
    if (q->pd)
        iwt_close_obj(q->pd, 5000);
    if (q->cq)
        iwt_close_obj(q->cq, 5000);
    memset(q, 0, sizeof *q);
}

int iwt_cq_wait(NDK_CQ *cq, NDK_RESULT_EX *res, int timeout_ms)
{
    uint64_t end = ndk_test_now_ms() + (uint64_t)timeout_ms;

    for (;;) {
        if (cq->Dispatch->NdkGetCqResultsEx(cq, res, 1) == 1)
            return 1;
        if (ndk_test_now_ms() > end)
            return 0;
        usleep(1000);
    }
}

void iwt_chan_init(struct iwt_chan *c)
{
    CHECK(pipe(c->to_client) == 0);
    CHECK(pipe(c->to_server) == 0);
}

void iwt_chan_close(struct iwt_chan *c)
{
    close(c->to_client[0]);
    close(c->to_client[1]);
    close(c->to_server[0]);
    close(c->to_server[1]);
}

void iwt_send(int fd, uint32_t v)
{
    ssize_t n;
    do
        n = write(fd, &v, sizeof v);
    while (n < 0 && errno == EINTR);
    CHECK_MSG(n == (ssize_t)sizeof v, "pipe write: %s", strerror(errno));
}

uint32_t iwt_recv(int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    uint32_t v;
    ssize_t n;
    int r;

    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    CHECK_MSG(r == 1, "peer process did not answer in %d ms", timeout_ms);
    n = read(fd, &v, sizeof v);
    CHECK_MSG(n == (ssize_t)sizeof v, "peer process went away (read %zd)", n);
    return v;
}

void iwt_run_pair(int (*server)(void *), int (*client)(void *), void *arg, int timeout_ms)
{
    pid_t s = ndk_test_spawn(server, arg);
    pid_t c = ndk_test_spawn(client, arg);

    ndk_test_wait_ok(c, timeout_ms, "client process");
    ndk_test_wait_ok(s, timeout_ms, "server process");
}

static void link_on_connect(void *ctx, NDK_CONNECTOR *c)
{
    struct iwt_link *k = ctx;

    atomic_store(&k->incoming, c);
    atomic_fetch_add(&k->nconn, 1);
}

static void link_on_disconnect(void *ctx)
{
    (void)ctx;
}

void iwt_link_open(struct iwt *t, struct iwt_link *k, NDK_QP *aqp, NDK_QP *bqp, int timeout_ms)
{
    NDK_ADAPTER *ad = t->ad;
    struct iwt_req rl, rc, ra, rcc;
    SOCKADDR_INET la = iwt_addr(t, 0), src = iwt_addr(t, 0);
    ULONG len = sizeof la;

    memset(k, 0, sizeof *k);
    CHECK_STATUS(ad->Dispatch->NdkCreateListener(ad, link_on_connect, k, NULL, NULL, &k->l), STATUS_SUCCESS);
    iwt_req_init(&rl);
    CHECK_STATUS(iwt_req_wait(&rl, k->l->Dispatch->NdkListen(k->l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, &rl),
                              timeout_ms),
                 STATUS_SUCCESS);
    CHECK_STATUS(k->l->Dispatch->NdkGetLocalAddress(k->l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    CHECK_STATUS(ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, &k->ac), STATUS_SUCCESS);
    iwt_req_init(&rc);
    NTSTATUS cst = k->ac->Dispatch->NdkConnect(k->ac, aqp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&la,
                                               iwt_addr_len(&la), 1, 1, NULL, 0, iwt_req_cb, &rc);
    CHECK_MSG(iwt_wait_atomic(&k->nconn, 1, timeout_ms), "no connect event");
    k->bc = atomic_load(&k->incoming);
    iwt_req_init(&ra);
    NTSTATUS ast = k->bc->Dispatch->NdkAccept(k->bc, bqp, 1, 1, NULL, 0, link_on_disconnect, NULL, iwt_req_cb, &ra);
    CHECK_STATUS(iwt_req_wait(&rc, cst, timeout_ms), STATUS_SUCCESS);
    iwt_req_init(&rcc);
    CHECK_STATUS(iwt_req_wait(&rcc, k->ac->Dispatch->NdkCompleteConnect(k->ac, link_on_disconnect, NULL, iwt_req_cb, &rcc),
                              timeout_ms),
                 STATUS_SUCCESS);
    CHECK_STATUS(iwt_req_wait(&ra, ast, timeout_ms), STATUS_SUCCESS);
}

void iwt_link_close(struct iwt_link *k, int timeout_ms)
{
    if (k->ac)
        iwt_close_obj(k->ac, timeout_ms);
    if (k->bc)
        iwt_close_obj(k->bc, timeout_ms);
    iwt_close_obj(k->l, timeout_ms);
    memset(k, 0, sizeof *k);
}

void iwt_for_each_family(void (*body)(int family))
{
    printf("== %s\n", iwt_family_name(AF_INET));
    fflush(stdout);
    body(AF_INET);
    if (iwt_have_ipv6()) {
        printf("== %s\n", iwt_family_name(AF_INET6));
        fflush(stdout);
        body(AF_INET6);
    } else {
        printf("== IPv6: ::1 not available, IPv6 half not run\n");
    }
}

unsigned long iwt_raise_nofile(unsigned long n)
{
    struct rlimit rl;

    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_cur < n) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= n ? n : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && rl.rlim_max < n) {
            rl.rlim_max = n;      /* root may raise the hard limit too */
            rl.rlim_cur = n;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (unsigned long)rl.rlim_cur;
}

void iwt_fill_pd(uint8_t *buf, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(seed + i * 7);
}

NDK_MR *iwt_mr_register(NDK_PD *pd, void *buf, ULONG len, ULONG flags, PMDL *mdl)
{
    struct iwt_req rq;
    NDK_MR *mr;

    CHECK_STATUS(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr), STATUS_SUCCESS);
    *mdl = IoAllocateMdl(buf, len, FALSE, FALSE, NULL);
    CHECK(*mdl);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, mr->Dispatch->NdkRegisterMr(mr, *mdl, len, flags, iwt_req_cb, &rq), 10000),
                 STATUS_SUCCESS);
    return mr;
}

void iwt_mr_release(NDK_MR *mr, PMDL mdl, int timeout_ms)
{
    struct iwt_req rq;

    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, mr->Dispatch->NdkDeregisterMr(mr, iwt_req_cb, &rq), timeout_ms), STATUS_SUCCESS);
    iwt_close_obj(mr, timeout_ms);
    IoFreeMdl(mdl);
}

static char iwt_rt_dir[64];
static pid_t iwt_rt_dir_owner;

/* atexit: only the process that made the directory removes it (forked children exit too). */
static void iwt_rt_dir_remove(void)
{
    DIR *d;
    struct dirent *e;
    char path[512];

    if (getpid() != iwt_rt_dir_owner || !(d = opendir(iwt_rt_dir)))
        return;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", iwt_rt_dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(iwt_rt_dir);
}

void iwt_private_runtime_dir(void)
{
    snprintf(iwt_rt_dir, sizeof iwt_rt_dir, "/tmp/ndk-iwtest-XXXXXX");
    CHECK(mkdtemp(iwt_rt_dir));
    setenv("NDK_RUNTIME_DIR", iwt_rt_dir, 1);
    iwt_rt_dir_owner = getpid();
    atexit(iwt_rt_dir_remove);
}
