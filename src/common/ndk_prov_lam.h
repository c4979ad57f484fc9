/* ndk_prov_lam: NdkBuildLAM's part both providers share (§2.3, §8.18). User space has no bus
 * addresses: a page's adapter logical address is its process virtual address, so building a LAM
 * is checking the MDL chain, sizing the mapping and listing the pages. */
#ifndef NDK_PROV_LAM_H
#define NDK_PROV_LAM_H

#include <ndkpi.h>

/* Fills lam (AdapterContext = adapter) for the first len bytes of mdl, and *lam_size and *fbo.
 * STATUS_SUCCESS; STATUS_BUFFER_TOO_SMALL with *lam_size the size needed (lam NULL or too small);
 * STATUS_INVALID_PARAMETER. Any thread, no lock; always inline (§8.18 allows a NULL completion). */
NTSTATUS ndk_prov_lam_fill(void *adapter, MDL *mdl, SIZE_T len, NDK_LOGICAL_ADDRESS_MAPPING *lam,
                           ULONG *lam_size, ULONG *fbo);

#endif
