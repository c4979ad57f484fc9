/*
 * smbd_mr.c - buffers for SMB2 RDMA channel transfers (MS-SMBD 3.1.4.3-3.1.4.6): a pool of
 * fast-register MRs, registration through NdkBuildLAM + NdkFastRegister, and invalidation:
 * remote (the token a Send-with-Invalidate carried, which covers one region only) or local
 * (NdkInvalidate) for every other region before reuse (MS-SMB2 3.2.5.11/3.2.5.12).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "smbd_internal.h"
#include "smbd_wire.h"

int smbd_mr_pool_init(smbd_conn *c)
{
    c->frmr_pages = c->ad.info.FRMRPageCount;
    if (c->frmr_pages == 0 || c->p.mr_count == 0)
        return 0;                     /* no RDMA I/O: smbd_mr_register fails with -EOPNOTSUPP */
    if (c->frmr_pages > 256)
        c->frmr_pages = 256;          /* 1 MiB per region, as siw's page list */
    c->frmrs = calloc(c->p.mr_count, sizeof *c->frmrs);
    if (!c->frmrs)
        return smbd_fail(c, -ENOMEM, STATUS_INSUFFICIENT_RESOURCES, "out of memory");
    for (unsigned i = 0; i < c->p.mr_count; i++) {
        smbd_frmr *f = &c->frmrs[i];
        NDK_OBJECT_HEADER *obj = NULL;
        ndk_sync_op *op = ndk_sync_op_new();
        if (!op)
            return smbd_fail(c, -ENOMEM, STATUS_INSUFFICIENT_RESOURCES, "NdkCreateMr: out of memory");
        NDK_MR *mr = NULL;
        NTSTATUS st = c->pd->Dispatch->NdkCreateMr(c->pd, TRUE, ndk_sync_op_create_done, op, &mr);
        st = ndk_sync_op_finish(op, st, NDK_SYNC_OP_TIMEOUT_MS, &obj);
        if (st != STATUS_SUCCESS)
            return smbd_fail(c, -EIO, st, "NdkCreateMr: %s", ndk_rt_status_name(st));
        f->mr = obj ? (NDK_MR *)obj : mr;
        c->frmr_count++;
        op = ndk_sync_op_new();
        if (!op)
            return smbd_fail(c, -ENOMEM, STATUS_INSUFFICIENT_RESOURCES, "NdkInitializeFastRegisterMr: out of memory");
        st = f->mr->Dispatch->NdkInitializeFastRegisterMr(f->mr, c->frmr_pages, TRUE, ndk_sync_op_request_done, op);
        st = ndk_sync_op_finish(op, st, NDK_SYNC_OP_TIMEOUT_MS, NULL);
        if (st != STATUS_SUCCESS)
            return smbd_fail(c, -EIO, st, "NdkInitializeFastRegisterMr: %s", ndk_rt_status_name(st));
    }
    return 0;
}

static void smbd_frmr_unmap(smbd_conn *c, smbd_frmr *f)
{
    if (f->lam) {
        c->ad.adapter->Dispatch->NdkReleaseLAM(c->ad.adapter, f->lam);
        free(f->lam);
        f->lam = NULL;
    }
    if (f->mdl) {
        IoFreeMdl(f->mdl);
        f->mdl = NULL;
    }
}

void smbd_mr_pool_free(smbd_conn *c)
{
    for (unsigned i = 0; i < c->frmr_count; i++) {
        smbd_frmr *f = &c->frmrs[i];
        smbd_frmr_unmap(c, f);
        if (f->mr)
            ndk_sync_close(&f->mr->Header, 1500);
    }
    free(c->frmrs);
    c->frmrs = NULL;
    c->frmr_count = 0;
}

void smbd_mr_complete(smbd_conn *c, const NDK_RESULT_EX *r)
{
    smbd_frmr *f = (smbd_frmr *)((uint8_t *)r->RequestContext - offsetof(smbd_frmr, kind));
    if (f->pending > 0)
        f->pending--;
    if (r->Status != STATUS_SUCCESS) {
        f->broken = true;
        if (f->wr_status == STATUS_SUCCESS)
            f->wr_status = r->Status;
        if (c->state != SMBD_ST_CLOSED)
            smbd_fail(c, -EIO, r->Status, "%s failed: %s",
                      f->kind == SMBD_WR_REG ? "NdkFastRegister" : "NdkInvalidate", ndk_rt_status_name(r->Status));
    }
}

static smbd_frmr *smbd_frmr_get(smbd_conn *c)
{
    for (unsigned i = 0; i < c->frmr_count; i++)
        if (!c->frmrs[i].in_use && !c->frmrs[i].broken) {
            c->frmrs[i].in_use = true;
            return &c->frmrs[i];
        }
    return NULL;
}

/* Waits until no request of mr's regions is in flight; bounded by the connection timeout. */
static int smbd_mr_wait(smbd_conn *c, smbd_mr *mr)
{
    uint64_t deadline = ndk_sync_time_now_ns() + (uint64_t)c->p.timeout_ms * 1000000u;
    for (;;) {
        bool busy = false;
        for (unsigned i = 0; i < mr->count; i++)
            busy |= mr->frmr[i]->pending > 0;
        if (!busy)
            return c->error;
        if (c->error)
            return c->error;
        uint64_t now = ndk_sync_time_now_ns();
        if (now >= deadline)
            return smbd_fail(c, -ETIMEDOUT, STATUS_IO_TIMEOUT, "memory registration did not complete");
        int rc = smbd_progress(c, (int)((deadline - now) / 1000000u) + 1);
        if (rc && rc != -ETIMEDOUT)
            return rc;
    }
}

