/* ndk_sync without memory for its request context (src/ndksync): a request that cannot have a
 * waiter is not issued and answers STATUS_INSUFFICIENT_RESOURCES, teardown still closes every
 * object (ndk_sync_close waits on its own frame), and nothing exits the process, which the
 * earlier ndk_sync_op_new did. The test's calloc fails, on this thread only, every request of
 * the op's size, learnt from one ndk_sync_op_new; the provider's progress thread is untouched.
 * Not built with sanitizers: their allocators cannot be interposed like this. */
#include "iwtest.h"

#include <stdlib.h>
#include <string.h>

#include "ndk_sync.h"
#include "ndk_sync_mem.h"

extern void *__libc_calloc(size_t n, size_t size);
static __thread bool learn;
static __thread size_t op_size;
static __thread bool fail_op;
static __thread unsigned failed;

/* Interposes calloc for the whole process (the executable comes first in symbol lookup). */
void *calloc(size_t n, size_t size)
{
    if (learn)
        op_size = n * size;
    else if (fail_op && n * size == op_size) {
        failed++;
        return NULL;
    }
    return __libc_calloc(n, size);
}

#define WITHOUT_OP(expr, want)                                                                     \
    do {                                                                                           \
        unsigned before_ = failed;                                                                 \
        fail_op = true;                                                                            \
        NTSTATUS st_ = (expr);                                                                     \
        fail_op = false;                                                                           \
        CHECK_MSG(failed > before_, "%s asked for no op", #expr);                                  \
        CHECK_STATUS(st_, want);                                                                   \
    } while (0)

static void body(int family)
{
    struct iwt t;
    NDK_PD *pd = NULL;
    NDK_CONNECTOR *conn = NULL;
    NDK_QP *qp = NULL;
    NDK_CQ *cq;
    ndk_sync_mem m;

    iwt_open(&t, family);
    WITHOUT_OP(ndk_sync_create_pd(t.ad, &pd), STATUS_INSUFFICIENT_RESOURCES);
    CHECK(pd == NULL);
    CHECK_STATUS(ndk_sync_create_pd(t.ad, &pd), STATUS_SUCCESS);
    WITHOUT_OP(ndk_sync_create_connector(t.ad, &conn), STATUS_INSUFFICIENT_RESOURCES);
    CHECK(conn == NULL);

    CHECK_STATUS(t.ad->Dispatch->NdkCreateCq(t.ad, 16, NULL, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    WITHOUT_OP(ndk_sync_create_qp(pd, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), STATUS_INSUFFICIENT_RESOURCES);
    CHECK(qp == NULL);

    memset(&m, 0, sizeof m);
    WITHOUT_OP(ndk_sync_mem_register(pd, NULL, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &m),
               STATUS_INSUFFICIENT_RESOURCES);
    CHECK_STATUS(ndk_sync_mem_register(pd, NULL, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &m), STATUS_SUCCESS);
    /* Release without an op: the close is the deregistration, and it completes. */
    unsigned before = failed;
    fail_op = true;
    ndk_sync_mem_release(&m);
    fail_op = false;
    CHECK(failed > before);

    /* Closes without an op still complete: ndk_sync_close answers only after the close
     * completion ran (or the close finished inline). */
    WITHOUT_OP(ndk_sync_close(&cq->Header, 10000), STATUS_SUCCESS);
    WITHOUT_OP(ndk_sync_close(&pd->Header, 10000), STATUS_SUCCESS);
    iwt_close(&t);
}

int main(void)
{
    learn = true;
    ndk_sync_op *op = ndk_sync_op_new();
    learn = false;
    CHECK(op != NULL && op_size > 0);
    CHECK_STATUS(ndk_sync_op_finish(op, STATUS_SUCCESS, 0, NULL), STATUS_SUCCESS);
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
