/*
 * ndis.h - the part of NDIS an NDK consumer uses: the kernel API (ntddk.h/wdm.h), the NDKPI
 * (<ndkpi.h>, <ndisndk.h>), NDIS strings, spin-lock and memory wrappers, and the NDIS_STATUS
 * values of <ndk/nt.h>. Miniport and protocol driver interfaces are not provided.
 */
#ifndef OPENNDK_WDK_NDIS_H
#define OPENNDK_WDK_NDIS_H

#include "ntddk.h"
#include "netioapi.h"
#include <ndkpi.h>
#include <ndisndk.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef ANSI_STRING NDIS_ANSI_STRING, *PNDIS_ANSI_STRING;
typedef PHYSICAL_ADDRESS NDIS_PHYSICAL_ADDRESS, *PNDIS_PHYSICAL_ADDRESS;
typedef NDIS_HANDLE *PNDIS_HANDLE;
typedef struct _NDIS_SPIN_LOCK {
    KSPIN_LOCK SpinLock;
    KIRQL OldIrql;
} NDIS_SPIN_LOCK, *PNDIS_SPIN_LOCK;
typedef struct _NDIS_EVENT {
    KEVENT Event;
} NDIS_EVENT, *PNDIS_EVENT;

#ifndef NDIS_STRING_CONST
#define NDIS_STRING_CONST(x) RTL_CONSTANT_STRING(L##x)
#endif
#define NdisInitUnicodeString(Destination, Source) RtlInitUnicodeString((Destination), (Source))
#define NdisZeroMemory(Destination, Length) RtlZeroMemory((Destination), (Length))
#define NdisMoveMemory(Destination, Source, Length) RtlCopyMemory((Destination), (Source), (Length))
#define NdisEqualMemory(Source1, Source2, Length) RtlEqualMemory((Source1), (Source2), (Length))
#define NdisFillMemory(Destination, Length, Fill) RtlFillMemory((Destination), (Length), (Fill))
#define NdisAllocateSpinLock(L) KeInitializeSpinLock(&(L)->SpinLock)
#define NdisFreeSpinLock(L) ((void)(L))
#define NdisAcquireSpinLock(L) KeAcquireSpinLock(&(L)->SpinLock, &(L)->OldIrql)
#define NdisReleaseSpinLock(L) KeReleaseSpinLock(&(L)->SpinLock, (L)->OldIrql)
#define NdisDprAcquireSpinLock(L) KeAcquireSpinLockAtDpcLevel(&(L)->SpinLock)
#define NdisDprReleaseSpinLock(L) KeReleaseSpinLockFromDpcLevel(&(L)->SpinLock)
#define NdisInitializeEvent(E) KeInitializeEvent(&(E)->Event, NotificationEvent, FALSE)
#define NdisSetEvent(E) ((void)KeSetEvent(&(E)->Event, 0, FALSE))
#define NdisResetEvent(E) KeClearEvent(&(E)->Event)
#define NdisInterlockedIncrement(A) InterlockedIncrement(A)
#define NdisInterlockedDecrement(A) InterlockedDecrement(A)
#define NdisGetCurrentSystemTime(T) KeQuerySystemTime(T)
#define NdisSystemProcessorCount() KeQueryActiveProcessorCountEx(ALL_PROCESSOR_GROUPS)
#define NdisGroupMaxProcessorCount(Group) KeQueryMaximumProcessorCountEx(Group)
#define NdisGroupActiveProcessorCount(Group) KeQueryActiveProcessorCountEx(Group)
VOID NdisMSleep(ULONG MicrosecondsToSleep);
VOID NdisStallExecution(ULONG MicrosecondsToStall);
BOOLEAN NdisWaitEvent(PNDIS_EVENT Event, UINT MsToWait);
PVOID NdisAllocateMemoryWithTagPriority(NDIS_HANDLE NdisHandle, UINT Length, ULONG Tag, EX_POOL_PRIORITY Priority);
VOID NdisFreeMemoryWithTagPriority(NDIS_HANDLE NdisHandle, PVOID VirtualAddress, ULONG Tag);
VOID NdisFreeMemory(PVOID VirtualAddress, UINT Length, UINT MemoryFlags);

#ifdef __cplusplus
}
#endif

#endif
