/* STags through the public API (issue 13 item 2; RFC 5040 §8, RFC 5042 §5): 100,000
 * create / register / close cycles beside one live region give tokens whose keys take at
 * least 200 values, whose indices follow no step a peer could extrapolate, and whose indices
 * stay inside a table sized by the live count (freed slots are reused before it grows). The
 * same holds for fast-register and bind rekeys, which the data-path tests cover. */
#include "iwtest.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TMO 5000
enum { CYCLES = 100000 };

static uint32_t idx[CYCLES];

/* iwtest's waits sleep a millisecond per look; 100,000 cycles want a spin. */
static void spin_until(atomic_int *flag, const char *what)
{
    uint64_t end = ndk_test_now_ms() + TMO;
    while (atomic_load(flag) < 1) {
        CHECK_MSG(ndk_test_now_ms() < end, "%s did not complete in %d ms", what, TMO);
        sched_yield();
    }
}

static NDK_MR *reg(NDK_PD *pd, MDL *mdl)
{
    NDK_MR *mr;
    struct iwt_req rq;
    CHECK_STATUS(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr), STATUS_SUCCESS);
    iwt_req_init(&rq);
    NTSTATUS st = mr->Dispatch->NdkRegisterMr(mr, mdl, 4096, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, iwt_req_cb, &rq);
    if (st == STATUS_PENDING) {
        spin_until(&rq.done, "NdkRegisterMr");
        st = atomic_load(&rq.status);
    }
    CHECK_STATUS(st, STATUS_SUCCESS);
    return mr;
}

static void close_mr(NDK_MR *mr)
{
    struct iwt_close c;
    NTSTATUS st = iwt_close_start(mr, &c);
    if (st == STATUS_PENDING)
        spin_until(&c.done, "NdkCloseMr");
    else
        CHECK_STATUS(st, STATUS_SUCCESS);
}

static void body(int family)
{
    struct iwt t;
    NDK_PD *pd;
    static uint8_t region[4096] __attribute__((aligned(4096)));
    bool key_seen[256] = { false };
    uint32_t max_idx = 0, top = 0;
    static uint32_t step_count[1u << 16];

    iwt_open(&t, family);
    CHECK_STATUS(t.ad->Dispatch->NdkCreatePd(t.ad, NULL, NULL, &pd), STATUS_SUCCESS);
    MDL *mdl = IoAllocateMdl(region, sizeof region, FALSE, FALSE, NULL);
    NDK_MR *keep = reg(pd, mdl);
    UINT32 keep_tok = keep->Dispatch->NdkGetRemoteTokenFromMr(keep);
    uint64_t t0 = ndk_test_now_ms();
    for (int i = 0; i < CYCLES; i++) {
        NDK_MR *mr = reg(pd, mdl);
        UINT32 tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
        CHECK(tok != keep_tok);
        idx[i] = tok >> 8;
        key_seen[tok & 0xff] = true;
        if (idx[i] > max_idx)
            max_idx = idx[i];
        close_mr(mr);
    }
    memset(step_count, 0, sizeof step_count);
    for (int i = 1; i < CYCLES; i++) {
        uint32_t s = (idx[i] - idx[i - 1]) & 0xffff;
        if (++step_count[s] > top)
            top = step_count[s];
    }
    int keys = 0;
    for (int k = 0; k < 256; k++)
        keys += key_seen[k];
    double share = (double)top / (CYCLES - 1);
    printf("%s: %d cycles in %llu ms, 1 region alive: %d distinct keys, highest index %u, top index step "
           "share %.4f\n", iwt_family_name(family), CYCLES, (unsigned long long)(ndk_test_now_ms() - t0), keys,
           max_idx, share);
    CHECK_MSG(keys >= 200, "only %d distinct STag keys in %d registrations", keys, CYCLES);
    /* Two live regions at most: the table keeps its first size (stag.h IW_STAG_MIN_SLOTS = 64). */
    CHECK_MSG(max_idx < 64, "STag index %u: the table grew with churn", max_idx);
    CHECK_MSG(share < 0.05, "%.3f of consecutive tokens share one index step: predictable", share);
    iwt_close_obj(keep, TMO);
    NdkMdlChainFree(mdl);
    iwt_close_obj(pd, TMO);
    iwt_close(&t);
}

int main(void)
{
    /* One family is enough: the table is the adapter's, not the address family's. */
    body(AF_INET);
    printf("PASS\n");
    return 0;
}
