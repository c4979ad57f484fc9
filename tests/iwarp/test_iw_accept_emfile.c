/* A listener whose accept() fails with EMFILE, over 127.0.0.1 and ::1 (two processes). The
 * connection waits in the kernel backlog and the listening socket stays readable, so a provider
 * that keeps polling it spins its progress thread at 100 %. The server process uses up its file
 * descriptors, the client connects, and the server's CPU time over one second must stay far
 * below that; once descriptors are free again the pending connection is accepted and completes. */
#include "iwtest.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define TMO 10000
#define MAX_FILL 65536

struct arg {
    int family;
    struct iwt_chan ch;
};

static _Atomic(NDK_CONNECTOR *) g_in;
static atomic_int g_ev;

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    atomic_store(&g_in, c);
    atomic_fetch_add(&g_ev, 1);
}

static uint64_t cpu_ms(void)
{
    struct rusage ru;
    CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000u;
}

static int server(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_LISTENER *l;
    SOCKADDR_INET addr;
    ULONG len = sizeof addr;
    static int fill[MAX_FILL];
    int nfill = 0;
    struct rlimit rl;

    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 4);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    addr = iwt_addr(&t, 0);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&addr, iwt_addr_len(&addr), NULL, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&addr, &len), STATUS_SUCCESS);

    /* use up every descriptor (a small limit keeps this quick) */
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_cur > 1024) {
        rl.rlim_cur = 1024;
        CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    }
    for (;;) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            CHECK_MSG(errno == EMFILE, "open: %s", strerror(errno));
            break;
        }
        CHECK(nfill < MAX_FILL);
        fill[nfill++] = fd;
    }
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&addr));

    /* the client's TCP connection is in the backlog now; let accept() fail for a while */
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 1);
    usleep(300 * 1000);
    uint64_t c0 = cpu_ms(), w0 = ndk_test_now_ms();
    usleep(1000 * 1000);
    uint64_t used = cpu_ms() - c0, wall = ndk_test_now_ms() - w0;
    printf("   server CPU while accept() fails with EMFILE: %llu ms in %llu ms\n", (unsigned long long)used,
           (unsigned long long)wall);
    CHECK_MSG(used * 4 < wall, "the progress thread spins while accept() fails (%llu ms CPU in %llu ms)",
              (unsigned long long)used, (unsigned long long)wall);
    CHECK_EQ(atomic_load(&g_ev), 0);

    /* descriptors back: the waiting connection goes through */
    for (int i = 0; i < nfill; i++)
        close(fill[i]);
    CHECK_MSG(iwt_wait_atomic(&g_ev, 1, TMO), "the backlogged connection was never accepted");
    NDK_CONNECTOR *c = atomic_load(&g_in);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 2);
    iwt_close_obj(c, TMO);
    iwt_close_obj(l, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    return 0;
}

static int client(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_CONNECTOR *c;

    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 4);
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);
    SOCKADDR_INET src = iwt_addr(&t, 0), dst = iwt_addr(&t, port);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                          iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, &rq);
    CHECK_STATUS(st, STATUS_PENDING);
    usleep(100 * 1000);                    /* the TCP handshake completes into the backlog */
    iwt_send(iwt_cli_tx(&a->ch), 1);
    CHECK_STATUS(iwt_req_wait(&rq, STATUS_PENDING, 3 * TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_send(iwt_cli_tx(&a->ch), 2);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    return 0;
}

static void body(int family)
{
    struct arg a = { .family = family };

    atomic_store(&g_ev, 0);
    iwt_chan_init(&a.ch);
    iwt_run_pair(server, client, &a, 60000);
    iwt_chan_close(&a.ch);
}

int main(void)
{
    /* the client waits through the server's EMFILE phase */
    setenv("NDK_IWARP_CONNECT_TIMEOUT_MS", "30000", 1);
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
