/*
 * ndis.c - the few NDIS functions an NDK consumer calls for memory and delays ("NdisMSleep
 * function (ndis.h)", "NdisAllocateMemoryWithTagPriority function (ndis.h)"); the rest of
 * ndis.h's consumer part is macros over the kernel API.
 */
#include "wdk_internal.h"
#include <ndis.h>

#undef KeDelayExecutionThread
#undef KeWaitForSingleObject

VOID NdisMSleep(ULONG MicrosecondsToSleep)
{
    LARGE_INTEGER t = { .QuadPart = -(LONGLONG)MicrosecondsToSleep * 10 };
    wdk_KeDelayExecutionThread_at(KernelMode, FALSE, &t, WDK_CALLER);
}

VOID NdisStallExecution(ULONG MicrosecondsToStall)
{
    KeStallExecutionProcessor(MicrosecondsToStall);
}

BOOLEAN NdisWaitEvent(PNDIS_EVENT Event, UINT MsToWait)
{
    LARGE_INTEGER t = { .QuadPart = -(LONGLONG)MsToWait * 10000 };
    return (BOOLEAN)(wdk_KeWaitForSingleObject_at(&Event->Event, Executive, KernelMode, FALSE, MsToWait ? &t : NULL,
                                                  WDK_CALLER) == STATUS_SUCCESS);
}

PVOID NdisAllocateMemoryWithTagPriority(NDIS_HANDLE NdisHandle, UINT Length, ULONG Tag, EX_POOL_PRIORITY Priority)
{
    return wdk_pool_alloc_type_at(NonPagedPoolNx, Length, Tag, FALSE, "NdisAllocateMemoryWithTagPriority", WDK_CALLER);
}

VOID NdisFreeMemoryWithTagPriority(NDIS_HANDLE NdisHandle, PVOID VirtualAddress, ULONG Tag)
{
    wdk_pool_free_at(VirtualAddress, Tag, TRUE, WDK_CALLER);
}

VOID NdisFreeMemory(PVOID VirtualAddress, UINT Length, UINT MemoryFlags)
{
    wdk_pool_free_at(VirtualAddress, 0, FALSE, WDK_CALLER);
}
