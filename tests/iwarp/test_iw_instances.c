/* Several runtime instances in one process, over 127.0.0.1 and ::1. dlopen hands every runtime
 * the same provider module, so the provider's state must be per instance (DriverContext):
 *   - each instance logs through its own runtime (a warning raised through adapter A reaches
 *     A's log callback only, also while B is open and after B is gone);
 *   - after runtime B is closed (its provider instance unloaded), runtime A still connects,
 *     accepts and tears down (the provider once kept one global instance that B's unload
 *     cleared: A's next NdkConnect crashed);
 *   - both instances connecting from port 0 to one listener at the same time get distinct
 *     ephemeral ports (§5.11.5), no STATUS_ADDRESS_ALREADY_EXISTS. */
#include "iwtest.h"

#include <string.h>
#include <unistd.h>

#define TMO 10000
#define NCONN 16

struct logsink {
    const char *name;
    atomic_int lam_warnings;       /* "NdkReleaseLAM" warnings seen by this runtime's log */
    atomic_int loaded;             /* "iwarp: loaded" lines */
};

static void sink_log(void *ctx, int level, const char *line)
{
    struct logsink *s = ctx;

    if (strstr(line, "NdkReleaseLAM"))
        atomic_fetch_add(&s->lam_warnings, 1);
    if (strstr(line, "iwarp: loaded"))
        atomic_fetch_add(&s->loaded, 1);
    if (level <= NDK_LOG_WARNING && !strstr(line, "NdkReleaseLAM"))
        fprintf(stderr, "[%s %d] %s\n", s->name, level, line);
}

static void open_with_sink(struct iwt *t, int family, struct logsink *sink)
{
    ndk_rt_config cfg;
    NDK_VERSION v = { 2, 1 };
    NTSTATUS st;

    memset(t, 0, sizeof *t);
    t->family = family;
    memset(&cfg, 0, sizeof cfg);
    cfg.providers = "iwarp";
    cfg.interfaces = "lo";
    cfg.no_monitor = TRUE;
    cfg.log = sink_log;
    cfg.log_ctx = sink;
    cfg.log_level = NDK_LOG_INFO;
    st = ndk_rt_open(&cfg, &t->rt);
    CHECK_MSG(st == STATUS_SUCCESS, "ndk_rt_open: %s", ndk_rt_status_name(st));
    t->addr = iwt_addr(t, 0);
    st = ndk_rt_find_adapter_by_address(t->rt, (struct sockaddr *)&t->addr, "iwarp", &t->id);
    if (st != STATUS_SUCCESS)
        ndk_test_skip("no iwarp adapter for %s (%s)", iwt_family_name(family), ndk_rt_status_name(st));
    st = ndk_rt_open_adapter(t->rt, t->id, v, &t->ad);
    CHECK_MSG(st == STATUS_SUCCESS, "ndk_rt_open_adapter: %s", ndk_rt_status_name(st));
}

/* Makes the provider log one warning through adapter t (a LAM it never built). */
static void poke_log(struct iwt *t)
{
    NDK_LOGICAL_ADDRESS_MAPPING lam;

    memset(&lam, 0, sizeof lam);
    lam.AdapterContext = &lam;
    t->ad->Dispatch->NdkReleaseLAM(t->ad, &lam);
}

static _Atomic(NDK_CONNECTOR *) g_in[2 * NCONN];
static atomic_int g_ev;        /* connect events published: g_in[0 .. g_ev-1] are set */
static atomic_int g_slot;      /* slots handed out (taken before the store, published after) */

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    int i = atomic_fetch_add(&g_slot, 1);
    if (i < 2 * NCONN)
        atomic_store(&g_in[i], c);
    atomic_fetch_add(&g_ev, 1);
}

struct side {
    struct iwt_qp q;
    NDK_CONNECTOR *c;
    struct iwt_req rq;
};

/* Connects n connectors of t from port 0 to port (not waiting). */
static void start_connects(struct iwt *t, struct side *sd, int n, uint16_t port)
{
    for (int i = 0; i < n; i++) {
        SOCKADDR_INET src = iwt_addr(t, 0), dst = iwt_addr(t, port);
        iwt_qp_create(t, &sd[i].q, 4);
        CHECK_STATUS(t->ad->Dispatch->NdkCreateConnector(t->ad, NULL, NULL, &sd[i].c), STATUS_SUCCESS);
        iwt_req_init(&sd[i].rq);
        NTSTATUS st = sd[i].c->Dispatch->NdkConnect(sd[i].c, sd[i].q.qp, (PSOCKADDR)&src, iwt_addr_len(&src),
                                                    (PSOCKADDR)&dst, iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb,
                                                    &sd[i].rq);
        CHECK_MSG(st == STATUS_PENDING, "connect %d from port 0: 0x%08x (%s)", i, (unsigned)st,
                  ndk_rt_status_name(st));
    }
}

