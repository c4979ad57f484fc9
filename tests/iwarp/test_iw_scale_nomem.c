/* Ring slots allocated at post time (issue 14 item 3): a post that finds no memory for its slot
 * fails with STATUS_INSUFFICIENT_RESOURCES and leaves the queue as it was; a post past the depth
 * fails the same way; posts into a chunk that exists need no memory. The test's calloc fails on
 * request for the posting thread only (the provider's progress thread is not disturbed), so the
 * outcome is deterministic. Receives, because they may be posted before a connection exists
 * (§8 item 28). Not built with sanitizers: their allocators cannot be interposed like this. */
#include "iwtest.h"

#include <stdlib.h>
#include <string.h>

#define DEPTH 8

extern void *__libc_calloc(size_t n, size_t size);
static __thread bool fail_calloc;
static __thread unsigned calloc_calls;

/* Interposes the provider's calloc (the executable comes first in symbol lookup). */
void *calloc(size_t n, size_t size)
{
    if (fail_calloc) {
        calloc_calls++;
        return NULL;
    }
    return __libc_calloc(n, size);
}

static NTSTATUS post_recv(NDK_QP *qp, uint8_t *buf, UINT32 token, uintptr_t ctx)
{
    NDK_SGE sge = { .VirtualAddress = buf, .Length = 8, .MemoryRegionToken = token };
    return qp->Dispatch->NdkReceive(qp, (void *)ctx, &sge, 1);
}

static void body(int family)
{
    struct iwt t;
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_QP *qp;
    uint8_t buf[8];

    iwt_open(&t, family);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateCq(t.ad, 64, NULL, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    CHECK_STATUS(t.ad->Dispatch->NdkCreatePd(t.ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, DEPTH, DEPTH, 1, 1, 0, NULL, NULL, &qp), STATUS_SUCCESS);
    /* The privileged token needs no MR: the receive is only queued, never filled. */
    UINT32 tok = 0;
    pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &tok);

    fail_calloc = true;
    CHECK_STATUS(post_recv(qp, buf, tok, 1), STATUS_INSUFFICIENT_RESOURCES);   /* no slot memory */
    fail_calloc = false;
    CHECK(calloc_calls > 0);                                                    /* it was asked */
    for (uintptr_t i = 0; i < DEPTH; i++) {
        fail_calloc = i % 4 != 0;            /* only the first post into each chunk allocates */
        CHECK_MSG(post_recv(qp, buf, tok, i + 1) == STATUS_SUCCESS, "receive %u", (unsigned)i);
        fail_calloc = false;
    }
    CHECK_STATUS(post_recv(qp, buf, tok, 99), STATUS_INSUFFICIENT_RESOURCES);  /* past the depth */
    /* Every queued receive is flushed, in order: none was lost or doubled. */
    qp->Dispatch->NdkFlush(qp);
    for (uintptr_t i = 0; i < DEPTH; i++) {
        NDK_RESULT_EX r;
        CHECK_MSG(iwt_cq_wait(cq, &r, 10000), "flushed receive %u", (unsigned)i);
        CHECK_STATUS(r.Status, STATUS_CANCELLED);
        CHECK_EQ((uintptr_t)r.RequestContext, i + 1);
    }
    NDK_RESULT_EX r;
    CHECK_EQ(cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1), 0);
    iwt_close_obj(qp, 10000);
    iwt_close_obj(pd, 10000);
    iwt_close_obj(cq, 10000);
    iwt_close(&t);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
