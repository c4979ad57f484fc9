/* dpe2e.c: see dpe2e.h. */
#include "dpe2e.h"

#include <stdlib.h>
#include <string.h>

void dpe_fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

bool dpe_same(const uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        if (p[i] != (uint8_t)x) {
            fprintf(stderr, "byte %zu of %zu differs\n", i, n);
            return false;
        }
    }
    return true;
}

static void cq_nop(void *ctx, NTSTATUS st)
{
    (void)ctx;
    (void)st;
}

void dpe_side_open(struct dpe_side *s, int family, size_t len, NDK_FN_CQ_NOTIFICATION_CALLBACK cq_cb, void *ctx)
{
    struct iwt_req rq;
    NTSTATUS st;

    memset(s, 0, sizeof(*s));
    iwt_open(&s->t, family);
    CHECK_STATUS(s->t.ad->Dispatch->NdkCreateCq(s->t.ad, 1024, cq_cb ? cq_cb : cq_nop, ctx, NULL, NULL, NULL, &s->cq),
                 STATUS_SUCCESS);
    CHECK_STATUS(s->t.ad->Dispatch->NdkCreatePd(s->t.ad, NULL, NULL, &s->pd), STATUS_SUCCESS);
    CHECK_STATUS(s->pd->Dispatch->NdkCreateQp(s->pd, s->cq, s->cq, s, 256, 256, DPE_MAXSGE, DPE_MAXSGE, 128, NULL, NULL,
                                              &s->qp),
                 STATUS_SUCCESS);
    s->len = len;
    CHECK(posix_memalign((void **)&s->buf, 4096, len) == 0);
    memset(s->buf, 0, len);
    CHECK_STATUS(s->pd->Dispatch->NdkCreateMr(s->pd, FALSE, NULL, NULL, &s->mr), STATUS_SUCCESS);
    s->mdl = IoAllocateMdl(s->buf, (ULONG)len, FALSE, FALSE, NULL);
    iwt_req_init(&rq);
    st = s->mr->Dispatch->NdkRegisterMr(s->mr, s->mdl, len,
                                        NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                                            NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
                                        iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, DPE_TMO), STATUS_SUCCESS);
    s->token = s->mr->Dispatch->NdkGetLocalTokenFromMr(s->mr);
}

void dpe_side_close(struct dpe_side *s)
{
    struct iwt_req rq;
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, s->mr->Dispatch->NdkDeregisterMr(s->mr, iwt_req_cb, &rq), DPE_TMO), STATUS_SUCCESS);
    iwt_close_obj(s->mr, DPE_TMO);
    iwt_close_obj(s->qp, DPE_TMO);
    iwt_close_obj(s->pd, DPE_TMO);
    iwt_close_obj(s->cq, DPE_TMO);
    IoFreeMdl(s->mdl);
    free(s->buf);
    iwt_close(&s->t);
}
