/* ndk_prov_lam.c - see ndk_prov_lam.h. */
#include "ndk_prov_lam.h"

#include <stddef.h>
#include <stdint.h>

NTSTATUS ndk_prov_lam_fill(void *adapter, MDL *mdl, SIZE_T len, NDK_LOGICAL_ADDRESS_MAPPING *lam,
                           ULONG *lam_size, ULONG *fbo)
{
    uintptr_t va, first;
    uint64_t npages, need;

    if (!mdl || !len || !lam_size || !fbo)
        return STATUS_INVALID_PARAMETER;
    if (len > NdkMdlChainByteCount(mdl) || !NdkMdlChainIsContiguous(mdl, len))
        return STATUS_INVALID_PARAMETER;
    va = (uintptr_t)MmGetMdlVirtualAddress(mdl);
    first = va & ~(uintptr_t)(PAGE_SIZE - 1);
    npages = ((va - first) + len + PAGE_SIZE - 1) / PAGE_SIZE;
    need = offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + npages * sizeof(NDK_LOGICAL_ADDRESS);
    if (need > MAXULONG || npages > MAXULONG)
        return STATUS_INVALID_PARAMETER;
    if (!lam || *lam_size < need) {
        *lam_size = (ULONG)need;
        return STATUS_BUFFER_TOO_SMALL;
    }
    lam->AdapterContext = adapter;
    lam->AdapterPageCount = (ULONG)npages;
    for (uint64_t i = 0; i < npages; i++)
        lam->AdapterPageArray[i].QuadPart = (LONGLONG)(first + i * PAGE_SIZE);
    *lam_size = (ULONG)need;
    *fbo = (ULONG)(va - first);
    return STATUS_SUCCESS;
}
