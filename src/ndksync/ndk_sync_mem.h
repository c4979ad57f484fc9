/*
 * ndk_sync_mem.h - one memory registration as one blocking call: buffer (optionally
 * allocated), MDL, MR, registration and its tokens; and its release in the reverse order.
 *
 * Context: register and release block (ndk_sync.h); nothing may be in flight on the memory
 * when it is released.
 */
#ifndef NDK_SYNC_MEM_H
#define NDK_SYNC_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ndkpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ndk_sync_mem {
    uint8_t *buf;
    size_t   len;
    MDL     *mdl;
    NDK_MR  *mr;
    UINT32   ltoken;    /* for SGEs */
    UINT32   rtoken;    /* for the peer */
    bool     owned;     /* buf was allocated by ndk_sync_mem_register */
} ndk_sync_mem;

/* Registers len bytes (page-aligned zeroed allocation when buf is NULL) with NDK_MR_FLAG_*. */
NTSTATUS ndk_sync_mem_register(NDK_PD *pd, void *buf, size_t len, ULONG flags, ndk_sync_mem *m);
/* Deregisters, closes the MR and frees what register allocated; m is zeroed. Safe on a zeroed m. */
void ndk_sync_mem_release(ndk_sync_mem *m);
/* The SGE for len bytes at offset off of the registration. */
static inline NDK_SGE ndk_sync_mem_sge(const ndk_sync_mem *m, size_t off, ULONG len)
{
    NDK_SGE s;
    s.VirtualAddress = m->buf + off;
    s.Length = len;
    s.MemoryRegionToken = m->ltoken;
    return s;
}

#ifdef __cplusplus
}
#endif

#endif /* NDK_SYNC_MEM_H */