static uint16_t local_port(NDK_CONNECTOR *c)
{
    SOCKADDR_INET a;
    ULONG len = sizeof a;
    CHECK_STATUS(c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&a, &len), STATUS_SUCCESS);
    return iwt_port(&a);
}

/* Accepts every incoming request; waits for every active side to complete its connect. */
static void accept_all(struct iwt *srv, struct side *in, int n_in, struct side *act, int n_act)
{
    for (int i = 0; i < n_in; i++) {
        CHECK_MSG(iwt_wait_atomic(&g_ev, i + 1, TMO), "connect event %d missing", i);
        NDK_CONNECTOR *c = atomic_load(&g_in[i]);
        iwt_qp_create(srv, &in[i].q, 4);
        in[i].c = c;
        iwt_req_init(&in[i].rq);
        NTSTATUS st = c->Dispatch->NdkAccept(c, in[i].q.qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &in[i].rq);
        CHECK_STATUS(st, STATUS_PENDING);
    }
    for (int i = 0; i < n_act; i++) {
        NTSTATUS st = iwt_req_wait(&act[i].rq, STATUS_PENDING, TMO);
        CHECK_MSG(st == STATUS_SUCCESS, "connect %d completed with %s", i, ndk_rt_status_name(st));
        iwt_req_init(&act[i].rq);
        st = act[i].c->Dispatch->NdkCompleteConnect(act[i].c, NULL, NULL, iwt_req_cb, &act[i].rq);
        CHECK_STATUS(iwt_req_wait(&act[i].rq, st, TMO), STATUS_SUCCESS);
    }
    for (int i = 0; i < n_in; i++)
        CHECK_STATUS(iwt_req_wait(&in[i].rq, STATUS_PENDING, TMO), STATUS_SUCCESS);
}

static void teardown(struct side *sd, int n)
{
    for (int i = 0; i < n; i++) {
        iwt_close_obj(sd[i].c, TMO);
        iwt_qp_destroy(&sd[i].q);
    }
}

static void body(int family)
{
    struct logsink la = { .name = "A" }, lb = { .name = "B" };
    struct iwt a, b;
    static struct side act[2 * NCONN], in[2 * NCONN];
    NDK_LISTENER *l;
    SOCKADDR_INET addr;
    ULONG len;
    uint16_t port, ports[2 * NCONN];

    if (family == AF_INET6 && !iwt_have_ipv6())
        ndk_test_skip("::1 is not available here");
    atomic_store(&g_ev, 0);
    atomic_store(&g_slot, 0);
    open_with_sink(&a, family, &la);
    open_with_sink(&b, family, &lb);
    CHECK_EQ(atomic_load(&la.loaded), 1);
    CHECK_EQ(atomic_load(&lb.loaded), 1);

    /* logging goes through the instance the adapter belongs to */
    poke_log(&a);
    CHECK_EQ(atomic_load(&la.lam_warnings), 1);
    CHECK_EQ(atomic_load(&lb.lam_warnings), 0);
    poke_log(&b);
    CHECK_EQ(atomic_load(&la.lam_warnings), 1);
    CHECK_EQ(atomic_load(&lb.lam_warnings), 1);

    /* A listens; A and B both connect from port 0 at the same time */
    CHECK_STATUS(a.ad->Dispatch->NdkCreateListener(a.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    addr = iwt_addr(&a, 0);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&addr, iwt_addr_len(&addr), NULL, NULL), STATUS_SUCCESS);
    len = sizeof addr;
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&addr, &len), STATUS_SUCCESS);
    port = iwt_port(&addr);
    start_connects(&a, act, NCONN, port);
    start_connects(&b, act + NCONN, NCONN, port);
    accept_all(&a, in, 2 * NCONN, act, 2 * NCONN);
    for (int i = 0; i < 2 * NCONN; i++) {
        ports[i] = local_port(act[i].c);
        CHECK_MSG(ports[i] >= NDK_EPHEMERAL_PORT_FIRST, "port %u is not ephemeral (§5.11.5)", ports[i]);
        for (int j = 0; j < i; j++)
            CHECK_MSG(ports[i] != ports[j], "connections %d and %d share local port %u", i, j, ports[i]);
    }
    teardown(act + NCONN, NCONN);
    teardown(act, NCONN);
    teardown(in, 2 * NCONN);

    /* B goes away: its provider instance is unloaded, A's must be untouched */
    iwt_close(&b);
    poke_log(&a);
    CHECK_EQ(atomic_load(&la.lam_warnings), 2);

    atomic_store(&g_ev, 0);
    atomic_store(&g_slot, 0);
    start_connects(&a, act, 2, port);
    accept_all(&a, in, 2, act, 2);
    teardown(act, 2);
    teardown(in, 2);
    iwt_close_obj(l, TMO);
    iwt_close(&a);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
