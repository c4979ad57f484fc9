/* ndk_sync_mem.c - a memory registration as one blocking call (ndk_sync_mem.h). */
#include "ndk_sync_mem.h"

#include <stdlib.h>
#include <string.h>

#include "ndk_sync.h"

NTSTATUS ndk_sync_mem_register(NDK_PD *pd, void *buf, size_t len, ULONG flags, ndk_sync_mem *m)
{
    NTSTATUS st;
    memset(m, 0, sizeof *m);
    if (len == 0 || len > 0xFFFFFFFFu)
        return STATUS_INVALID_PARAMETER;
    if (!buf) {
        size_t page = 4096, alloc = (len + page - 1) / page * page;
        if (posix_memalign(&buf, page, alloc) != 0)
            return STATUS_INSUFFICIENT_RESOURCES;
        memset(buf, 0, alloc);
        m->owned = true;
    }
    m->buf = buf;
    m->len = len;
    m->mdl = IoAllocateMdl(buf, (ULONG)len, FALSE, FALSE, NULL);
    if (!m->mdl) {
        st = STATUS_INSUFFICIENT_RESOURCES;
        goto fail;
    }
    ndk_sync_op *op = ndk_sync_op_new();
    if (!op) {
        st = STATUS_INSUFFICIENT_RESOURCES;
        goto fail;
    }
    NDK_MR *mr = NULL;
    st = pd->Dispatch->NdkCreateMr(pd, FALSE, ndk_sync_op_create_done, op, &mr);
    st = ndk_sync_create_finish(op, st, (void **)&m->mr, mr);
    if (st != STATUS_SUCCESS)
        goto fail;
    op = ndk_sync_op_new();
    if (!op) {
        st = STATUS_INSUFFICIENT_RESOURCES;
        goto fail;
    }
    st = m->mr->Dispatch->NdkRegisterMr(m->mr, m->mdl, len, flags, ndk_sync_op_request_done, op);
    st = ndk_sync_op_finish(op, st, NDK_SYNC_OP_TIMEOUT_MS, NULL);
    if (st != STATUS_SUCCESS)
        goto fail;
    m->ltoken = m->mr->Dispatch->NdkGetLocalTokenFromMr(m->mr);
    m->rtoken = m->mr->Dispatch->NdkGetRemoteTokenFromMr(m->mr);
    return STATUS_SUCCESS;
fail:
    if (m->mr)
        ndk_sync_close(&m->mr->Header, NDK_SYNC_OP_TIMEOUT_MS);
    if (m->mdl)
        IoFreeMdl(m->mdl);
    if (m->owned)
        free(m->buf);
    memset(m, 0, sizeof *m);
    return st;
}

void ndk_sync_mem_release(ndk_sync_mem *m)
{
    if (m->mr) {
        /* Without memory for the op, closing the MR is the deregistration. */
        ndk_sync_op *op = ndk_sync_op_new();
        if (op) {
            NTSTATUS st = m->mr->Dispatch->NdkDeregisterMr(m->mr, ndk_sync_op_request_done, op);
            ndk_sync_op_finish(op, st, NDK_SYNC_OP_TIMEOUT_MS, NULL);
        }
        ndk_sync_close(&m->mr->Header, NDK_SYNC_OP_TIMEOUT_MS);
    }
    if (m->mdl)
        IoFreeMdl(m->mdl);
    if (m->owned)
        free(m->buf);
    memset(m, 0, sizeof *m);
}

