/* test_dp_txpoll: a busy-polling consumer's retry of a TX engine that waits for room (poll.c,
 * tx.c iw_tx_poll). The poll writes again only once the socket is writable as epoll reports it
 * (a third of the send buffer free), not whenever the peer's last reads freed a few KB: over a
 * loopback TCP connection to a raw peer that reads slowly in small pieces, 1 MiB RDMA Writes
 * take a few socket writes per MiB, where retrying at every poll took thousands.
 * Every Write completes, in order, and every byte arrives.
 * Usage: test_dp_txpoll */
#include "dptest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NW 24u
#define WLEN (1u << 20)
#define HDR_AND_TRAILERS (64u * 1024u)      /* generous: headers and CRCs of 24 MiB of FPDUs */
/* With the POLLOUT threshold a write takes about a third of the send buffer (3-4 per MiB here);
 * retried at every poll, 19,000-22,000 writes per MiB, nearly all finding no room. */
#define MAX_WRITES_PER_MIB 8u

static struct dpt_env env;
static struct dpt_mr ma;

struct reader {
    int fd;
    atomic_size_t got;
    atomic_bool stop;
};

/* Reads 2 KiB at a time with pauses, so that room in the sender's socket frees in small steps. */
static void *slow_reader(void *p)
{
    struct reader *r = p;
    char buf[2048];

    while (!atomic_load(&r->stop)) {
        ssize_t n = recv(r->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0)
            break;
        if (n > 0)
            atomic_fetch_add(&r->got, (size_t)n);
        usleep(20);
    }
    return NULL;
}

int main(void)
{
    struct dpt_conn_opts o;
    struct reader rd = { 0 };
    pthread_t thr;
    NDK_CQ *cq;

    dpt_conn_opts_default(&o);
    o.crc = false;
    o.tcp = true;
    o.sq_depth = NW;
    dpt_env_init(&env);
    dpt_mr_reg(&env, &ma, WLEN, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    rd.fd = dpt_connect_raw(&env, &o);
    cq = env.s[0].cq;
    CHECK(pthread_create(&thr, NULL, slow_reader, &rd) == 0);

    uint64_t w0 = dpt_tx_writes(&env);
    NDK_SGE s = dpt_sge(&ma, 0, WLEN);
    for (uintptr_t i = 0; i < NW; i++)
        CHECK_STATUS(env.s[0].ndk->Dispatch->NdkWrite(env.s[0].ndk, (void *)(0x100 + i), &s, 1, 0x10000, 0x1234, 0),
                     STATUS_SUCCESS);
    /* Busy-poll as a spinning consumer does: the poll runs the engines (the CQ comes back short
     * again and again, unarmed once the harness's arm fired). */
    uint64_t end = ndk_test_now_ms() + 60000;
    for (uintptr_t done = 0; done < NW;) {
        NDK_RESULT_EX r;
        if (cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1) == 0) {
            CHECK_MSG(ndk_test_now_ms() < end, "%u of %u Writes completed within 60 s", (unsigned)done, NW);
            continue;
        }
        CHECK(r.RequestContext == (void *)(0x100 + done));
        CHECK_STATUS(r.Status, STATUS_SUCCESS);
        done++;
    }
    uint64_t writes = dpt_tx_writes(&env) - w0;
    /* The last Write completes when its bytes are in the socket: let the reader take them all. */
    while (atomic_load(&rd.got) < (size_t)NW * WLEN) {
        CHECK_MSG(ndk_test_now_ms() < end, "the peer read %zu of %u bytes", atomic_load(&rd.got), NW * WLEN);
        usleep(1000);
    }
    atomic_store(&rd.stop, true);
    pthread_join(thr, NULL);
    CHECK(atomic_load(&rd.got) <= (size_t)NW * WLEN + HDR_AND_TRAILERS);
    printf("txpoll: %u Writes of 1 MiB in %llu socket writes (%.1f per MiB, at most %u allowed)\n", NW,
           (unsigned long long)writes, (double)writes / NW, MAX_WRITES_PER_MIB);
    CHECK(writes <= (uint64_t)NW * MAX_WRITES_PER_MIB);
    atomic_store(&env.s[0].failed, -ECONNRESET);     /* the harness tears down as the CM would */
    dpt_wait_lost(&env, 0, 5000);
    dpt_disconnect(&env);
    close(rd.fd);
    dpt_mr_free(&env, &ma);
    dpt_env_fini(&env);
    return 0;
}