static void smbd_mr_put(smbd_conn *c, smbd_mr *mr)
{
    for (unsigned i = 0; i < mr->count; i++) {
        smbd_frmr *f = mr->frmr[i];
        /* A region whose requests may still be in flight keeps its LAM until teardown. */
        if (f->pending == 0)
            smbd_frmr_unmap(c, f);
        else
            f->broken = true;
        f->in_use = false;
        f->token = 0;
    }
    free(mr);
}

int smbd_mr_register(smbd_conn *c, void *buf, size_t len, bool peer_writes, smbd_mr **out,
                     smbd_buffer_desc *descs, unsigned *ndesc)
{
    if (!c || !buf || !len || !out || !descs || !ndesc)
        return -EINVAL;
    *out = NULL;
    *ndesc = 0;
    if (c->error)
        return c->error;
    if (c->state != SMBD_ST_CONNECTED)
        return -ENOTCONN;
    if (!c->frmr_count)
        return -EOPNOTSUPP;
    if (len > c->neg.max_read_write_size || len > 0xFFFFFFFFu)
        return -EMSGSIZE;
    smbd_mr *mr = calloc(1, sizeof *mr);
    if (!mr)
        return -ENOMEM;
    size_t span = (size_t)c->frmr_pages * NDK_MDL_PAGE_SIZE;
    uint8_t *p = buf;
    size_t left = len;
    ULONG flags = peer_writes ? NDK_OP_FLAG_ALLOW_REMOTE_WRITE : NDK_OP_FLAG_ALLOW_REMOTE_READ;
    int rc = 0;
    while (left) {
        size_t fbo = (uintptr_t)p % NDK_MDL_PAGE_SIZE;
        size_t n = span - fbo < left ? span - fbo : left;
        if (mr->count == SMBD_MAX_DESCS) {
            rc = -EMSGSIZE;
            break;
        }
        smbd_frmr *f = smbd_frmr_get(c);
        if (!f) {
            rc = -ENOBUFS;
            break;
        }
        mr->frmr[mr->count++] = f;
        f->va = p;
        f->length = (uint32_t)n;
        f->wr_status = STATUS_SUCCESS;
        f->mdl = IoAllocateMdl(p, (ULONG)n, FALSE, FALSE, NULL);
        ULONG lamsz = 0, lfbo = 0;
        NTSTATUS st = c->ad.adapter->Dispatch->NdkBuildLAM(c->ad.adapter, f->mdl, n, NULL, NULL, NULL, &lamsz, &lfbo);
        if (st == STATUS_BUFFER_TOO_SMALL && (f->lam = calloc(1, lamsz)) != NULL) {
            ndk_sync_op *op = ndk_sync_op_new();
            if (!op) {
                st = STATUS_INSUFFICIENT_RESOURCES;
            } else {
                st = c->ad.adapter->Dispatch->NdkBuildLAM(c->ad.adapter, f->mdl, n, ndk_sync_op_request_done, op,
                                                          f->lam, &lamsz, &lfbo);
                st = ndk_sync_op_finish(op, st, NDK_SYNC_OP_TIMEOUT_MS, NULL);
            }
        }
        if (st != STATUS_SUCCESS) {
            free(f->lam);
            f->lam = NULL;
            rc = smbd_fail(c, -EIO, st, "NdkBuildLAM: %s", ndk_rt_status_name(st));
            break;
        }
        f->kind = SMBD_WR_REG;
        f->pending++;
        st = c->qp->Dispatch->NdkFastRegister(c->qp, &f->kind, f->mr, f->lam->AdapterPageCount,
                                              f->lam->AdapterPageArray, lfbo, n, p, flags);
        if (st != STATUS_SUCCESS) {
            f->pending--;
            rc = smbd_fail(c, -EIO, st, "NdkFastRegister: %s", ndk_rt_status_name(st));
            break;
        }
        f->token = f->mr->Dispatch->NdkGetRemoteTokenFromMr(f->mr);
        p += n;
        left -= n;
    }
    if (!rc)
        rc = smbd_mr_wait(c, mr);
    if (rc) {
        smbd_mr_release(c, mr, 0);
        return rc;
    }
    for (unsigned i = 0; i < mr->count; i++) {
        smbd_frmr *f = mr->frmr[i];
        descs[i].offset = (uint64_t)(uintptr_t)f->va;
        descs[i].token = f->token;
        descs[i].length = f->length;
    }
    *ndesc = mr->count;
    *out = mr;
    return 0;
}

int smbd_mr_release(smbd_conn *c, smbd_mr *mr, uint32_t invalidated)
{
    if (!c || !mr)
        return -EINVAL;
    bool matched = invalidated == 0;
    int rc = 0;
    if (!c->error) {
        for (unsigned i = 0; i < mr->count; i++) {
            smbd_frmr *f = mr->frmr[i];
            if (f->token == 0)
                continue;             /* never registered */
            if (!matched && f->token == invalidated) {
                matched = true;
                continue;
            }
            f->kind = SMBD_WR_INV;
            f->pending++;
            NTSTATUS st = c->qp->Dispatch->NdkInvalidate(c->qp, &f->kind, &f->mr->Header, 0);
            if (st != STATUS_SUCCESS) {
                f->pending--;
                rc = smbd_fail(c, -EIO, st, "NdkInvalidate: %s", ndk_rt_status_name(st));
                break;
            }
            c->st.local_invalidations++;
        }
        if (!rc)
            rc = smbd_mr_wait(c, mr);
        if (!rc && !matched)
            rc = smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE,
                           "peer invalidated token 0x%08x, which this buffer did not expose", invalidated);
    } else {
        /* 3.1.4.4: after loss the regions are only dropped (closed at teardown). */
        for (unsigned i = 0; i < mr->count; i++)
            mr->frmr[i]->broken = true;
        rc = c->error;
    }
    smbd_mr_put(c, mr);
    return rc;
}
