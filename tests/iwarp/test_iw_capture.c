/* Packet capture of a connection set-up between two processes (over 127.0.0.1 and ::1):
 * dumpcap records the loopback traffic of one connect / accept / RTR / disconnect, and tshark must
 * decode it as MPA (a Request and a Reply with our flags and private data, the zero-length
 * RDMA Write RTR as DDP/RDMAP with a good CRC) with no malformed frame. Skipped, with the reason,
 * when dumpcap or tshark is missing or capturing is not permitted. */
#include "iwtest.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TMO 10000

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

static int server(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;

    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 4);
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&la));           /* to the test: start capturing */
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 1);          /* capture running */
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&la));           /* to the client: connect */
    CHECK_MSG(iwt_wait_atomic(&g_ev, 1, TMO), "no connect event");
    NDK_CONNECTOR *c = atomic_load(&g_in);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkAccept(c, q.qp, 8, 8, "server-private", 14, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 2);          /* client disconnected */
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
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
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);

    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 4);
    SOCKADDR_INET src = iwt_addr(&t, 0), dst = iwt_addr(&t, port);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                          iwt_addr_len(&dst), 8, 8, "client-private", 14, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    iwt_send(iwt_cli_tx(&a->ch), 2);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    return 0;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static char *run(const char *cmd)
{
    FILE *f = popen(cmd, "r");
    size_t cap = 1 << 20, len = 0;
    char *buf = calloc(1, cap + 1);
    CHECK(f && buf);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len, f)) > 0)
        len += n;
    pclose(f);
    return buf;
}

static char g_dir[256];

static void body(int family)
{
    struct arg a = { .family = family };
    char pcap[300], cmd[1024];
    struct stat sb;

    atomic_store(&g_ev, 0);
    snprintf(pcap, sizeof pcap, "%s/setup-%s.pcapng", g_dir, family == AF_INET6 ? "v6" : "v4");
    iwt_chan_init(&a.ch);
    pid_t srv = ndk_test_spawn(server, &a);
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a.ch), TMO);   /* the server's first message */

    fflush(NULL);
    pid_t cap = fork();
    CHECK(cap >= 0);
    if (cap == 0) {
        char filter[64];
        snprintf(filter, sizeof filter, "tcp port %u", port);
        execlp("dumpcap", "dumpcap", "-q", "-i", "lo", "-f", filter, "-w", pcap, (char *)NULL);
        _exit(127);
    }
    /* bounded polling: the capture file appears once dumpcap is capturing */
    uint64_t end = ndk_test_now_ms() + TMO;
    while (stat(pcap, &sb) != 0 || sb.st_size == 0) {
        int status;
        if (waitpid(cap, &status, WNOHANG) == cap) {
            kill(srv, SIGKILL);
            waitpid(srv, NULL, 0);
            ndk_test_skip("dumpcap cannot capture on lo here (exit %d)", WEXITSTATUS(status));
        }
        CHECK_MSG(ndk_test_now_ms() < end, "dumpcap did not start");
        usleep(10 * 1000);
    }
    usleep(300 * 1000);       /* dumpcap writes the header just before the filter is live */
    iwt_send(iwt_cli_tx(&a.ch), 1);                 /* to the server: capture is running */
    pid_t cli = ndk_test_spawn(client, &a);
    ndk_test_wait_ok(cli, 30000, "client process");
    ndk_test_wait_ok(srv, 30000, "server process");
    usleep(300 * 1000);
    kill(cap, SIGINT);
    waitpid(cap, NULL, 0);
    iwt_chan_close(&a.ch);

    snprintf(cmd, sizeof cmd, "tshark -n -r '%s' -V --disable-protocol rpcordma 2>&1", pcap);
    char *v = run(cmd);
    size_t req = count(v, "Request frame header"), rep = count(v, "Reply frame header"), mal = count(v, "Malformed"),
           good = count(v, "Good CRC32"), bad = count(v, "Bad CRC32");
    printf("tshark: Request %zu, Reply %zu, Good CRC32 %zu, Bad CRC32 %zu, Malformed %zu\n", req, rep, good, bad, mal);
    CHECK_MSG(req == 1 && rep == 1, "tshark did not decode one MPA Request and one Reply:\n%s", v);
    CHECK_MSG(mal == 0, "tshark reports malformed frames:\n%s", v);
    CHECK_MSG(bad == 0, "tshark reports bad CRCs:\n%s", v);
    CHECK_MSG(good >= 1, "the RTR FPDU was not decoded with a good CRC:\n%s", v);
    free(v);
    snprintf(cmd, sizeof cmd,
             "tshark -n -r '%s' -Y 'iwarp_mpa.req or iwarp_mpa.rep' -T fields -e iwarp_mpa.crc_flag -e iwarp_mpa.rev "
             "-e iwarp_mpa.pdlength 2>&1", pcap);
    v = run(cmd);
    printf("MPA frames (crc rev pdlen):\n%s", v);
    CHECK_MSG(count(v, "\t2\t18") == 2, "expected two Rev 2 frames with 4 + 14 bytes of private data:\n%s", v);
    free(v);
    snprintf(cmd, sizeof cmd, "tshark -n -r '%s' -Y iwarp_ddp_rdmap -T fields -e iwarp_rdma.opcode 2>&1", pcap);
    v = run(cmd);
    CHECK_MSG(strstr(v, "0x00") || strstr(v, "0\n"), "no zero-length RDMA Write RTR decoded:\n%s", v);
    free(v);
}

int main(void)
{
    if (system("command -v tshark >/dev/null 2>&1") != 0 || system("command -v dumpcap >/dev/null 2>&1") != 0)
        ndk_test_skip("tshark/dumpcap not installed (Debian package 'tshark')");
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/ndk-iw-capture-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(g_dir));
    /* CRC on, so Wireshark checks every FPDU CRC it decodes */
    setenv("NDK_IWARP_CRC", "1", 1);
    iwt_for_each_family(body);
    printf("PASS (captures in %s)\n", g_dir);
    return 0;
}
