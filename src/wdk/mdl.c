/*
 * mdl.c - memory descriptor lists over process memory ("IoAllocateMdl function (wdm.h)",
 * "MmBuildMdlForNonPagedPool function (wdm.h)", "MmProbeAndLockPages function (wdm.h)").
 * Physical is virtual in the kit: a page frame number is the virtual address shifted by
 * PAGE_SHIFT and MmGetPhysicalAddress returns the virtual address. Locking only records the
 * state (process memory is resident enough for RDMA through the OpenNDK providers, which
 * register it themselves); probing checks that every page is mapped and stops the process the
 * way the exception of an invalid probe would. MDLs from IoAllocateMdl are tracked and reported
 * at unload; freeing one whose pages are still locked, locking one twice, unlocking an unlocked
 * one or mapping an unlocked one is reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "wdk_internal.h"

#undef IoAllocateMdl

static void fill_pfns(PMDL m)
{
    PVOID va = MmGetMdlVirtualAddress(m);
    SIZE_T pages = ADDRESS_AND_SIZE_TO_SPAN_PAGES(va, m->ByteCount);
    PPFN_NUMBER pfn = MmGetMdlPfnArray(m);
    PFN_NUMBER first = (PFN_NUMBER)((uintptr_t)m->StartVa >> PAGE_SHIFT);
    for (SIZE_T i = 0; i < pages; i++)
        pfn[i] = first + i;
}

PMDL wdk_IoAllocateMdl_at(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota,
                          struct _IRP *Irp, const char *site)
{
    if (Length > 0xFFFFFFFFu - PAGE_SIZE)
        return NULL;
    SIZE_T pages = ADDRESS_AND_SIZE_TO_SPAN_PAGES(VirtualAddress, Length);
    SIZE_T size = sizeof(MDL) + pages * sizeof(PFN_NUMBER);
    PMDL m = wdk_mem_alloc(size, 1, 0, WDK_MEM_MDL, "IoAllocateMdl", site);
    if (!m)
        return NULL;
    MmInitializeMdl(m, VirtualAddress, Length);
    m->MdlFlags = MDL_ALLOCATED_FIXED_SIZE;
    if (Irp) {
        if (!SecondaryBuffer) {
            Irp->MdlAddress = m;
        } else {
            PMDL t = Irp->MdlAddress;
            if (!t) {
                Irp->MdlAddress = m;
            } else {
                while (t->Next)
                    t = t->Next;
                t->Next = m;
            }
        }
    }
    return m;
}

PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota, struct _IRP *Irp)
{
    return wdk_IoAllocateMdl_at(VirtualAddress, Length, SecondaryBuffer, ChargeQuota, Irp, WDK_CALLER);
}

VOID IoFreeMdl(PMDL Mdl)
{
    const char *site = WDK_CALLER;
    if (!Mdl) {
        wdk_verify_report("MDL_FREE_INVALID", site, "IoFreeMdl(NULL)");
        return;
    }
    if (Mdl->MdlFlags & MDL_PAGES_LOCKED)
        wdk_verify_report("MDL_FREED_LOCKED", site, "IoFreeMdl of an MDL whose pages are still locked");
    if (wdk_mem_free(Mdl, WDK_MEM_MDL, NULL))
        wdk_verify_report("MDL_FREE_INVALID", site, "IoFreeMdl of %p, not an MDL from IoAllocateMdl (or freed twice)",
                          (void *)Mdl);
}

VOID MmBuildMdlForNonPagedPool(PMDL MemoryDescriptorList)
{
    fill_pfns(MemoryDescriptorList);
    MemoryDescriptorList->MdlFlags |= MDL_SOURCE_IS_NONPAGED_POOL;
    MemoryDescriptorList->MappedSystemVa = MmGetMdlVirtualAddress(MemoryDescriptorList);
}

static int pages_mapped(const void *va, SIZE_T len)
{
    uintptr_t lo = (uintptr_t)va & ~(uintptr_t)(PAGE_SIZE - 1);
    uintptr_t hi = ((uintptr_t)va + len + PAGE_SIZE - 1) & ~(uintptr_t)(PAGE_SIZE - 1);
    unsigned char vec[64];
    for (uintptr_t p = lo; p < hi; p += sizeof vec * PAGE_SIZE) {
        size_t n = hi - p < sizeof vec * PAGE_SIZE ? hi - p : sizeof vec * PAGE_SIZE;
        if (mincore((void *)p, n, vec) && errno == ENOMEM)
            return 0;
    }
    return 1;
}

VOID MmProbeAndLockPages(PMDL MemoryDescriptorList, KPROCESSOR_MODE AccessMode, LOCK_OPERATION Operation)
{
    PMDL m = MemoryDescriptorList;
    const char *site = WDK_CALLER;
    if (m->MdlFlags & MDL_PAGES_LOCKED) {
        wdk_verify_report("MDL_ALREADY_LOCKED", site, "MmProbeAndLockPages of an MDL that is already locked");
        return;
    }
    if (m->MdlFlags & MDL_SOURCE_IS_NONPAGED_POOL)
        wdk_verify_report("MDL_PROBE_NONPAGED", site,
                          "MmProbeAndLockPages of an MDL built with MmBuildMdlForNonPagedPool");
    if (!pages_mapped(MmGetMdlVirtualAddress(m), m->ByteCount)) {
        wdk_verify_report("MDL_PROBE_FAILED", site, "MmProbeAndLockPages of unmapped memory at %p",
                          MmGetMdlVirtualAddress(m));
        ExRaiseStatus(STATUS_ACCESS_VIOLATION);
    }
    fill_pfns(m);
    m->MdlFlags |= MDL_PAGES_LOCKED;
    if (Operation != IoReadAccess)
        m->MdlFlags |= MDL_WRITE_OPERATION;
}

VOID MmUnlockPages(PMDL MemoryDescriptorList)
{
    PMDL m = MemoryDescriptorList;
    if (!(m->MdlFlags & MDL_PAGES_LOCKED)) {
        wdk_verify_report("MDL_NOT_LOCKED", WDK_CALLER, "MmUnlockPages of an MDL that is not locked");
        return;
    }
    m->MdlFlags &= (CSHORT) ~(MDL_PAGES_LOCKED | MDL_MAPPED_TO_SYSTEM_VA | MDL_WRITE_OPERATION);
}

static PVOID map_mdl(PMDL m, const char *site)
{
    if (m->MdlFlags & (MDL_MAPPED_TO_SYSTEM_VA | MDL_SOURCE_IS_NONPAGED_POOL))
        return m->MappedSystemVa;
    if (!(m->MdlFlags & (MDL_PAGES_LOCKED | MDL_PARTIAL)))
        wdk_verify_report("MDL_MAP_UNLOCKED", site, "mapping an MDL whose pages are neither locked nor built");
    m->MappedSystemVa = MmGetMdlVirtualAddress(m);
    m->MdlFlags |= MDL_MAPPED_TO_SYSTEM_VA;
    return m->MappedSystemVa;
}

PVOID MmGetSystemAddressForMdlSafe(PMDL Mdl, ULONG Priority)
{
    return Mdl ? map_mdl(Mdl, WDK_CALLER) : NULL;
}

PVOID MmMapLockedPagesSpecifyCache(PMDL MemoryDescriptorList, KPROCESSOR_MODE AccessMode,
                                   MEMORY_CACHING_TYPE CacheType, PVOID RequestedAddress, ULONG BugCheckOnFailure,
                                   ULONG Priority)
{
    if (AccessMode != KernelMode) {
        wdk_unsupported("MmMapLockedPagesSpecifyCache(UserMode)",
                        "there is no separate user address space; use the system address "
                        "(MmGetSystemAddressForMdlSafe)");
        return NULL;
    }
    return map_mdl(MemoryDescriptorList, WDK_CALLER);
}

PVOID MmMapLockedPages(PMDL MemoryDescriptorList, KPROCESSOR_MODE AccessMode)
{
    return MmMapLockedPagesSpecifyCache(MemoryDescriptorList, AccessMode, MmCached, NULL, TRUE, NormalPagePriority);
}

VOID MmUnmapLockedPages(PVOID BaseAddress, PMDL MemoryDescriptorList)
{
    if (MemoryDescriptorList)
        MemoryDescriptorList->MdlFlags &= (CSHORT)~MDL_MAPPED_TO_SYSTEM_VA;
}

SIZE_T MmSizeOfMdl(PVOID Base, SIZE_T Length)
{
    return sizeof(MDL) + ADDRESS_AND_SIZE_TO_SPAN_PAGES(Base, Length) * sizeof(PFN_NUMBER);
}

/* Deprecated: an MDL in pool (tag 'Mdl '), freed with ExFreePool. */
PMDL MmCreateMdl(PMDL MemoryDescriptorList, PVOID Base, SIZE_T Length)
{
    PMDL m = MemoryDescriptorList;
    if (!m)
        m = wdk_pool_alloc_type_at(NonPagedPoolNx, MmSizeOfMdl(Base, Length), 0x206c644d, TRUE, "MmCreateMdl",
                                   WDK_CALLER);
    if (m)
        MmInitializeMdl(m, Base, Length);
    return m;
}

