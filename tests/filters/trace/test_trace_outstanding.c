/* A consumer that forgets to poll: it connects two QPs through the trace filter with
 * trace.stall_ms=150, posts a Receive and a Send, and never polls; then it exits without
 * closing anything. The trace must carry exactly one stall report per QP (the stall lasts four
 * periods) naming the outstanding request, its connector's state and the CQ's arm state, and
 * ndktrace run on the trace must list the Send as outstanding with its QP and the objects as
 * never closed. */
#define _GNU_SOURCE
#include "filtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define STALL_MS 150

static char trace_path[512];

static int forgetful(void *arg)
{
    (void)arg;
    struct iwt t;
    struct iwt_qp a, b;
    struct iwt_link k;
    struct iwt_req rq;
    static uint8_t buf[8192] __attribute__((aligned(4096)));
    iwt_open(&t, AF_INET);
    iwt_qp_create(&t, &a, 4);
    iwt_qp_create(&t, &b, 4);
    MDL *mdl = IoAllocateMdl(buf, sizeof buf, FALSE, FALSE, NULL);
    CHECK(mdl);
    NDK_MR *mr;
    CHECK_STATUS(b.pd->Dispatch->NdkCreateMr(b.pd, FALSE, NULL, NULL, &mr), STATUS_SUCCESS);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, mr->Dispatch->NdkRegisterMr(mr, mdl, sizeof buf, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                                               iwt_req_cb, &rq), 5000),
                 STATUS_SUCCESS);
    NDK_MR *amr;
    CHECK_STATUS(a.pd->Dispatch->NdkCreateMr(a.pd, FALSE, NULL, NULL, &amr), STATUS_SUCCESS);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, amr->Dispatch->NdkRegisterMr(amr, mdl, sizeof buf, 0, iwt_req_cb, &rq), 5000),
                 STATUS_SUCCESS);
    NDK_SGE r = { .VirtualAddress = buf, .Length = 4096, .MemoryRegionToken = mr->Dispatch->NdkGetLocalTokenFromMr(mr) };
    NDK_SGE s = { .VirtualAddress = buf + 4096, .Length = 100,
                  .MemoryRegionToken = amr->Dispatch->NdkGetLocalTokenFromMr(amr) };
    CHECK_STATUS(b.qp->Dispatch->NdkReceive(b.qp, (PVOID)0x7e5, &r, 1), STATUS_SUCCESS);
    iwt_link_open(&t, &k, a.qp, b.qp, 5000);
    CHECK_STATUS(a.qp->Dispatch->NdkSend(a.qp, (PVOID)0x5e4d, &s, 1, 0), STATUS_SUCCESS);
    /* ... and never polls. Four stall periods. */
    usleep(4 * STALL_MS * 1000);
    _exit(0);   /* nor closes anything */
}

static int count_lines(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "r");
    CHECK_MSG(f, "no trace at %s", path);
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, a) && (!b || strstr(line, b)))
            n++;
    fclose(f);
    return n;
}

int main(void)
{
    char dir[] = "/tmp/ndk-trace-XXXXXX";
    CHECK(mkdtemp(dir));
    snprintf(trace_path, sizeof trace_path, "%s/trace.log", dir);
    ft_env("trace");
    setenv("NDK_TRACE_PATH", trace_path, 1);
    setenv("NDK_TRACE_STALL_MS", "150", 1);
    pid_t pid = ndk_test_spawn(forgetful, NULL);
    ndk_test_wait_ok(pid, 20000, "the consumer that forgets to poll");

    /* One report per stalled QP, whatever the number of periods it lasted. */
    int stalls = count_lines(trace_path, " ev=stall ", NULL);
    CHECK_MSG(count_lines(trace_path, " ev=stall ", "obj=qp#1 ") == 1, "%d stall reports for qp#1",
              count_lines(trace_path, " ev=stall ", "obj=qp#1 "));
    CHECK_MSG(count_lines(trace_path, " ev=stall ", "obj=qp#2 ") == 1, "%d stall reports for qp#2",
              count_lines(trace_path, " ev=stall ", "obj=qp#2 "));
    CHECK_EQ(stalls, 2);
    /* qp#1 is A (made first): its Send, its connector connected, its CQ never armed. */
    CHECK(count_lines(trace_path, " ev=stall ", "outstanding=1 conn=connector#1 conn_state=connected rcq=cq#1 "
                                                 "rcq_arm=not-armed") == 1);
    CHECK(count_lines(trace_path, " ev=stall_wr ", "obj=qp#1 fn=NdkSend wr=") == 1);
    CHECK(count_lines(trace_path, " ev=stall_wr ", "obj=qp#2 fn=NdkReceive wr=") == 1);
    CHECK(count_lines(trace_path, " ev=stall_wr ", "ctx=0x5e4d age_ms=") == 1);

    /* ndktrace finds the forgotten requests and objects. */
    char cmd[1200], out[600];
    snprintf(out, sizeof out, "%s/summary", dir);
    snprintf(cmd, sizeof cmd, "%s/tools/ndktrace/ndktrace %s > %s", getenv("NDK_TEST_BINARY_DIR"), trace_path, out);
    CHECK_MSG(system(cmd) == 0, "%s failed", cmd);
    CHECK_MSG(count_lines(out, " qp#1 NdkSend wr=", "ctx=0x5e4d age ") == 1, "ndktrace does not list the Send");
    CHECK(count_lines(out, " qp#2 NdkReceive wr=", "ctx=0x7e5 age ") == 1);
    CHECK(count_lines(out, "  2 outstanding", NULL) == 1);
    CHECK(count_lines(out, "qp#1 (from pd#1), created", NULL) == 1);
    CHECK(count_lines(out, "  2 stalls", NULL) == 1);
    snprintf(cmd, sizeof cmd, "cat %s; rm -rf %s", out, dir);
    CHECK(system(cmd) == 0);
    printf("ok\n");
    return 0;
}