VOID IoBuildPartialMdl(PMDL SourceMdl, PMDL TargetMdl, PVOID VirtualAddress, ULONG Length)
{
    char *src = MmGetMdlVirtualAddress(SourceMdl);
    if ((char *)VirtualAddress < src || (char *)VirtualAddress + Length > src + SourceMdl->ByteCount)
        wdk_verify_report("MDL_PARTIAL_RANGE", WDK_CALLER, "IoBuildPartialMdl range outside the source MDL");
    if (!Length)
        Length = (ULONG)(src + SourceMdl->ByteCount - (char *)VirtualAddress);
    CSHORT keep = TargetMdl->MdlFlags & MDL_ALLOCATED_FIXED_SIZE;
    TargetMdl->Next = NULL;
    TargetMdl->StartVa = PAGE_ALIGN(VirtualAddress);
    TargetMdl->ByteOffset = BYTE_OFFSET(VirtualAddress);
    TargetMdl->ByteCount = Length;
    TargetMdl->MdlFlags = (CSHORT)(keep | MDL_PARTIAL);
    if (SourceMdl->MdlFlags & (MDL_MAPPED_TO_SYSTEM_VA | MDL_SOURCE_IS_NONPAGED_POOL)) {
        TargetMdl->MdlFlags |= MDL_PARTIAL_HAS_BEEN_MAPPED | MDL_MAPPED_TO_SYSTEM_VA;
        TargetMdl->MappedSystemVa = VirtualAddress;
    }
    fill_pfns(TargetMdl);
}

VOID KeFlushIoBuffers(PMDL Mdl, BOOLEAN ReadOperation, BOOLEAN DmaOperation)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

PHYSICAL_ADDRESS MmGetPhysicalAddress(PVOID BaseAddress)
{
    PHYSICAL_ADDRESS pa;
    pa.QuadPart = (LONGLONG)(uintptr_t)BaseAddress;
    return pa;
}

PVOID MmGetVirtualForPhysical(PHYSICAL_ADDRESS PhysicalAddress)
{
    return (PVOID)(uintptr_t)PhysicalAddress.QuadPart;
}

BOOLEAN MmIsAddressValid(PVOID VirtualAddress)
{
    return (BOOLEAN)pages_mapped(VirtualAddress, 1);
}

BOOLEAN MmIsNonPagedSystemAddressValid(PVOID VirtualAddress)
{
    return MmIsAddressValid(VirtualAddress);
}

/* Contiguous memory is page-aligned pool (tag 'Cont'): physical is virtual. */
PVOID MmAllocateContiguousMemorySpecifyCache(SIZE_T NumberOfBytes, PHYSICAL_ADDRESS LowestAcceptableAddress,
                                             PHYSICAL_ADDRESS HighestAcceptableAddress,
                                             PHYSICAL_ADDRESS BoundaryAddressMultiple, MEMORY_CACHING_TYPE CacheType)
{
    return wdk_pool_alloc_type_at(NonPagedPoolNx, NumberOfBytes < PAGE_SIZE ? PAGE_SIZE : NumberOfBytes, 0x746e6f43,
                                  FALSE, "MmAllocateContiguousMemory", WDK_CALLER);
}

PVOID MmAllocateContiguousMemory(SIZE_T NumberOfBytes, PHYSICAL_ADDRESS HighestAcceptableAddress)
{
    PHYSICAL_ADDRESS zero = { .QuadPart = 0 };
    return MmAllocateContiguousMemorySpecifyCache(NumberOfBytes, zero, HighestAcceptableAddress, zero, MmCached);
}

VOID MmFreeContiguousMemory(PVOID BaseAddress)
{
    wdk_pool_free_at(BaseAddress, 0x746e6f43, TRUE, WDK_CALLER);
}
