/*
 * wdm.h - the Windows Driver Model kernel API as the OpenNDK WDK kit provides it in a Linux
 * process: IRQL, dispatcher objects and waits, spin locks, pool, lookaside lists, MDLs, work
 * items, DPCs and timers, rundown protection, interlocked operations and lists, counted strings,
 * processors, the driver/device/IRP model, registry parameters and debug output.
 *
 * Names, call shapes and values are the WDK's (Microsoft's "wdm.h header" documentation pages).
 * The kit's model (openndk-wdk(7)): every thread carries an emulated IRQL; pool is a tagged heap
 * whose leftovers are reported at unload; an MDL describes process memory and "physical" is
 * virtual; DPCs, timers and work items run on kit threads. Calls that break a rule the Driver
 * Verifier would catch are reported on one line naming the rule and the driver's call site;
 * NDK_WDK_VERIFY=abort makes every report fatal.
 *
 * Several checked APIs are also function-like macros that pass __FILE__:__LINE__ to the kit, so
 * that a report names the line of driver code; the plain functions exist too (their address may
 * be taken) and name the call site by symbol instead.
 */
#ifndef OPENNDK_WDK_WDM_H
#define OPENNDK_WDK_WDM_H

#include <string.h>
#include "ntdef.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- call sites for the verifier ---- */
#define WDK_STR2_(x) #x
#define WDK_STR_(x) WDK_STR2_(x)
#define WDK_SITE (__FILE__ ":" WDK_STR_(__LINE__))

/* ======================================================================================
 * IRQL
 * ==================================================================================== */
#define PASSIVE_LEVEL 0
#define LOW_LEVEL 0
#define APC_LEVEL 1
#define DISPATCH_LEVEL 2
#define CMCI_LEVEL 5
#define CLOCK_LEVEL 13
#define IPI_LEVEL 14
#define DRS_LEVEL 14
#define POWER_LEVEL 14
#define PROFILE_LEVEL 15
#define HIGH_LEVEL 15
#define SYNCH_LEVEL 12

KIRQL KeGetCurrentIrql(VOID);
KIRQL KfRaiseIrql(KIRQL NewIrql);
VOID KeLowerIrql(KIRQL NewIrql);
KIRQL KeRaiseIrqlToDpcLevel(VOID);
KIRQL KeRaiseIrqlToSynchLevel(VOID);
KIRQL wdk_KfRaiseIrql_at(KIRQL NewIrql, const char *site);
VOID wdk_KeLowerIrql_at(KIRQL NewIrql, const char *site);
VOID wdk_paged_code_at(const char *site);
#define KeRaiseIrql(NewIrql, OldIrql) (*(OldIrql) = wdk_KfRaiseIrql_at((NewIrql), WDK_SITE))
#define KeLowerIrql(NewIrql) wdk_KeLowerIrql_at((NewIrql), WDK_SITE)
#define KeRaiseIrqlToDpcLevel() wdk_KfRaiseIrql_at(DISPATCH_LEVEL, WDK_SITE)
#define KeRaiseIrqlToSynchLevel() wdk_KfRaiseIrql_at(SYNCH_LEVEL, WDK_SITE)
/* Checked in every build (the kit is a verifier): pageable code above APC_LEVEL is reported. */
#define PAGED_CODE() wdk_paged_code_at(WDK_SITE)
#define PAGED_CODE_LOCKED() ((void)0)
#define INIT_CODE() ((void)0)

/* ======================================================================================
 * Debug output, assertions, bug checks
 * ==================================================================================== */
#define DPFLTR_ERROR_LEVEL 0
#define DPFLTR_WARNING_LEVEL 1
#define DPFLTR_TRACE_LEVEL 2
#define DPFLTR_INFO_LEVEL 3
#define DPFLTR_MASK 0x80000000
typedef enum _DPFLTR_TYPE {
    DPFLTR_SYSTEM_ID = 0,
    DPFLTR_IHVVIDEO_ID = 74,
    DPFLTR_IHVAUDIO_ID = 75,
    DPFLTR_IHVNETWORK_ID = 80,
    DPFLTR_IHVSTREAMING_ID = 76,
    DPFLTR_IHVBUS_ID = 77,
    DPFLTR_IHVDRIVER_ID = 77,
    DPFLTR_DEFAULT_ID = 101,
    DPFLTR_NDIS_ID = 120,
} DPFLTR_TYPE;

ULONG DbgPrint(PCSTR Format, ...);
ULONG DbgPrintEx(ULONG ComponentId, ULONG Level, PCSTR Format, ...);
ULONG vDbgPrintEx(ULONG ComponentId, ULONG Level, PCCH Format, va_list arglist);
ULONG vDbgPrintExWithPrefix(PCCH Prefix, ULONG ComponentId, ULONG Level, PCCH Format, va_list arglist);
VOID DbgBreakPoint(VOID);
VOID DbgBreakPointWithStatus(ULONG Status);
#define KdBreakPoint() DbgBreakPoint()
#define KdBreakPointWithStatus(s) DbgBreakPointWithStatus(s)
#if DBG
#define KdPrint(_x_) DbgPrint _x_
#define KdPrintEx(_x_) DbgPrintEx _x_
#define vKdPrintEx(_x_) vDbgPrintEx _x_
#define vKdPrintExWithPrefix(_x_) vDbgPrintExWithPrefix _x_
#else
#define KdPrint(_x_)
#define KdPrintEx(_x_)
#define vKdPrintEx(_x_)
#define vKdPrintExWithPrefix(_x_)
#endif
#define KdRefreshDebuggerNotPresent() TRUE
#define KD_DEBUGGER_NOT_PRESENT TRUE

/* A failed assertion is a verifier report (rule ASSERTION_FAILED) naming the expression. */
BOOLEAN wdk_assert_failed(const char *expr, const char *site);
VOID RtlAssert(PVOID VoidFailedAssertion, PVOID VoidFileName, ULONG LineNumber, PSTR MutableMessage);
#if DBG
#define ASSERT(exp) ((void)((exp) ? TRUE : wdk_assert_failed(#exp, WDK_SITE)))
#define ASSERTMSG(msg, exp) ((void)((exp) ? TRUE : wdk_assert_failed(msg, WDK_SITE)))
#define NT_ASSERT(exp) ((void)((exp) ? TRUE : wdk_assert_failed(#exp, WDK_SITE)))
#define NT_ASSERTMSG(msg, exp) ((void)((exp) ? TRUE : wdk_assert_failed(msg, WDK_SITE)))
#define NT_ASSERTMSGW(msg, exp) ((void)((exp) ? TRUE : wdk_assert_failed(#exp, WDK_SITE)))
#define NT_VERIFY(exp) ((exp) ? TRUE : wdk_assert_failed(#exp, WDK_SITE))
#define NT_VERIFYMSG(msg, exp) ((exp) ? TRUE : wdk_assert_failed(msg, WDK_SITE))
#else
#define ASSERT(exp) ((void)0)
#define ASSERTMSG(msg, exp) ((void)0)
#define NT_ASSERT(exp) ((void)0)
#define NT_ASSERTMSG(msg, exp) ((void)0)
#define NT_ASSERTMSGW(msg, exp) ((void)0)
#define NT_VERIFY(exp) ((exp) ? TRUE : FALSE)
#define NT_VERIFYMSG(msg, exp) ((exp) ? TRUE : FALSE)
#endif
#define NT_ASSERT_ACTION(exp) NT_ASSERT(exp)
#define NT_ANALYSIS_ASSUME(exp) ((void)0)
#define NT_FRE_ASSERT(exp) ((void)((exp) ? TRUE : wdk_assert_failed(#exp, WDK_SITE)))
#define NT_FRE_ASSERTMSG(msg, exp) ((void)((exp) ? TRUE : wdk_assert_failed(msg, WDK_SITE)))

/* A bug check stops the system: the kit prints the code and parameters and aborts. */
DECLSPEC_NORETURN VOID KeBugCheckEx(ULONG BugCheckCode, ULONG_PTR P1, ULONG_PTR P2, ULONG_PTR P3, ULONG_PTR P4);
DECLSPEC_NORETURN VOID KeBugCheck(ULONG BugCheckCode);
DECLSPEC_NORETURN VOID ExRaiseStatus(NTSTATUS Status);
DECLSPEC_NORETURN VOID RtlFailFast(ULONG Code);
#define FAST_FAIL_CORRUPT_LIST_ENTRY 3
#define FAST_FAIL_INVALID_ARG 5
#define FAST_FAIL_FATAL_APP_EXIT 7

/* ======================================================================================
 * Dispatcher objects: events, timers, mutexes, semaphores; waits
 * ==================================================================================== */
typedef struct _DISPATCHER_HEADER {
    union {
        struct {
            UCHAR Type;
            UCHAR Signalling;
            UCHAR Size;
            UCHAR Reserved1;
        };
        volatile LONG Lock;
    };
    LONG SignalState;
    LIST_ENTRY WaitListHead;
} DISPATCHER_HEADER, *PDISPATCHER_HEADER;

typedef struct _KEVENT {
    DISPATCHER_HEADER Header;
} KEVENT, *PKEVENT, *PRKEVENT;

typedef struct _KSEMAPHORE {
    DISPATCHER_HEADER Header;
    LONG Limit;
} KSEMAPHORE, *PKSEMAPHORE, *PRKSEMAPHORE;

typedef struct _KTHREAD *PKTHREAD, *PRKTHREAD;
typedef struct _ETHREAD *PETHREAD;
typedef struct _EPROCESS *PEPROCESS, *PKPROCESS, *PRKPROCESS;

typedef struct _KMUTANT {
    DISPATCHER_HEADER Header;
    LIST_ENTRY MutantListEntry;
    PKTHREAD OwnerThread;
    BOOLEAN Abandoned;
    UCHAR ApcDisable;
} KMUTANT, *PKMUTANT, *PRKMUTANT, KMUTEX, *PKMUTEX, *PRKMUTEX;

typedef struct _FAST_MUTEX {
    volatile LONG Count;
    PVOID Owner;
    ULONG Contention;
    KEVENT Event;
    ULONG OldIrql;
} FAST_MUTEX, *PFAST_MUTEX, KGUARDED_MUTEX, *PKGUARDED_MUTEX;

typedef struct _KWAIT_BLOCK {
    ULONG_PTR Reserved[6];
} KWAIT_BLOCK, *PKWAIT_BLOCK, *PRKWAIT_BLOCK;

typedef enum _KWAIT_REASON {
    Executive, FreePage, PageIn, PoolAllocation, DelayExecution, Suspended, UserRequest,
    WrExecutive, WrFreePage, WrPageIn, WrPoolAllocation, WrDelayExecution, WrSuspended,
    WrUserRequest, WrSpare0, WrQueue, WrLpcReceive, WrLpcReply, WrVirtualMemory, WrPageOut,
    WrRendezvous, WrKeyedEvent, WrTerminated, WrProcessInSwap, WrCpuRateControl,
    WrCalloutStack, WrKernel, WrResource, WrPushLock, WrMutex, WrQuantumEnd, WrDispatchInt,
    WrPreempted, WrYieldExecution, WrFastMutex, WrGuardedMutex, WrRundown, WrAlertByThreadId,
    WrDeferredPreempt, MaximumWaitReason
} KWAIT_REASON;

#define THREAD_WAIT_OBJECTS 3
#define MAXIMUM_WAIT_OBJECTS 64
#define IO_NO_INCREMENT 0
#define IO_DISK_INCREMENT 1
#define IO_NETWORK_INCREMENT 2
#define EVENT_INCREMENT 1
#define SEMAPHORE_INCREMENT 1
#define MUTANT_INCREMENT 1

VOID KeInitializeEvent(PRKEVENT Event, EVENT_TYPE Type, BOOLEAN State);
LONG KeSetEvent(PRKEVENT Event, KPRIORITY Increment, BOOLEAN Wait);
LONG KeResetEvent(PRKEVENT Event);
VOID KeClearEvent(PRKEVENT Event);
LONG KeReadStateEvent(PRKEVENT Event);

VOID KeInitializeSemaphore(PRKSEMAPHORE Semaphore, LONG Count, LONG Limit);
LONG KeReleaseSemaphore(PRKSEMAPHORE Semaphore, KPRIORITY Increment, LONG Adjustment, BOOLEAN Wait);
LONG KeReadStateSemaphore(PRKSEMAPHORE Semaphore);

VOID KeInitializeMutex(PRKMUTEX Mutex, ULONG Level);
LONG KeReleaseMutex(PRKMUTEX Mutex, BOOLEAN Wait);
LONG KeReadStateMutex(PRKMUTEX Mutex);

VOID ExInitializeFastMutex(PFAST_MUTEX FastMutex);
VOID ExAcquireFastMutex(PFAST_MUTEX FastMutex);
VOID ExReleaseFastMutex(PFAST_MUTEX FastMutex);
BOOLEAN ExTryToAcquireFastMutex(PFAST_MUTEX FastMutex);
VOID ExAcquireFastMutexUnsafe(PFAST_MUTEX FastMutex);
VOID ExReleaseFastMutexUnsafe(PFAST_MUTEX FastMutex);
VOID KeInitializeGuardedMutex(PKGUARDED_MUTEX Mutex);
VOID KeAcquireGuardedMutex(PKGUARDED_MUTEX Mutex);
VOID KeReleaseGuardedMutex(PKGUARDED_MUTEX Mutex);
BOOLEAN KeTryToAcquireGuardedMutex(PKGUARDED_MUTEX Mutex);
#define KeAcquireGuardedMutexUnsafe KeAcquireGuardedMutex
#define KeReleaseGuardedMutexUnsafe KeReleaseGuardedMutex

NTSTATUS KeWaitForSingleObject(PVOID Object, KWAIT_REASON WaitReason, KPROCESSOR_MODE WaitMode,
                               BOOLEAN Alertable, PLARGE_INTEGER Timeout);
NTSTATUS KeWaitForMultipleObjects(ULONG Count, PVOID Object[], WAIT_TYPE WaitType, KWAIT_REASON WaitReason,
                                  KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Timeout,
                                  PKWAIT_BLOCK WaitBlockArray);
NTSTATUS KeDelayExecutionThread(KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Interval);
NTSTATUS wdk_KeWaitForSingleObject_at(PVOID Object, KWAIT_REASON WaitReason, KPROCESSOR_MODE WaitMode,
                                      BOOLEAN Alertable, PLARGE_INTEGER Timeout, const char *site);
NTSTATUS wdk_KeWaitForMultipleObjects_at(ULONG Count, PVOID Object[], WAIT_TYPE WaitType,
                                         KWAIT_REASON WaitReason, KPROCESSOR_MODE WaitMode,
                                         BOOLEAN Alertable, PLARGE_INTEGER Timeout,
                                         PKWAIT_BLOCK WaitBlockArray, const char *site);
NTSTATUS wdk_KeDelayExecutionThread_at(KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Interval,
                                       const char *site);
#define KeWaitForSingleObject(o, r, m, a, t) wdk_KeWaitForSingleObject_at((o), (r), (m), (a), (t), WDK_SITE)
#define KeWaitForMultipleObjects(c, o, wt, r, m, a, t, b) \
    wdk_KeWaitForMultipleObjects_at((c), (o), (wt), (r), (m), (a), (t), (b), WDK_SITE)
#define KeWaitForMutexObject KeWaitForSingleObject
#define KeDelayExecutionThread(m, a, i) wdk_KeDelayExecutionThread_at((m), (a), (i), WDK_SITE)
VOID KeStallExecutionProcessor(ULONG MicroSeconds);
BOOLEAN KeAreApcsDisabled(VOID);
BOOLEAN KeAreAllApcsDisabled(VOID);
VOID KeEnterCriticalRegion(VOID);
VOID KeLeaveCriticalRegion(VOID);
VOID KeEnterGuardedRegion(VOID);
VOID KeLeaveGuardedRegion(VOID);

/* ======================================================================================
 * Spin locks
 * ==================================================================================== */
typedef struct _KSPIN_LOCK_QUEUE {
    struct _KSPIN_LOCK_QUEUE *volatile Next;
    PKSPIN_LOCK volatile Lock;
} KSPIN_LOCK_QUEUE, *PKSPIN_LOCK_QUEUE;

typedef struct _KLOCK_QUEUE_HANDLE {
    KSPIN_LOCK_QUEUE LockQueue;
    KIRQL OldIrql;
} KLOCK_QUEUE_HANDLE, *PKLOCK_QUEUE_HANDLE;

VOID KeInitializeSpinLock(PKSPIN_LOCK SpinLock);
KIRQL KeAcquireSpinLockRaiseToDpc(PKSPIN_LOCK SpinLock);
VOID KeReleaseSpinLock(PKSPIN_LOCK SpinLock, KIRQL NewIrql);
VOID KeAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock);
VOID KeReleaseSpinLockFromDpcLevel(PKSPIN_LOCK SpinLock);
BOOLEAN KeTryToAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock);
BOOLEAN KeTestSpinLock(PKSPIN_LOCK SpinLock);
VOID KeAcquireInStackQueuedSpinLock(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle);
VOID KeReleaseInStackQueuedSpinLock(PKLOCK_QUEUE_HANDLE LockHandle);
VOID KeAcquireInStackQueuedSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle);
VOID KeReleaseInStackQueuedSpinLockFromDpcLevel(PKLOCK_QUEUE_HANDLE LockHandle);
KIRQL wdk_KeAcquireSpinLock_at(PKSPIN_LOCK SpinLock, const char *site);
VOID wdk_KeReleaseSpinLock_at(PKSPIN_LOCK SpinLock, KIRQL NewIrql, const char *site);
VOID wdk_KeAcquireSpinLockAtDpcLevel_at(PKSPIN_LOCK SpinLock, const char *site);
VOID wdk_KeReleaseSpinLockFromDpcLevel_at(PKSPIN_LOCK SpinLock, const char *site);
BOOLEAN wdk_KeTryToAcquireSpinLockAtDpcLevel_at(PKSPIN_LOCK SpinLock, const char *site);
VOID wdk_KeAcquireInStackQueuedSpinLock_at(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle, const char *site);
VOID wdk_KeReleaseInStackQueuedSpinLock_at(PKLOCK_QUEUE_HANDLE LockHandle, const char *site);
VOID wdk_KeAcquireInStackQueuedSpinLockAtDpcLevel_at(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle,
                                                    const char *site);
VOID wdk_KeReleaseInStackQueuedSpinLockFromDpcLevel_at(PKLOCK_QUEUE_HANDLE LockHandle, const char *site);
#define KeAcquireSpinLock(SpinLock, OldIrql) (*(OldIrql) = wdk_KeAcquireSpinLock_at((SpinLock), WDK_SITE))
#define KeAcquireSpinLockRaiseToDpc(SpinLock) wdk_KeAcquireSpinLock_at((SpinLock), WDK_SITE)
#define KeReleaseSpinLock(SpinLock, NewIrql) wdk_KeReleaseSpinLock_at((SpinLock), (NewIrql), WDK_SITE)
#define KeAcquireSpinLockAtDpcLevel(SpinLock) wdk_KeAcquireSpinLockAtDpcLevel_at((SpinLock), WDK_SITE)
#define KeReleaseSpinLockFromDpcLevel(SpinLock) wdk_KeReleaseSpinLockFromDpcLevel_at((SpinLock), WDK_SITE)
#define KeTryToAcquireSpinLockAtDpcLevel(SpinLock) wdk_KeTryToAcquireSpinLockAtDpcLevel_at((SpinLock), WDK_SITE)
#define KeAcquireInStackQueuedSpinLock(SpinLock, LockHandle) \
    wdk_KeAcquireInStackQueuedSpinLock_at((SpinLock), (LockHandle), WDK_SITE)
#define KeReleaseInStackQueuedSpinLock(LockHandle) wdk_KeReleaseInStackQueuedSpinLock_at((LockHandle), WDK_SITE)
#define KeAcquireInStackQueuedSpinLockAtDpcLevel(SpinLock, LockHandle) \
    wdk_KeAcquireInStackQueuedSpinLockAtDpcLevel_at((SpinLock), (LockHandle), WDK_SITE)
#define KeReleaseInStackQueuedSpinLockFromDpcLevel(LockHandle) \
    wdk_KeReleaseInStackQueuedSpinLockFromDpcLevel_at((LockHandle), WDK_SITE)

/* ======================================================================================
 * Pool
 * ==================================================================================== */
typedef enum _POOL_TYPE {
    NonPagedPool = 0,
    NonPagedPoolExecute = 0,
    PagedPool = 1,
    NonPagedPoolMustSucceed = 2,
    DontUseThisType = 3,
    NonPagedPoolCacheAligned = 4,
    PagedPoolCacheAligned = 5,
    NonPagedPoolCacheAlignedMustS = 6,
    MaxPoolType = 7,
    NonPagedPoolBase = 0,
    NonPagedPoolBaseMustSucceed = 2,
    NonPagedPoolBaseCacheAligned = 4,
    NonPagedPoolBaseCacheAlignedMustS = 6,
    NonPagedPoolSession = 32,
    PagedPoolSession = 33,
    NonPagedPoolMustSucceedSession = 34,
    DontUseThisTypeSession = 35,
    NonPagedPoolCacheAlignedSession = 36,
    PagedPoolCacheAlignedSession = 37,
    NonPagedPoolCacheAlignedMustSSession = 38,
    NonPagedPoolNx = 512,
    NonPagedPoolNxCacheAligned = 516,
    NonPagedPoolSessionNx = 544,
} POOL_TYPE;

#define POOL_QUOTA_FAIL_INSTEAD_OF_RAISE 8
#define POOL_RAISE_IF_ALLOCATION_FAILURE 16
#define POOL_COLD_ALLOCATION 256
#define POOL_NX_ALLOCATION 512
#define POOL_ZERO_ALLOCATION 1024

typedef enum _EX_POOL_PRIORITY {
    LowPoolPriority = 0,
    LowPoolPrioritySpecialPoolOverrun = 8,
    LowPoolPrioritySpecialPoolUnderrun = 9,
    NormalPoolPriority = 16,
    NormalPoolPrioritySpecialPoolOverrun = 24,
    NormalPoolPrioritySpecialPoolUnderrun = 25,
    HighPoolPriority = 32,
    HighPoolPrioritySpecialPoolOverrun = 40,
    HighPoolPrioritySpecialPoolUnderrun = 41
} EX_POOL_PRIORITY;

typedef ULONG64 POOL_FLAGS;
#define POOL_FLAG_REQUIRED_START 0x0000000000000001ULL
#define POOL_FLAG_USE_QUOTA 0x0000000000000001ULL
#define POOL_FLAG_UNINITIALIZED 0x0000000000000002ULL
#define POOL_FLAG_SESSION 0x0000000000000004ULL
#define POOL_FLAG_CACHE_ALIGNED 0x0000000000000008ULL
#define POOL_FLAG_RESERVED1 0x0000000000000010ULL
#define POOL_FLAG_RAISE_ON_FAILURE 0x0000000000000020ULL
#define POOL_FLAG_NON_PAGED 0x0000000000000040ULL
#define POOL_FLAG_NON_PAGED_EXECUTE 0x0000000000000080ULL
#define POOL_FLAG_PAGED 0x0000000000000100ULL
#define POOL_FLAG_RESERVED2 0x0000000000000200ULL
#define POOL_FLAG_RESERVED3 0x0000000000000400ULL
#define POOL_FLAG_REQUIRED_END 0x0000000080000000ULL
#define POOL_FLAG_OPTIONAL_START 0x0000000100000000ULL
#define POOL_FLAG_SPECIAL_POOL 0x0000000100000000ULL
#define POOL_FLAG_OPTIONAL_END 0x8000000000000000ULL
#define POOL_FLAG_REQUIRED_MASK 0x00000000FFFFFFFFULL
#define POOL_FLAG_OPTIONAL_MASK 0xFFFFFFFF00000000ULL

typedef enum _POOL_EXTENDED_PARAMETER_TYPE {
    PoolExtendedParameterInvalidType = 0,
    PoolExtendedParameterPriority,
    PoolExtendedParameterSecurePool,
    PoolExtendedParameterNumaNode,
    PoolExtendedParameterMax
} POOL_EXTENDED_PARAMETER_TYPE;
typedef ULONG POOL_NODE_REQUIREMENT;
#define MM_ANY_NODE_OK 0x80000000
typedef struct _POOL_EXTENDED_PARAMETER {
    struct {
        ULONG64 Type : 8;
        ULONG64 Optional : 1;
        ULONG64 Reserved : 64 - 9;
    };
    union {
        ULONG64 Reserved2;
        PVOID Reserved3;
        EX_POOL_PRIORITY Priority;
        PVOID SecurePoolParams;
        POOL_NODE_REQUIREMENT PreferredNode;
    };
} POOL_EXTENDED_PARAMETER, *PPOOL_EXTENDED_PARAMETER;
typedef const POOL_EXTENDED_PARAMETER *PCPOOL_EXTENDED_PARAMETER;

PVOID ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag);
PVOID ExAllocatePool3(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag, PCPOOL_EXTENDED_PARAMETER ExtendedParameters,
                      ULONG ExtendedParametersCount);
PVOID ExAllocatePoolWithTag(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag);
PVOID ExAllocatePoolWithTagPriority(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag, EX_POOL_PRIORITY Priority);
PVOID ExAllocatePoolWithQuotaTag(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag);
PVOID ExAllocatePoolZero(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag);
PVOID ExAllocatePoolUninitialized(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag);
VOID ExFreePool(PVOID P);
VOID ExFreePoolWithTag(PVOID P, ULONG Tag);
VOID ExFreePool2(PVOID P, ULONG Tag, PCPOOL_EXTENDED_PARAMETER ExtendedParameters, ULONG ExtendedParametersCount);
PVOID wdk_pool_alloc_at(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag, EX_POOL_PRIORITY Priority,
                        const char *api, const char *site);
PVOID wdk_pool_alloc_type_at(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag, BOOLEAN Zero,
                             const char *api, const char *site);
VOID wdk_pool_free_at(PVOID P, ULONG Tag, BOOLEAN CheckTag, const char *site);
#define ExAllocatePool2(f, n, t) wdk_pool_alloc_at((f), (n), (t), NormalPoolPriority, "ExAllocatePool2", WDK_SITE)
#define ExAllocatePoolWithTag(p, n, t) wdk_pool_alloc_type_at((p), (n), (t), FALSE, "ExAllocatePoolWithTag", WDK_SITE)
#define ExAllocatePoolWithTagPriority(p, n, t, pr) \
    wdk_pool_alloc_type_at((p), (n), (t), FALSE, "ExAllocatePoolWithTagPriority", WDK_SITE)
#define ExAllocatePoolWithQuotaTag(p, n, t) \
    wdk_pool_alloc_type_at((p), (n), (t), FALSE, "ExAllocatePoolWithQuotaTag", WDK_SITE)
#define ExAllocatePoolZero(p, n, t) wdk_pool_alloc_type_at((p), (n), (t), TRUE, "ExAllocatePoolZero", WDK_SITE)
#define ExAllocatePoolUninitialized(p, n, t) \
    wdk_pool_alloc_type_at((p), (n), (t), FALSE, "ExAllocatePoolUninitialized", WDK_SITE)
/* The deprecated untagged form allocates with the tag 'None', as the WDK's macro does. */
#define ExAllocatePool(p, n) wdk_pool_alloc_type_at((p), (n), 0x656e6f4e, FALSE, "ExAllocatePool", WDK_SITE)
#define ExFreePool(p) wdk_pool_free_at((p), 0, FALSE, WDK_SITE)
#define ExFreePoolWithTag(p, t) wdk_pool_free_at((p), (t), TRUE, WDK_SITE)
#define ExFreePool2(p, t, e, c) wdk_pool_free_at((p), (t), TRUE, WDK_SITE)

/* ======================================================================================
 * Lookaside lists
 * ==================================================================================== */
typedef struct _LOOKASIDE_LIST_EX *PLOOKASIDE_LIST_EX;
typedef PVOID ALLOCATE_FUNCTION_EX(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag, PLOOKASIDE_LIST_EX Lookaside);
typedef ALLOCATE_FUNCTION_EX *PALLOCATE_FUNCTION_EX;
typedef VOID FREE_FUNCTION_EX(PVOID Buffer, PLOOKASIDE_LIST_EX Lookaside);
typedef FREE_FUNCTION_EX *PFREE_FUNCTION_EX;
typedef PVOID ALLOCATE_FUNCTION(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag);
typedef ALLOCATE_FUNCTION *PALLOCATE_FUNCTION;
typedef VOID FREE_FUNCTION(PVOID Buffer);
typedef FREE_FUNCTION *PFREE_FUNCTION;

/* Storage the driver owns; the kit keeps its state in a side object it points to. */
typedef struct _LOOKASIDE_LIST_EX {
    PVOID KitState;
    ULONG_PTR Reserved[11];
} LOOKASIDE_LIST_EX;
typedef struct DECLSPEC_CACHEALIGN _NPAGED_LOOKASIDE_LIST {
    PVOID KitState;
    ULONG_PTR Reserved[15];
} NPAGED_LOOKASIDE_LIST, *PNPAGED_LOOKASIDE_LIST, PAGED_LOOKASIDE_LIST, *PPAGED_LOOKASIDE_LIST;

#define EX_LOOKASIDE_LIST_EX_FLAGS_RAISE_ON_FAIL 0x00000001UL
#define EX_LOOKASIDE_LIST_EX_FLAGS_FAIL_NO_RAISE 0x00000002UL
#define EX_MAXIMUM_LOOKASIDE_DEPTH_BASE 256
#define EX_MAXIMUM_LOOKASIDE_DEPTH_LIMIT 1024
#define LOOKASIDE_MINIMUM_BLOCK_SIZE (RTL_SIZEOF_THROUGH_FIELD(SINGLE_LIST_ENTRY, Next))

NTSTATUS ExInitializeLookasideListEx(PLOOKASIDE_LIST_EX Lookaside, PALLOCATE_FUNCTION_EX Allocate,
                                     PFREE_FUNCTION_EX Free, POOL_TYPE PoolType, ULONG Flags, SIZE_T Size,
                                     ULONG Tag, USHORT Depth);
VOID ExDeleteLookasideListEx(PLOOKASIDE_LIST_EX Lookaside);
VOID ExFlushLookasideListEx(PLOOKASIDE_LIST_EX Lookaside);
PVOID ExAllocateFromLookasideListEx(PLOOKASIDE_LIST_EX Lookaside);
VOID ExFreeToLookasideListEx(PLOOKASIDE_LIST_EX Lookaside, PVOID Entry);
VOID ExInitializeNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside, PALLOCATE_FUNCTION Allocate,
                                     PFREE_FUNCTION Free, ULONG Flags, SIZE_T Size, ULONG Tag, USHORT Depth);
VOID ExDeleteNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside);
PVOID ExAllocateFromNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside);
VOID ExFreeToNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside, PVOID Entry);
VOID ExInitializePagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside, PALLOCATE_FUNCTION Allocate,
                                    PFREE_FUNCTION Free, ULONG Flags, SIZE_T Size, ULONG Tag, USHORT Depth);
VOID ExDeletePagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside);
PVOID ExAllocateFromPagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside);
VOID ExFreeToPagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside, PVOID Entry);
NTSTATUS wdk_lookaside_init_at(PVOID Storage, PALLOCATE_FUNCTION_EX AllocateEx, PFREE_FUNCTION_EX FreeEx,
                               PALLOCATE_FUNCTION Allocate, PFREE_FUNCTION Free, POOL_TYPE PoolType, ULONG Flags,
                               SIZE_T Size, ULONG Tag, const char *api, const char *site);
PVOID wdk_lookaside_alloc_at(PVOID Storage, const char *site);
#define ExInitializeLookasideListEx(l, a, f, p, fl, s, t, d) \
    wdk_lookaside_init_at((l), (a), (f), NULL, NULL, (p), (fl), (s), (t), "ExInitializeLookasideListEx", WDK_SITE)
#define ExInitializeNPagedLookasideList(l, a, f, fl, s, t, d) \
    ((void)wdk_lookaside_init_at((l), NULL, NULL, (a), (f), NonPagedPoolNx, (fl), (s), (t), \
                                 "ExInitializeNPagedLookasideList", WDK_SITE))
#define ExInitializePagedLookasideList(l, a, f, fl, s, t, d) \
    ((void)wdk_lookaside_init_at((l), NULL, NULL, (a), (f), PagedPool, (fl), (s), (t), \
                                 "ExInitializePagedLookasideList", WDK_SITE))
#define ExAllocateFromLookasideListEx(l) wdk_lookaside_alloc_at((l), WDK_SITE)
#define ExAllocateFromNPagedLookasideList(l) wdk_lookaside_alloc_at((l), WDK_SITE)
#define ExAllocateFromPagedLookasideList(l) wdk_lookaside_alloc_at((l), WDK_SITE)

/* ======================================================================================
 * Memory descriptor lists (the MDL structure itself is in <ndk/nt.h>)
 * ==================================================================================== */
typedef ULONG64 PFN_NUMBER, *PPFN_NUMBER;
#define PAGE_SHIFT 12L
#ifndef PAGE_SIZE
#define PAGE_SIZE 0x1000
#endif
#define BYTE_OFFSET(Va) ((ULONG)((LONG_PTR)(Va) & (PAGE_SIZE - 1)))
#define PAGE_ALIGN(Va) ((PVOID)((ULONG_PTR)(Va) & ~((ULONG_PTR)PAGE_SIZE - 1)))
#define ROUND_TO_PAGES(Size) (((ULONG_PTR)(Size) + PAGE_SIZE - 1) & ~((ULONG_PTR)PAGE_SIZE - 1))
#define BYTES_TO_PAGES(Size) (((Size) >> PAGE_SHIFT) + (((Size) & (PAGE_SIZE - 1)) != 0))
#define ADDRESS_AND_SIZE_TO_SPAN_PAGES(Va, Size) \
    ((BYTE_OFFSET(Va) + ((SIZE_T)(Size)) + (PAGE_SIZE - 1)) >> PAGE_SHIFT)
#define COMPUTE_PAGES_SPANNED(Va, Size) ADDRESS_AND_SIZE_TO_SPAN_PAGES(Va, Size)

#ifndef MDL_MAPPED_TO_SYSTEM_VA
#define MDL_MAPPED_TO_SYSTEM_VA 0x0001
#endif
/* MDL_PAGES_LOCKED, MDL_SOURCE_IS_NONPAGED_POOL and MDL_ALLOCATED_FIXED_SIZE: <ndk/nt.h>. */
#define MDL_PARTIAL 0x0010
#define MDL_PARTIAL_HAS_BEEN_MAPPED 0x0020
#define MDL_IO_PAGE_READ 0x0040
#define MDL_WRITE_OPERATION 0x0080
#define MDL_LOCKED_PAGE_TABLES 0x0100
#define MDL_FREE_EXTRA_PTES 0x0200
#define MDL_DESCRIBES_AWE 0x0400
#define MDL_IO_SPACE 0x0800
#define MDL_NETWORK_HEADER 0x1000
#define MDL_MAPPING_CAN_FAIL 0x2000
#define MDL_PAGE_CONTENTS_INVARIANT 0x4000
#define MDL_INTERNAL 0x8000

typedef enum _LOCK_OPERATION { IoReadAccess, IoWriteAccess, IoModifyAccess } LOCK_OPERATION;
typedef enum _MM_PAGE_PRIORITY { LowPagePriority = 0, NormalPagePriority = 16, HighPagePriority = 32 } MM_PAGE_PRIORITY;
typedef enum _MEMORY_CACHING_TYPE {
    MmNonCached = 0, MmCached = 1, MmWriteCombined = 2, MmHardwareCoherentCached, MmNonCachedUnordered,
    MmUSWCCached, MmMaximumCacheType, MmNotMapped = -1
} MEMORY_CACHING_TYPE;
#define MdlMappingNoWrite 0x80000000
#define MdlMappingNoExecute 0x40000000

#define MmGetMdlVirtualAddress(Mdl) ((PVOID)((PCHAR)((Mdl)->StartVa) + (Mdl)->ByteOffset))
#define MmGetMdlByteCount(Mdl) ((Mdl)->ByteCount)
#define MmGetMdlByteOffset(Mdl) ((Mdl)->ByteOffset)
#define MmGetMdlBaseVa(Mdl) ((Mdl)->StartVa)
#define MmGetMdlPfnArray(Mdl) ((PPFN_NUMBER)((Mdl) + 1))
#define MmInitializeMdl(MemoryDescriptorList, BaseVa, Length) \
    { \
        (MemoryDescriptorList)->Next = (PMDL)NULL; \
        (MemoryDescriptorList)->Size = (CSHORT)(sizeof(MDL) + \
            (sizeof(PFN_NUMBER) * ADDRESS_AND_SIZE_TO_SPAN_PAGES((BaseVa), (Length)))); \
        (MemoryDescriptorList)->MdlFlags = 0; \
        (MemoryDescriptorList)->StartVa = (PVOID)PAGE_ALIGN((BaseVa)); \
        (MemoryDescriptorList)->ByteOffset = BYTE_OFFSET((BaseVa)); \
        (MemoryDescriptorList)->ByteCount = (ULONG)(Length); \
    }
#define MmPrepareMdlForReuse(Mdl) ((void)0)

struct _IRP;
PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota, struct _IRP *Irp);
PMDL wdk_IoAllocateMdl_at(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota,
                          struct _IRP *Irp, const char *site);
#define IoAllocateMdl(v, l, s, c, i) wdk_IoAllocateMdl_at((v), (l), (s), (c), (i), WDK_SITE)
VOID IoFreeMdl(PMDL Mdl);
VOID MmBuildMdlForNonPagedPool(PMDL MemoryDescriptorList);
VOID MmProbeAndLockPages(PMDL MemoryDescriptorList, KPROCESSOR_MODE AccessMode, LOCK_OPERATION Operation);
VOID MmUnlockPages(PMDL MemoryDescriptorList);
SIZE_T MmSizeOfMdl(PVOID Base, SIZE_T Length);
PMDL MmCreateMdl(PMDL MemoryDescriptorList, PVOID Base, SIZE_T Length);
VOID IoBuildPartialMdl(PMDL SourceMdl, PMDL TargetMdl, PVOID VirtualAddress, ULONG Length);
PVOID MmGetSystemAddressForMdlSafe(PMDL Mdl, ULONG Priority);
#define MmGetSystemAddressForMdl(Mdl) MmGetSystemAddressForMdlSafe((Mdl), NormalPagePriority)
PVOID MmMapLockedPagesSpecifyCache(PMDL MemoryDescriptorList, KPROCESSOR_MODE AccessMode,
                                   MEMORY_CACHING_TYPE CacheType, PVOID RequestedAddress, ULONG BugCheckOnFailure,
                                   ULONG Priority);
PVOID MmMapLockedPages(PMDL MemoryDescriptorList, KPROCESSOR_MODE AccessMode);
VOID MmUnmapLockedPages(PVOID BaseAddress, PMDL MemoryDescriptorList);
PHYSICAL_ADDRESS MmGetPhysicalAddress(PVOID BaseAddress);
PVOID MmGetVirtualForPhysical(PHYSICAL_ADDRESS PhysicalAddress);
BOOLEAN MmIsAddressValid(PVOID VirtualAddress);
BOOLEAN MmIsNonPagedSystemAddressValid(PVOID VirtualAddress);
PVOID MmAllocateContiguousMemory(SIZE_T NumberOfBytes, PHYSICAL_ADDRESS HighestAcceptableAddress);
PVOID MmAllocateContiguousMemorySpecifyCache(SIZE_T NumberOfBytes, PHYSICAL_ADDRESS LowestAcceptableAddress,
                                             PHYSICAL_ADDRESS HighestAcceptableAddress,
                                             PHYSICAL_ADDRESS BoundaryAddressMultiple, MEMORY_CACHING_TYPE CacheType);
VOID MmFreeContiguousMemory(PVOID BaseAddress);
PVOID MmMapIoSpace(PHYSICAL_ADDRESS PhysicalAddress, SIZE_T NumberOfBytes, MEMORY_CACHING_TYPE CacheType);
VOID MmUnmapIoSpace(PVOID BaseAddress, SIZE_T NumberOfBytes);
PMDL MmAllocatePagesForMdl(PHYSICAL_ADDRESS LowAddress, PHYSICAL_ADDRESS HighAddress, PHYSICAL_ADDRESS SkipBytes,
                           SIZE_T TotalBytes);
VOID KeFlushIoBuffers(PMDL Mdl, BOOLEAN ReadOperation, BOOLEAN DmaOperation);

/* ======================================================================================
 * DPCs, timers, time
 * ==================================================================================== */
struct _KDPC;
typedef VOID KDEFERRED_ROUTINE(struct _KDPC *Dpc, PVOID DeferredContext, PVOID SystemArgument1,
                               PVOID SystemArgument2);
typedef KDEFERRED_ROUTINE *PKDEFERRED_ROUTINE;
typedef struct _KDPC {
    union {
        ULONG TargetInfoAsUlong;
        struct {
            UCHAR Type;
            UCHAR Importance;
            volatile USHORT Number;
        };
    };
    SINGLE_LIST_ENTRY DpcListEntry;
    KAFFINITY ProcessorHistory;
    PKDEFERRED_ROUTINE DeferredRoutine;
    PVOID DeferredContext;
    PVOID SystemArgument1;
    PVOID SystemArgument2;
    volatile PVOID DpcData;
} KDPC, *PKDPC, *PRKDPC;
typedef enum _KDPC_IMPORTANCE { LowImportance, MediumImportance, HighImportance, MediumHighImportance } KDPC_IMPORTANCE;

VOID KeInitializeDpc(PRKDPC Dpc, PKDEFERRED_ROUTINE DeferredRoutine, PVOID DeferredContext);
VOID KeInitializeThreadedDpc(PRKDPC Dpc, PKDEFERRED_ROUTINE DeferredRoutine, PVOID DeferredContext);
BOOLEAN KeInsertQueueDpc(PRKDPC Dpc, PVOID SystemArgument1, PVOID SystemArgument2);
BOOLEAN KeRemoveQueueDpc(PRKDPC Dpc);
VOID KeFlushQueuedDpcs(VOID);
VOID KeSetImportanceDpc(PRKDPC Dpc, KDPC_IMPORTANCE Importance);
VOID KeSetTargetProcessorDpc(PRKDPC Dpc, CCHAR Number);
NTSTATUS KeSetTargetProcessorDpcEx(PKDPC Dpc, PPROCESSOR_NUMBER ProcNumber);

typedef struct _KTIMER {
    DISPATCHER_HEADER Header;
    ULARGE_INTEGER DueTime;
    LIST_ENTRY TimerListEntry;
    struct _KDPC *Dpc;
    ULONG Processor;
    ULONG Period;
} KTIMER, *PKTIMER, *PRKTIMER;

VOID KeInitializeTimer(PKTIMER Timer);
VOID KeInitializeTimerEx(PKTIMER Timer, TIMER_TYPE Type);
BOOLEAN KeSetTimer(PKTIMER Timer, LARGE_INTEGER DueTime, PKDPC Dpc);
BOOLEAN KeSetTimerEx(PKTIMER Timer, LARGE_INTEGER DueTime, LONG Period, PKDPC Dpc);
BOOLEAN KeSetCoalescableTimer(PKTIMER Timer, LARGE_INTEGER DueTime, ULONG Period, ULONG TolerableDelay, PKDPC Dpc);
BOOLEAN KeCancelTimer(PKTIMER Timer);
BOOLEAN KeReadStateTimer(PKTIMER Timer);
BOOLEAN wdk_KeSetTimerEx_at(PKTIMER Timer, LARGE_INTEGER DueTime, LONG Period, PKDPC Dpc, const char *site);
#define KeSetTimer(t, d, dpc) wdk_KeSetTimerEx_at((t), (d), 0, (dpc), WDK_SITE)
#define KeSetTimerEx(t, d, p, dpc) wdk_KeSetTimerEx_at((t), (d), (p), (dpc), WDK_SITE)
#define KeSetCoalescableTimer(t, d, p, tol, dpc) wdk_KeSetTimerEx_at((t), (d), (LONG)(p), (dpc), WDK_SITE)

VOID KeQuerySystemTime(PLARGE_INTEGER CurrentTime);
VOID KeQuerySystemTimePrecise(PLARGE_INTEGER CurrentTime);
ULONGLONG KeQueryInterruptTime(VOID);
ULONG64 KeQueryInterruptTimePrecise(PULONG64 QpcTimeStamp);
ULONGLONG KeQueryUnbiasedInterruptTime(VOID);
ULONG KeQueryTimeIncrement(VOID);
VOID KeQueryTickCount(PLARGE_INTEGER CurrentCount);
LARGE_INTEGER KeQueryPerformanceCounter(PLARGE_INTEGER PerformanceFrequency);
typedef struct _TIME_FIELDS {
    SHORT Year;
    SHORT Month;
    SHORT Day;
    SHORT Hour;
    SHORT Minute;
    SHORT Second;
    SHORT Milliseconds;
    SHORT Weekday;
} TIME_FIELDS, *PTIME_FIELDS;
VOID RtlTimeToTimeFields(PLARGE_INTEGER Time, PTIME_FIELDS TimeFields);
BOOLEAN RtlTimeFieldsToTime(PTIME_FIELDS TimeFields, PLARGE_INTEGER Time);
VOID ExSystemTimeToLocalTime(PLARGE_INTEGER SystemTime, PLARGE_INTEGER LocalTime);
VOID ExLocalTimeToSystemTime(PLARGE_INTEGER LocalTime, PLARGE_INTEGER SystemTime);

/* ======================================================================================
 * Threads and objects
 * ==================================================================================== */
typedef struct _CLIENT_ID {
    HANDLE UniqueProcess;
    HANDLE UniqueThread;
} CLIENT_ID, *PCLIENT_ID;
typedef VOID KSTART_ROUTINE(PVOID StartContext);
typedef KSTART_ROUTINE *PKSTART_ROUTINE;
typedef struct _OBJECT_TYPE *POBJECT_TYPE;
typedef struct _OBJECT_HANDLE_INFORMATION {
    ULONG HandleAttributes;
    ACCESS_MASK GrantedAccess;
} OBJECT_HANDLE_INFORMATION, *POBJECT_HANDLE_INFORMATION;
extern POBJECT_TYPE *PsThreadType;
extern POBJECT_TYPE *PsProcessType;
extern POBJECT_TYPE *ExEventObjectType;
extern POBJECT_TYPE *IoFileObjectType;

#define DELETE 0x00010000L
#define READ_CONTROL 0x00020000L
#define WRITE_DAC 0x00040000L
#define WRITE_OWNER 0x00080000L
#define SYNCHRONIZE 0x00100000L
#define STANDARD_RIGHTS_REQUIRED 0x000F0000L
#define STANDARD_RIGHTS_READ READ_CONTROL
#define STANDARD_RIGHTS_WRITE READ_CONTROL
#define STANDARD_RIGHTS_EXECUTE READ_CONTROL
#define STANDARD_RIGHTS_ALL 0x001F0000L
#define GENERIC_READ 0x80000000L
#define GENERIC_WRITE 0x40000000L
#define GENERIC_EXECUTE 0x20000000L
#define GENERIC_ALL 0x10000000L
#define MAXIMUM_ALLOWED 0x02000000L
#define THREAD_ALL_ACCESS (STANDARD_RIGHTS_REQUIRED | SYNCHRONIZE | 0xFFFF)
#define NtCurrentProcess() ((HANDLE)(LONG_PTR)-1)
#define ZwCurrentProcess() NtCurrentProcess()
#define NtCurrentThread() ((HANDLE)(LONG_PTR)-2)
#define ZwCurrentThread() NtCurrentThread()

NTSTATUS PsCreateSystemThread(PHANDLE ThreadHandle, ULONG DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                              HANDLE ProcessHandle, PCLIENT_ID ClientId, PKSTART_ROUTINE StartRoutine,
                              PVOID StartContext);
NTSTATUS wdk_PsCreateSystemThread_at(PHANDLE ThreadHandle, ULONG DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                                     HANDLE ProcessHandle, PCLIENT_ID ClientId, PKSTART_ROUTINE StartRoutine,
                                     PVOID StartContext, const char *site);
#define PsCreateSystemThread(h, a, o, p, c, r, x) wdk_PsCreateSystemThread_at((h), (a), (o), (p), (c), (r), (x), WDK_SITE)
DECLSPEC_NORETURN NTSTATUS PsTerminateSystemThread(NTSTATUS ExitStatus);
PETHREAD PsGetCurrentThread(VOID);
PKTHREAD KeGetCurrentThread(VOID);
HANDLE PsGetCurrentThreadId(VOID);
HANDLE PsGetCurrentProcessId(VOID);
PEPROCESS PsGetCurrentProcess(VOID);
#define IoGetCurrentProcess PsGetCurrentProcess
BOOLEAN PsIsSystemThread(PETHREAD Thread);
KPRIORITY KeSetPriorityThread(PKTHREAD Thread, KPRIORITY Priority);
KPRIORITY KeQueryPriorityThread(PKTHREAD Thread);
#define LOW_PRIORITY 0
#define LOW_REALTIME_PRIORITY 16
#define HIGH_PRIORITY 31
#define MAXIMUM_PRIORITY 32
NTSTATUS ObReferenceObjectByHandle(HANDLE Handle, ACCESS_MASK DesiredAccess, POBJECT_TYPE ObjectType,
                                   KPROCESSOR_MODE AccessMode, PVOID *Object,
                                   POBJECT_HANDLE_INFORMATION HandleInformation);
LONG_PTR ObfReferenceObject(PVOID Object);
LONG_PTR ObfDereferenceObject(PVOID Object);
#define ObReferenceObject(o) ObfReferenceObject(o)
#define ObDereferenceObject(o) ObfDereferenceObject(o)
#define ObDereferenceObjectWithTag(o, t) ObfDereferenceObject(o)
#define ObReferenceObjectWithTag(o, t) ObfReferenceObject(o)
NTSTATUS ZwClose(HANDLE Handle);
#define NtClose ZwClose

/* ======================================================================================
 * Rundown protection
 * ==================================================================================== */
typedef struct _EX_RUNDOWN_REF {
    union {
        volatile ULONG_PTR Count;
        volatile PVOID Ptr;
    };
} EX_RUNDOWN_REF, *PEX_RUNDOWN_REF;
#define EX_RUNDOWN_ACTIVE 0x1
#define EX_RUNDOWN_COUNT_SHIFT 0x1
#define EX_RUNDOWN_COUNT_INC (1 << EX_RUNDOWN_COUNT_SHIFT)

VOID ExInitializeRundownProtection(PEX_RUNDOWN_REF RunRef);
VOID ExReInitializeRundownProtection(PEX_RUNDOWN_REF RunRef);
BOOLEAN ExAcquireRundownProtection(PEX_RUNDOWN_REF RunRef);
BOOLEAN ExAcquireRundownProtectionEx(PEX_RUNDOWN_REF RunRef, ULONG Count);
VOID ExReleaseRundownProtection(PEX_RUNDOWN_REF RunRef);
VOID ExReleaseRundownProtectionEx(PEX_RUNDOWN_REF RunRef, ULONG Count);
VOID ExWaitForRundownProtectionRelease(PEX_RUNDOWN_REF RunRef);
VOID ExRundownCompleted(PEX_RUNDOWN_REF RunRef);
BOOLEAN wdk_rundown_acquire_at(PEX_RUNDOWN_REF RunRef, ULONG Count, const char *site);
VOID wdk_rundown_release_at(PEX_RUNDOWN_REF RunRef, ULONG Count, const char *site);
VOID wdk_rundown_wait_at(PEX_RUNDOWN_REF RunRef, const char *site);
#define ExAcquireRundownProtection(r) wdk_rundown_acquire_at((r), 1, WDK_SITE)
#define ExAcquireRundownProtectionEx(r, c) wdk_rundown_acquire_at((r), (c), WDK_SITE)
#define ExReleaseRundownProtection(r) wdk_rundown_release_at((r), 1, WDK_SITE)
#define ExReleaseRundownProtectionEx(r, c) wdk_rundown_release_at((r), (c), WDK_SITE)
#define ExWaitForRundownProtectionRelease(r) wdk_rundown_wait_at((r), WDK_SITE)

/* ======================================================================================
 * Interlocked operations (full barriers; the Acquire/Release/NoFence forms are the same)
 * ==================================================================================== */
#define WDK_ATOMIC_ __ATOMIC_SEQ_CST
static inline LONG InterlockedIncrement(LONG volatile *Addend) { return __atomic_add_fetch(Addend, 1, WDK_ATOMIC_); }
static inline LONG InterlockedDecrement(LONG volatile *Addend) { return __atomic_sub_fetch(Addend, 1, WDK_ATOMIC_); }
static inline LONG InterlockedExchange(LONG volatile *Target, LONG Value)
{
    return __atomic_exchange_n(Target, Value, WDK_ATOMIC_);
}
static inline LONG InterlockedExchangeAdd(LONG volatile *Addend, LONG Value)
{
    return __atomic_fetch_add(Addend, Value, WDK_ATOMIC_);
}
static inline LONG InterlockedAdd(LONG volatile *Addend, LONG Value)
{
    return __atomic_add_fetch(Addend, Value, WDK_ATOMIC_);
}
static inline LONG InterlockedCompareExchange(LONG volatile *Destination, LONG Exchange, LONG Comperand)
{
    __atomic_compare_exchange_n(Destination, &Comperand, Exchange, 0, WDK_ATOMIC_, WDK_ATOMIC_);
    return Comperand;
}
static inline LONG InterlockedAnd(LONG volatile *Destination, LONG Value)
{
    return __atomic_fetch_and(Destination, Value, WDK_ATOMIC_);
}
static inline LONG InterlockedOr(LONG volatile *Destination, LONG Value)
{
    return __atomic_fetch_or(Destination, Value, WDK_ATOMIC_);
}
static inline LONG InterlockedXor(LONG volatile *Destination, LONG Value)
{
    return __atomic_fetch_xor(Destination, Value, WDK_ATOMIC_);
}
static inline SHORT InterlockedIncrement16(SHORT volatile *Addend) { return __atomic_add_fetch(Addend, 1, WDK_ATOMIC_); }
static inline SHORT InterlockedDecrement16(SHORT volatile *Addend) { return __atomic_sub_fetch(Addend, 1, WDK_ATOMIC_); }
static inline SHORT InterlockedCompareExchange16(SHORT volatile *Destination, SHORT Exchange, SHORT Comperand)
{
    __atomic_compare_exchange_n(Destination, &Comperand, Exchange, 0, WDK_ATOMIC_, WDK_ATOMIC_);
    return Comperand;
}
static inline CHAR InterlockedExchange8(CHAR volatile *Target, CHAR Value)
{
    return __atomic_exchange_n(Target, Value, WDK_ATOMIC_);
}
static inline CHAR InterlockedOr8(CHAR volatile *Destination, CHAR Value)
{
    return __atomic_fetch_or(Destination, Value, WDK_ATOMIC_);
}
static inline CHAR InterlockedAnd8(CHAR volatile *Destination, CHAR Value)
{
    return __atomic_fetch_and(Destination, Value, WDK_ATOMIC_);
}
static inline LONG64 InterlockedIncrement64(LONG64 volatile *Addend) { return __atomic_add_fetch(Addend, 1, WDK_ATOMIC_); }
static inline LONG64 InterlockedDecrement64(LONG64 volatile *Addend) { return __atomic_sub_fetch(Addend, 1, WDK_ATOMIC_); }
static inline LONG64 InterlockedExchange64(LONG64 volatile *Target, LONG64 Value)
{
    return __atomic_exchange_n(Target, Value, WDK_ATOMIC_);
}
static inline LONG64 InterlockedExchangeAdd64(LONG64 volatile *Addend, LONG64 Value)
{
    return __atomic_fetch_add(Addend, Value, WDK_ATOMIC_);
}
static inline LONG64 InterlockedAdd64(LONG64 volatile *Addend, LONG64 Value)
{
    return __atomic_add_fetch(Addend, Value, WDK_ATOMIC_);
}
static inline LONG64 InterlockedCompareExchange64(LONG64 volatile *Destination, LONG64 Exchange, LONG64 Comperand)
{
    __atomic_compare_exchange_n(Destination, &Comperand, Exchange, 0, WDK_ATOMIC_, WDK_ATOMIC_);
    return Comperand;
}
static inline LONG64 InterlockedAnd64(LONG64 volatile *Destination, LONG64 Value)
{
    return __atomic_fetch_and(Destination, Value, WDK_ATOMIC_);
}
static inline LONG64 InterlockedOr64(LONG64 volatile *Destination, LONG64 Value)
{
    return __atomic_fetch_or(Destination, Value, WDK_ATOMIC_);
}
static inline LONG64 InterlockedXor64(LONG64 volatile *Destination, LONG64 Value)
{
    return __atomic_fetch_xor(Destination, Value, WDK_ATOMIC_);
}
static inline PVOID InterlockedExchangePointer(PVOID volatile *Target, PVOID Value)
{
    return __atomic_exchange_n(Target, Value, WDK_ATOMIC_);
}
static inline PVOID InterlockedCompareExchangePointer(PVOID volatile *Destination, PVOID Exchange, PVOID Comperand)
{
    __atomic_compare_exchange_n(Destination, &Comperand, Exchange, 0, WDK_ATOMIC_, WDK_ATOMIC_);
    return Comperand;
}
static inline BOOLEAN InterlockedBitTestAndSet(LONG volatile *Base, LONG Bit)
{
    LONG mask = (LONG)(1U << (Bit & 31));
    return (__atomic_fetch_or(&Base[Bit >> 5], mask, WDK_ATOMIC_) & mask) != 0;
}
static inline BOOLEAN InterlockedBitTestAndReset(LONG volatile *Base, LONG Bit)
{
    LONG mask = (LONG)(1U << (Bit & 31));
    return (__atomic_fetch_and(&Base[Bit >> 5], ~mask, WDK_ATOMIC_) & mask) != 0;
}
static inline BOOLEAN InterlockedBitTestAndSet64(LONG64 volatile *Base, LONG64 Bit)
{
    LONG64 mask = (LONG64)(1ULL << (Bit & 63));
    return (__atomic_fetch_or(&Base[Bit >> 6], mask, WDK_ATOMIC_) & mask) != 0;
}
static inline BOOLEAN InterlockedBitTestAndReset64(LONG64 volatile *Base, LONG64 Bit)
{
    LONG64 mask = (LONG64)(1ULL << (Bit & 63));
    return (__atomic_fetch_and(&Base[Bit >> 6], ~mask, WDK_ATOMIC_) & mask) != 0;
}
#define InterlockedIncrementAcquire InterlockedIncrement
#define InterlockedIncrementRelease InterlockedIncrement
#define InterlockedIncrementNoFence InterlockedIncrement
#define InterlockedDecrementAcquire InterlockedDecrement
#define InterlockedDecrementRelease InterlockedDecrement
#define InterlockedDecrementNoFence InterlockedDecrement
#define InterlockedExchangeAcquire InterlockedExchange
#define InterlockedExchangeNoFence InterlockedExchange
#define InterlockedExchangeAddAcquire InterlockedExchangeAdd
#define InterlockedExchangeAddRelease InterlockedExchangeAdd
#define InterlockedExchangeAddNoFence InterlockedExchangeAdd
#define InterlockedCompareExchangeAcquire InterlockedCompareExchange
#define InterlockedCompareExchangeRelease InterlockedCompareExchange
#define InterlockedCompareExchangeNoFence InterlockedCompareExchange
#define InterlockedOrAcquire InterlockedOr
#define InterlockedOrRelease InterlockedOr
#define InterlockedOrNoFence InterlockedOr
#define InterlockedAndAcquire InterlockedAnd
#define InterlockedAndRelease InterlockedAnd
#define InterlockedAndNoFence InterlockedAnd
#define InterlockedIncrementAcquire64 InterlockedIncrement64
#define InterlockedIncrementRelease64 InterlockedIncrement64
#define InterlockedIncrementNoFence64 InterlockedIncrement64
#define InterlockedDecrementAcquire64 InterlockedDecrement64
#define InterlockedDecrementRelease64 InterlockedDecrement64
#define InterlockedDecrementNoFence64 InterlockedDecrement64
#define InterlockedCompareExchangeAcquire64 InterlockedCompareExchange64
#define InterlockedCompareExchangeRelease64 InterlockedCompareExchange64
#define InterlockedCompareExchangeNoFence64 InterlockedCompareExchange64
#define InterlockedExchangePointerAcquire InterlockedExchangePointer
#define InterlockedExchangePointerNoFence InterlockedExchangePointer
#define InterlockedCompareExchangePointerAcquire InterlockedCompareExchangePointer
#define InterlockedCompareExchangePointerRelease InterlockedCompareExchangePointer
#define InterlockedCompareExchangePointerNoFence InterlockedCompareExchangePointer
#define InterlockedIncrementSizeT(a) ((SIZE_T)InterlockedIncrement64((LONG64 volatile *)(a)))
#define InterlockedDecrementSizeT(a) ((SIZE_T)InterlockedDecrement64((LONG64 volatile *)(a)))
#define InterlockedExchangeAddSizeT(a, b) ((SIZE_T)InterlockedExchangeAdd64((LONG64 volatile *)(a), (LONG64)(b)))
#define InterlockedIncrementULongPtr(a) ((ULONG_PTR)InterlockedIncrement64((LONG64 volatile *)(a)))
#define InterlockedDecrementULongPtr(a) ((ULONG_PTR)InterlockedDecrement64((LONG64 volatile *)(a)))
#define InterlockedExchangeAddULongPtr(a, b) \
    ((ULONG_PTR)InterlockedExchangeAdd64((LONG64 volatile *)(a), (LONG64)(b)))

static inline LONG ReadAcquire(const LONG volatile *Source) { return __atomic_load_n(Source, __ATOMIC_ACQUIRE); }
static inline LONG ReadNoFence(const LONG volatile *Source) { return __atomic_load_n(Source, __ATOMIC_RELAXED); }
static inline VOID WriteRelease(LONG volatile *Destination, LONG Value)
{
    __atomic_store_n(Destination, Value, __ATOMIC_RELEASE);
}
static inline VOID WriteNoFence(LONG volatile *Destination, LONG Value)
{
    __atomic_store_n(Destination, Value, __ATOMIC_RELAXED);
}
static inline LONG64 ReadAcquire64(const LONG64 volatile *Source) { return __atomic_load_n(Source, __ATOMIC_ACQUIRE); }
static inline LONG64 ReadNoFence64(const LONG64 volatile *Source) { return __atomic_load_n(Source, __ATOMIC_RELAXED); }
static inline VOID WriteRelease64(LONG64 volatile *Destination, LONG64 Value)
{
    __atomic_store_n(Destination, Value, __ATOMIC_RELEASE);
}
static inline VOID WriteNoFence64(LONG64 volatile *Destination, LONG64 Value)
{
    __atomic_store_n(Destination, Value, __ATOMIC_RELAXED);
}
static inline PVOID ReadPointerAcquire(PVOID const volatile *Source)
{
    return __atomic_load_n(Source, __ATOMIC_ACQUIRE);
}
static inline PVOID ReadPointerNoFence(PVOID const volatile *Source)
{
    return __atomic_load_n(Source, __ATOMIC_RELAXED);
}
static inline VOID WritePointerRelease(PVOID volatile *Destination, PVOID Value)
{
    __atomic_store_n(Destination, Value, __ATOMIC_RELEASE);
}
static inline VOID WritePointerNoFence(PVOID volatile *Destination, PVOID Value)
{
    __atomic_store_n(Destination, Value, __ATOMIC_RELAXED);
}
#define MemoryBarrier() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define KeMemoryBarrier() MemoryBarrier()
#define KeMemoryBarrierWithoutFence() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define _ReadWriteBarrier() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define _ReadBarrier() _ReadWriteBarrier()
#define _WriteBarrier() _ReadWriteBarrier()
#if defined(__x86_64__) || defined(__i386__)
#define YieldProcessor() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define YieldProcessor() __asm__ __volatile__("yield")
#else
#define YieldProcessor() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#endif
#define KeYieldProcessor() YieldProcessor()
#define PreFetchCacheLine(l, a) __builtin_prefetch((const void *)(a))
#define PF_TEMPORAL_LEVEL_1 0
#define PF_NON_TEMPORAL_LEVEL_ALL 0

/* ======================================================================================
 * Lists (no locking; the ExInterlocked forms take a spin lock)
 * ==================================================================================== */
static inline VOID InitializeListHead(PLIST_ENTRY ListHead) { ListHead->Flink = ListHead->Blink = ListHead; }
static inline BOOLEAN IsListEmpty(const LIST_ENTRY *ListHead) { return (BOOLEAN)(ListHead->Flink == ListHead); }
static inline BOOLEAN RemoveEntryList(PLIST_ENTRY Entry)
{
    PLIST_ENTRY next = Entry->Flink, prev = Entry->Blink;
    prev->Flink = next;
    next->Blink = prev;
    return (BOOLEAN)(next == prev);
}
static inline PLIST_ENTRY RemoveHeadList(PLIST_ENTRY ListHead)
{
    PLIST_ENTRY entry = ListHead->Flink, next = entry->Flink;
    ListHead->Flink = next;
    next->Blink = ListHead;
    return entry;
}
static inline PLIST_ENTRY RemoveTailList(PLIST_ENTRY ListHead)
{
    PLIST_ENTRY entry = ListHead->Blink, prev = entry->Blink;
    ListHead->Blink = prev;
    prev->Flink = ListHead;
    return entry;
}
static inline VOID InsertTailList(PLIST_ENTRY ListHead, PLIST_ENTRY Entry)
{
    PLIST_ENTRY prev = ListHead->Blink;
    Entry->Flink = ListHead;
    Entry->Blink = prev;
    prev->Flink = Entry;
    ListHead->Blink = Entry;
}
static inline VOID InsertHeadList(PLIST_ENTRY ListHead, PLIST_ENTRY Entry)
{
    PLIST_ENTRY next = ListHead->Flink;
    Entry->Flink = next;
    Entry->Blink = ListHead;
    next->Blink = Entry;
    ListHead->Flink = Entry;
}
static inline VOID AppendTailList(PLIST_ENTRY ListHead, PLIST_ENTRY ListToAppend)
{
    PLIST_ENTRY end = ListHead->Blink;
    ListHead->Blink->Flink = ListToAppend;
    ListHead->Blink = ListToAppend->Blink;
    ListToAppend->Blink->Flink = ListHead;
    ListToAppend->Blink = end;
}
static inline PSINGLE_LIST_ENTRY PopEntryList(PSINGLE_LIST_ENTRY ListHead)
{
    PSINGLE_LIST_ENTRY first = ListHead->Next;
    if (first)
        ListHead->Next = first->Next;
    return first;
}
static inline VOID PushEntryList(PSINGLE_LIST_ENTRY ListHead, PSINGLE_LIST_ENTRY Entry)
{
    Entry->Next = ListHead->Next;
    ListHead->Next = Entry;
}
PLIST_ENTRY ExInterlockedInsertHeadList(PLIST_ENTRY ListHead, PLIST_ENTRY ListEntry, PKSPIN_LOCK Lock);
PLIST_ENTRY ExInterlockedInsertTailList(PLIST_ENTRY ListHead, PLIST_ENTRY ListEntry, PKSPIN_LOCK Lock);
PLIST_ENTRY ExInterlockedRemoveHeadList(PLIST_ENTRY ListHead, PKSPIN_LOCK Lock);
PSINGLE_LIST_ENTRY ExInterlockedPopEntryList(PSINGLE_LIST_ENTRY ListHead, PKSPIN_LOCK Lock);
PSINGLE_LIST_ENTRY ExInterlockedPushEntryList(PSINGLE_LIST_ENTRY ListHead, PSINGLE_LIST_ENTRY ListEntry,
                                              PKSPIN_LOCK Lock);

/* Interlocked singly linked lists: the header holds the first entry and a depth under one lock
 * word (the kit's SLIST is lock-based, not ABA-tagged). */
typedef struct DECLSPEC_ALIGN(16) _SLIST_ENTRY {
    struct _SLIST_ENTRY *Next;
} SLIST_ENTRY, *PSLIST_ENTRY;
typedef union DECLSPEC_ALIGN(16) _SLIST_HEADER {
    struct {
        ULONGLONG Alignment;
        ULONGLONG Region;
    };
    struct {
        PSLIST_ENTRY KitFirst;
        volatile ULONG KitLock;
        USHORT KitDepth;
        USHORT KitReserved;
    };
} SLIST_HEADER, *PSLIST_HEADER;
VOID InitializeSListHead(PSLIST_HEADER SListHead);
PSLIST_ENTRY InterlockedPushEntrySList(PSLIST_HEADER ListHead, PSLIST_ENTRY ListEntry);
PSLIST_ENTRY InterlockedPopEntrySList(PSLIST_HEADER ListHead);
PSLIST_ENTRY InterlockedFlushSList(PSLIST_HEADER ListHead);
USHORT QueryDepthSList(PSLIST_HEADER ListHead);
#define ExInitializeSListHead InitializeSListHead
#define ExInterlockedPushEntrySList(h, e, l) InterlockedPushEntrySList((h), (e))
#define ExInterlockedPopEntrySList(h, l) InterlockedPopEntrySList((h))
#define ExInterlockedFlushSList(h) InterlockedFlushSList((h))
#define ExQueryDepthSList(h) QueryDepthSList((h))
#define FirstEntrySList(h) ((h)->KitFirst)

/* ======================================================================================
 * Memory
 * ==================================================================================== */
#define RtlEqualMemory(Destination, Source, Length) (!memcmp((Destination), (Source), (Length)))
#define RtlMoveMemory(Destination, Source, Length) memmove((Destination), (Source), (Length))
#define RtlCopyMemory(Destination, Source, Length) memcpy((Destination), (Source), (Length))
#define RtlCopyBytes RtlCopyMemory
#define RtlFillMemory(Destination, Length, Fill) memset((Destination), (Fill), (Length))
#define RtlFillBytes RtlFillMemory
#define RtlZeroMemory(Destination, Length) memset((Destination), 0, (Length))
#define RtlZeroBytes RtlZeroMemory
#define RtlSecureZeroMemory(Destination, Length) wdk_secure_zero((Destination), (Length))
#define RtlCopyMemoryNonTemporal RtlCopyMemory
PVOID wdk_secure_zero(PVOID Destination, SIZE_T Length);
SIZE_T RtlCompareMemory(const VOID *Source1, const VOID *Source2, SIZE_T Length);
SIZE_T RtlCompareMemoryUlong(PVOID Source, SIZE_T Length, ULONG Pattern);
VOID RtlFillMemoryUlong(PVOID Destination, SIZE_T Length, ULONG Pattern);
#define RtlUshortByteSwap(x) __builtin_bswap16((USHORT)(x))
#define RtlUlongByteSwap(x) __builtin_bswap32((ULONG)(x))
#define RtlUlonglongByteSwap(x) __builtin_bswap64((ULONGLONG)(x))
ULONG RtlRandomEx(PULONG Seed);
#define RtlRandom RtlRandomEx

/* ======================================================================================
 * Counted strings
 * ==================================================================================== */
VOID RtlInitUnicodeString(PUNICODE_STRING DestinationString, PCWSTR SourceString);
NTSTATUS RtlInitUnicodeStringEx(PUNICODE_STRING DestinationString, PCWSTR SourceString);
VOID RtlInitAnsiString(PANSI_STRING DestinationString, PCSZ SourceString);
VOID RtlInitString(PSTRING DestinationString, PCSZ SourceString);
VOID RtlFreeUnicodeString(PUNICODE_STRING UnicodeString);
VOID RtlFreeAnsiString(PANSI_STRING AnsiString);
VOID RtlCopyUnicodeString(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString);
VOID RtlCopyString(PSTRING DestinationString, const STRING *SourceString);
NTSTATUS RtlAppendUnicodeStringToString(PUNICODE_STRING Destination, PCUNICODE_STRING Source);
NTSTATUS RtlAppendUnicodeToString(PUNICODE_STRING Destination, PCWSTR Source);
BOOLEAN RtlEqualUnicodeString(PCUNICODE_STRING String1, PCUNICODE_STRING String2, BOOLEAN CaseInSensitive);
LONG RtlCompareUnicodeString(PCUNICODE_STRING String1, PCUNICODE_STRING String2, BOOLEAN CaseInSensitive);
BOOLEAN RtlPrefixUnicodeString(PCUNICODE_STRING String1, PCUNICODE_STRING String2, BOOLEAN CaseInSensitive);
BOOLEAN RtlEqualString(const STRING *String1, const STRING *String2, BOOLEAN CaseInSensitive);
NTSTATUS RtlUnicodeStringToAnsiString(PANSI_STRING DestinationString, PCUNICODE_STRING SourceString,
                                      BOOLEAN AllocateDestinationString);
NTSTATUS RtlAnsiStringToUnicodeString(PUNICODE_STRING DestinationString, PCANSI_STRING SourceString,
                                      BOOLEAN AllocateDestinationString);
NTSTATUS RtlUpcaseUnicodeString(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString,
                                BOOLEAN AllocateDestinationString);
NTSTATUS RtlDowncaseUnicodeString(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString,
                                  BOOLEAN AllocateDestinationString);
WCHAR RtlUpcaseUnicodeChar(WCHAR SourceCharacter);
WCHAR RtlDowncaseUnicodeChar(WCHAR SourceCharacter);
NTSTATUS RtlIntegerToUnicodeString(ULONG Value, ULONG Base, PUNICODE_STRING String);
NTSTATUS RtlInt64ToUnicodeString(ULONGLONG Value, ULONG Base, PUNICODE_STRING String);
NTSTATUS RtlUnicodeStringToInteger(PCUNICODE_STRING String, ULONG Base, PULONG Value);
NTSTATUS RtlCharToInteger(PCSZ String, ULONG Base, PULONG Value);
NTSTATUS RtlStringFromGUID(REFGUID Guid, PUNICODE_STRING GuidString);
NTSTATUS RtlGUIDFromString(PCUNICODE_STRING GuidString, GUID *Guid);
NTSTATUS RtlUTF8ToUnicodeN(PWSTR UnicodeStringDestination, ULONG UnicodeStringMaxByteCount,
                           PULONG UnicodeStringActualByteCount, PCCH UTF8StringSource, ULONG UTF8StringByteCount);
NTSTATUS RtlUnicodeToUTF8N(PCHAR UTF8StringDestination, ULONG UTF8StringMaxByteCount,
                           PULONG UTF8StringActualByteCount, PCWCH UnicodeStringSource, ULONG UnicodeStringByteCount);
ULONG RtlxUnicodeStringToAnsiSize(PCUNICODE_STRING UnicodeString);
#define RtlUnicodeStringToAnsiSize(s) RtlxUnicodeStringToAnsiSize(s)

/* ======================================================================================
 * Processors and NUMA nodes (one group per 64 logical CPUs)
 * ==================================================================================== */
#define ALL_PROCESSOR_GROUPS 0xffff
#define MAXIMUM_PROC_PER_GROUP 64
#define MAXIMUM_PROCESSORS MAXIMUM_PROC_PER_GROUP
#define KeQueryActiveProcessorCountCompatible KeQueryActiveProcessorCount
ULONG KeQueryActiveProcessorCountEx(USHORT GroupNumber);
ULONG KeQueryActiveProcessorCount(PKAFFINITY ActiveProcessors);
KAFFINITY KeQueryActiveProcessors(VOID);
ULONG KeQueryMaximumProcessorCountEx(USHORT GroupNumber);
ULONG KeQueryMaximumProcessorCount(VOID);
USHORT KeQueryActiveGroupCount(VOID);
USHORT KeQueryMaximumGroupCount(VOID);
KAFFINITY KeQueryGroupAffinity(USHORT GroupNumber);
ULONG KeGetCurrentProcessorNumberEx(PPROCESSOR_NUMBER ProcNumber);
ULONG KeGetCurrentProcessorNumber(VOID);
#define KeGetCurrentProcessorIndex() KeGetCurrentProcessorNumberEx(NULL)
NTSTATUS KeGetProcessorNumberFromIndex(ULONG ProcIndex, PPROCESSOR_NUMBER ProcNumber);
ULONG KeGetProcessorIndexFromNumber(PPROCESSOR_NUMBER ProcNumber);
USHORT KeQueryHighestNodeNumber(VOID);
USHORT KeGetCurrentNodeNumber(VOID);
VOID KeQueryNodeActiveAffinity(USHORT NodeNumber, PGROUP_AFFINITY Affinity, PUSHORT Count);
VOID KeSetSystemGroupAffinityThread(PGROUP_AFFINITY Affinity, PGROUP_AFFINITY PreviousAffinity);
VOID KeRevertToUserGroupAffinityThread(PGROUP_AFFINITY PreviousAffinity);
VOID KeSetSystemAffinityThread(KAFFINITY Affinity);
KAFFINITY KeSetSystemAffinityThreadEx(KAFFINITY Affinity);
VOID KeRevertToUserAffinityThread(VOID);
VOID KeRevertToUserAffinityThreadEx(KAFFINITY Affinity);

/* ======================================================================================
 * Driver, device and IRP model
 * ==================================================================================== */
typedef ULONG DEVICE_TYPE;
typedef PVOID PSECURITY_DESCRIPTOR;
struct _DEVICE_OBJECT;
struct _DRIVER_OBJECT;
struct _IO_STACK_LOCATION;
typedef struct _FILE_OBJECT *PFILE_OBJECT;
typedef struct _FAST_IO_DISPATCH *PFAST_IO_DISPATCH;

typedef struct _IO_STATUS_BLOCK {
    union {
        NTSTATUS Status;
        PVOID Pointer;
    };
    ULONG_PTR Information;
} IO_STATUS_BLOCK, *PIO_STATUS_BLOCK;

typedef NTSTATUS DRIVER_INITIALIZE(struct _DRIVER_OBJECT *DriverObject, PUNICODE_STRING RegistryPath);
typedef DRIVER_INITIALIZE *PDRIVER_INITIALIZE;
typedef VOID DRIVER_UNLOAD(struct _DRIVER_OBJECT *DriverObject);
typedef DRIVER_UNLOAD *PDRIVER_UNLOAD;
typedef NTSTATUS DRIVER_DISPATCH(struct _DEVICE_OBJECT *DeviceObject, struct _IRP *Irp);
typedef DRIVER_DISPATCH *PDRIVER_DISPATCH;
typedef DRIVER_DISPATCH DRIVER_DISPATCH_RAISED;
typedef DRIVER_DISPATCH DRIVER_DISPATCH_PAGED;
typedef NTSTATUS DRIVER_ADD_DEVICE(struct _DRIVER_OBJECT *DriverObject, struct _DEVICE_OBJECT *PhysicalDeviceObject);
typedef DRIVER_ADD_DEVICE *PDRIVER_ADD_DEVICE;
typedef VOID DRIVER_STARTIO(struct _DEVICE_OBJECT *DeviceObject, struct _IRP *Irp);
typedef DRIVER_STARTIO *PDRIVER_STARTIO;
typedef VOID DRIVER_CANCEL(struct _DEVICE_OBJECT *DeviceObject, struct _IRP *Irp);
typedef DRIVER_CANCEL *PDRIVER_CANCEL;
typedef NTSTATUS IO_COMPLETION_ROUTINE(struct _DEVICE_OBJECT *DeviceObject, struct _IRP *Irp, PVOID Context);
typedef IO_COMPLETION_ROUTINE *PIO_COMPLETION_ROUTINE;

#define IRP_MJ_CREATE 0x00
#define IRP_MJ_CREATE_NAMED_PIPE 0x01
#define IRP_MJ_CLOSE 0x02
#define IRP_MJ_READ 0x03
#define IRP_MJ_WRITE 0x04
#define IRP_MJ_QUERY_INFORMATION 0x05
#define IRP_MJ_SET_INFORMATION 0x06
#define IRP_MJ_QUERY_EA 0x07
#define IRP_MJ_SET_EA 0x08
#define IRP_MJ_FLUSH_BUFFERS 0x09
#define IRP_MJ_QUERY_VOLUME_INFORMATION 0x0a
#define IRP_MJ_SET_VOLUME_INFORMATION 0x0b
#define IRP_MJ_DIRECTORY_CONTROL 0x0c
#define IRP_MJ_FILE_SYSTEM_CONTROL 0x0d
#define IRP_MJ_DEVICE_CONTROL 0x0e
#define IRP_MJ_INTERNAL_DEVICE_CONTROL 0x0f
#define IRP_MJ_SCSI IRP_MJ_INTERNAL_DEVICE_CONTROL
#define IRP_MJ_SHUTDOWN 0x10
#define IRP_MJ_LOCK_CONTROL 0x11
#define IRP_MJ_CLEANUP 0x12
#define IRP_MJ_CREATE_MAILSLOT 0x13
#define IRP_MJ_QUERY_SECURITY 0x14
#define IRP_MJ_SET_SECURITY 0x15
#define IRP_MJ_POWER 0x16
#define IRP_MJ_SYSTEM_CONTROL 0x17
#define IRP_MJ_DEVICE_CHANGE 0x18
#define IRP_MJ_QUERY_QUOTA 0x19
#define IRP_MJ_SET_QUOTA 0x1a
#define IRP_MJ_PNP 0x1b
#define IRP_MJ_PNP_POWER IRP_MJ_PNP
#define IRP_MJ_MAXIMUM_FUNCTION 0x1b

typedef struct _DRIVER_EXTENSION {
    struct _DRIVER_OBJECT *DriverObject;
    PDRIVER_ADD_DEVICE AddDevice;
    ULONG Count;
    UNICODE_STRING ServiceKeyName;
} DRIVER_EXTENSION, *PDRIVER_EXTENSION;

typedef struct _DRIVER_OBJECT {
    CSHORT Type;
    CSHORT Size;
    struct _DEVICE_OBJECT *DeviceObject;
    ULONG Flags;
    PVOID DriverStart;
    ULONG DriverSize;
    PVOID DriverSection;
    PDRIVER_EXTENSION DriverExtension;
    UNICODE_STRING DriverName;
    PUNICODE_STRING HardwareDatabase;
    PFAST_IO_DISPATCH FastIoDispatch;
    PDRIVER_INITIALIZE DriverInit;
    PDRIVER_STARTIO DriverStartIo;
    PDRIVER_UNLOAD DriverUnload;
    PDRIVER_DISPATCH MajorFunction[IRP_MJ_MAXIMUM_FUNCTION + 1];
} DRIVER_OBJECT, *PDRIVER_OBJECT;

typedef struct DECLSPEC_ALIGN(16) _DEVICE_OBJECT {
    CSHORT Type;
    USHORT Size;
    LONG ReferenceCount;
    struct _DRIVER_OBJECT *DriverObject;
    struct _DEVICE_OBJECT *NextDevice;
    struct _DEVICE_OBJECT *AttachedDevice;
    struct _IRP *CurrentIrp;
    PVOID Timer;
    ULONG Flags;
    ULONG Characteristics;
    PVOID Vpb;
    PVOID DeviceExtension;
    DEVICE_TYPE DeviceType;
    CCHAR StackSize;
    union {
        LIST_ENTRY ListEntry;
        ULONG_PTR Wcb[9];
    } Queue;
    ULONG AlignmentRequirement;
    ULONG_PTR DeviceQueue[5];
    KDPC Dpc;
    ULONG ActiveThreadCount;
    PSECURITY_DESCRIPTOR SecurityDescriptor;
    KEVENT DeviceLock;
    USHORT SectorSize;
    USHORT Spare1;
    PVOID DeviceObjectExtension;
    PVOID Reserved;
} DEVICE_OBJECT, *PDEVICE_OBJECT;

typedef struct _IO_STACK_LOCATION {
    UCHAR MajorFunction;
    UCHAR MinorFunction;
    UCHAR Flags;
    UCHAR Control;
    union {
        struct {
            PVOID SecurityContext;
            ULONG Options;
            USHORT FileAttributes;
            USHORT ShareAccess;
            ULONG EaLength;
        } Create;
        struct {
            ULONG Length;
            ULONG Key;
            ULONG Flags;
            LARGE_INTEGER ByteOffset;
        } Read;
        struct {
            ULONG Length;
            ULONG Key;
            ULONG Flags;
            LARGE_INTEGER ByteOffset;
        } Write;
        struct {
            ULONG OutputBufferLength;
            ULONG InputBufferLength;
            ULONG IoControlCode;
            PVOID Type3InputBuffer;
        } DeviceIoControl;
        struct {
            PVOID Argument1;
            PVOID Argument2;
            PVOID Argument3;
            PVOID Argument4;
        } Others;
    } Parameters;
    PDEVICE_OBJECT DeviceObject;
    PFILE_OBJECT FileObject;
    PIO_COMPLETION_ROUTINE CompletionRoutine;
    PVOID Context;
} IO_STACK_LOCATION, *PIO_STACK_LOCATION;

typedef struct DECLSPEC_ALIGN(16) _IRP {
    CSHORT Type;
    USHORT Size;
    PMDL MdlAddress;
    ULONG Flags;
    union {
        struct _IRP *MasterIrp;
        volatile LONG IrpCount;
        PVOID SystemBuffer;
    } AssociatedIrp;
    LIST_ENTRY ThreadListEntry;
    IO_STATUS_BLOCK IoStatus;
    KPROCESSOR_MODE RequestorMode;
    BOOLEAN PendingReturned;
    CHAR StackCount;
    CHAR CurrentLocation;
    BOOLEAN Cancel;
    KIRQL CancelIrql;
    CCHAR ApcEnvironment;
    UCHAR AllocationFlags;
    PIO_STATUS_BLOCK UserIosb;
    PKEVENT UserEvent;
    union {
        struct {
            PVOID UserApcRoutine;
            PVOID UserApcContext;
        } AsynchronousParameters;
        LARGE_INTEGER AllocationSize;
    } Overlay;
    volatile PDRIVER_CANCEL CancelRoutine;
    PVOID UserBuffer;
    union {
        struct {
            union {
                ULONG_PTR DeviceQueueEntry[3];
                struct {
                    PVOID DriverContext[4];
                };
            };
            PETHREAD Thread;
            PCHAR AuxiliaryBuffer;
            struct {
                LIST_ENTRY ListEntry;
                union {
                    struct _IO_STACK_LOCATION *CurrentStackLocation;
                    ULONG PacketType;
                };
            };
            PFILE_OBJECT OriginalFileObject;
        } Overlay;
        ULONG_PTR Apc[11];
        PVOID CompletionKey;
    } Tail;
} IRP, *PIRP;

#define SL_PENDING_RETURNED 0x01
#define SL_ERROR_RETURNED 0x02
#define SL_INVOKE_ON_CANCEL 0x20
#define SL_INVOKE_ON_SUCCESS 0x40
#define SL_INVOKE_ON_ERROR 0x80

#define DO_VERIFY_VOLUME 0x00000002
#define DO_BUFFERED_IO 0x00000004
#define DO_EXCLUSIVE 0x00000008
#define DO_DIRECT_IO 0x00000010
#define DO_MAP_IO_BUFFER 0x00000020
#define DO_DEVICE_INITIALIZING 0x00000080
#define DO_SHUTDOWN_REGISTERED 0x00000800
#define DO_BUS_ENUMERATED_DEVICE 0x00001000
#define DO_POWER_PAGABLE 0x00002000
#define DO_POWER_INRUSH 0x00004000

#define FILE_DEVICE_BEEP 0x00000001
#define FILE_DEVICE_DISK 0x00000007
#define FILE_DEVICE_NETWORK 0x00000012
#define FILE_DEVICE_NULL 0x00000015
#define FILE_DEVICE_TRANSPORT 0x00000021
#define FILE_DEVICE_UNKNOWN 0x00000022
#define FILE_DEVICE_NETWORK_REDIRECTOR 0x00000028
#define FILE_DEVICE_SECURE_OPEN 0x00000100
#define FILE_AUTOGENERATED_DEVICE_NAME 0x00000080
#define FILE_DEVICE_IS_MOUNTED 0x00000020
#define FILE_REMOTE_DEVICE 0x00000010
#define FILE_VIRTUAL_VOLUME 0x00000040

#define METHOD_BUFFERED 0
#define METHOD_IN_DIRECT 1
#define METHOD_OUT_DIRECT 2
#define METHOD_NEITHER 3
#define FILE_ANY_ACCESS 0
#define FILE_SPECIAL_ACCESS FILE_ANY_ACCESS
#define FILE_READ_ACCESS 0x0001
#define FILE_WRITE_ACCESS 0x0002
#define FILE_READ_DATA 0x0001
#define FILE_WRITE_DATA 0x0002
#define FILE_ALL_ACCESS (STANDARD_RIGHTS_REQUIRED | SYNCHRONIZE | 0x1FF)
#define CTL_CODE(DeviceType, Function, Method, Access) \
    (((DeviceType) << 16) | ((Access) << 14) | ((Function) << 2) | (Method))
#define DEVICE_TYPE_FROM_CTL_CODE(ctrlCode) (((DWORD)(ctrlCode & 0xffff0000)) >> 16)
#define METHOD_FROM_CTL_CODE(ctrlCode) ((DWORD)(ctrlCode & 3))

static inline PIO_STACK_LOCATION IoGetCurrentIrpStackLocation(PIRP Irp)
{
    return Irp->Tail.Overlay.CurrentStackLocation;
}
static inline PIO_STACK_LOCATION IoGetNextIrpStackLocation(PIRP Irp)
{
    return Irp->Tail.Overlay.CurrentStackLocation - 1;
}
static inline VOID IoSetNextIrpStackLocation(PIRP Irp)
{
    Irp->CurrentLocation--;
    Irp->Tail.Overlay.CurrentStackLocation--;
}
static inline VOID IoSkipCurrentIrpStackLocation(PIRP Irp)
{
    Irp->CurrentLocation++;
    Irp->Tail.Overlay.CurrentStackLocation++;
}
static inline VOID IoCopyCurrentIrpStackLocationToNext(PIRP Irp)
{
    PIO_STACK_LOCATION cur = IoGetCurrentIrpStackLocation(Irp), next = IoGetNextIrpStackLocation(Irp);
    memcpy(next, cur, FIELD_OFFSET(IO_STACK_LOCATION, CompletionRoutine));
    next->Control = 0;
}
static inline VOID IoMarkIrpPending(PIRP Irp) { IoGetCurrentIrpStackLocation(Irp)->Control |= SL_PENDING_RETURNED; }
static inline VOID IoSetCompletionRoutine(PIRP Irp, PIO_COMPLETION_ROUTINE CompletionRoutine, PVOID Context,
                                          BOOLEAN InvokeOnSuccess, BOOLEAN InvokeOnError, BOOLEAN InvokeOnCancel)
{
    PIO_STACK_LOCATION sl = IoGetNextIrpStackLocation(Irp);
    sl->CompletionRoutine = CompletionRoutine;
    sl->Context = Context;
    sl->Control = 0;
    if (InvokeOnSuccess)
        sl->Control = SL_INVOKE_ON_SUCCESS;
    if (InvokeOnError)
        sl->Control |= SL_INVOKE_ON_ERROR;
    if (InvokeOnCancel)
        sl->Control |= SL_INVOKE_ON_CANCEL;
}
static inline PDRIVER_CANCEL IoSetCancelRoutine(PIRP Irp, PDRIVER_CANCEL CancelRoutine)
{
    return (PDRIVER_CANCEL)InterlockedExchangePointer((PVOID volatile *)&Irp->CancelRoutine, (PVOID)CancelRoutine);
}
static inline SIZE_T IoSizeOfIrp(CCHAR StackSize)
{
    return sizeof(IRP) + (SIZE_T)StackSize * sizeof(IO_STACK_LOCATION);
}

VOID IofCompleteRequest(PIRP Irp, CCHAR PriorityBoost);
#define IoCompleteRequest(a, b) IofCompleteRequest((a), (b))
NTSTATUS IofCallDriver(PDEVICE_OBJECT DeviceObject, PIRP Irp);
#define IoCallDriver(a, b) IofCallDriver((a), (b))
PIRP IoAllocateIrp(CCHAR StackSize, BOOLEAN ChargeQuota);
VOID IoFreeIrp(PIRP Irp);
VOID IoInitializeIrp(PIRP Irp, USHORT PacketSize, CCHAR StackSize);
VOID IoReuseIrp(PIRP Irp, NTSTATUS Iostatus);
BOOLEAN IoCancelIrp(PIRP Irp);
VOID IoAcquireCancelSpinLock(PKIRQL Irql);
VOID IoReleaseCancelSpinLock(KIRQL Irql);
PIRP IoBuildDeviceIoControlRequest(ULONG IoControlCode, PDEVICE_OBJECT DeviceObject, PVOID InputBuffer,
                                   ULONG InputBufferLength, PVOID OutputBuffer, ULONG OutputBufferLength,
                                   BOOLEAN InternalDeviceIoControl, PKEVENT Event, PIO_STATUS_BLOCK IoStatusBlock);

NTSTATUS IoCreateDevice(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                        DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, BOOLEAN Exclusive,
                        PDEVICE_OBJECT *DeviceObject);
NTSTATUS wdk_IoCreateDevice_at(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                               DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, BOOLEAN Exclusive,
                               PDEVICE_OBJECT *DeviceObject, const char *site);
#define IoCreateDevice(d, e, n, t, c, x, o) wdk_IoCreateDevice_at((d), (e), (n), (t), (c), (x), (o), WDK_SITE)
VOID IoDeleteDevice(PDEVICE_OBJECT DeviceObject);
NTSTATUS IoCreateSymbolicLink(PUNICODE_STRING SymbolicLinkName, PUNICODE_STRING DeviceName);
NTSTATUS IoDeleteSymbolicLink(PUNICODE_STRING SymbolicLinkName);
BOOLEAN IoIsWdmVersionAvailable(UCHAR MajorVersion, UCHAR MinorVersion);
PVOID IoGetDriverObjectExtension(PDRIVER_OBJECT DriverObject, PVOID ClientIdentificationAddress);
NTSTATUS IoAllocateDriverObjectExtension(PDRIVER_OBJECT DriverObject, PVOID ClientIdentificationAddress,
                                         ULONG DriverObjectExtensionSize, PVOID *DriverObjectExtension);

/* Work items */
typedef struct _IO_WORKITEM *PIO_WORKITEM;
typedef VOID IO_WORKITEM_ROUTINE(PDEVICE_OBJECT DeviceObject, PVOID Context);
typedef IO_WORKITEM_ROUTINE *PIO_WORKITEM_ROUTINE;
typedef VOID IO_WORKITEM_ROUTINE_EX(PVOID IoObject, PVOID Context, PIO_WORKITEM IoWorkItem);
typedef IO_WORKITEM_ROUTINE_EX *PIO_WORKITEM_ROUTINE_EX;
typedef enum _WORK_QUEUE_TYPE {
    CriticalWorkQueue, DelayedWorkQueue, HyperCriticalWorkQueue, NormalWorkQueue, BackgroundWorkQueue,
    RealTimeWorkQueue, SuperCriticalWorkQueue, MaximumWorkQueue, CustomPriorityWorkQueue = 32
} WORK_QUEUE_TYPE;
typedef VOID WORKER_THREAD_ROUTINE(PVOID Parameter);
typedef WORKER_THREAD_ROUTINE *PWORKER_THREAD_ROUTINE;
typedef struct _WORK_QUEUE_ITEM {
    LIST_ENTRY List;
    PWORKER_THREAD_ROUTINE WorkerRoutine;
    volatile PVOID Parameter;
} WORK_QUEUE_ITEM, *PWORK_QUEUE_ITEM;
#define ExInitializeWorkItem(Item, Routine, Context) \
    { \
        (Item)->WorkerRoutine = (Routine); \
        (Item)->Parameter = (Context); \
        (Item)->List.Flink = NULL; \
    }

PIO_WORKITEM IoAllocateWorkItem(PDEVICE_OBJECT DeviceObject);
PIO_WORKITEM wdk_IoAllocateWorkItem_at(PVOID IoObject, const char *site);
#define IoAllocateWorkItem(d) wdk_IoAllocateWorkItem_at((d), WDK_SITE)
VOID IoFreeWorkItem(PIO_WORKITEM IoWorkItem);
VOID IoQueueWorkItem(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE WorkerRoutine, WORK_QUEUE_TYPE QueueType,
                     PVOID Context);
VOID IoQueueWorkItemEx(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE_EX WorkerRoutine, WORK_QUEUE_TYPE QueueType,
                       PVOID Context);
BOOLEAN IoTryQueueWorkItem(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE_EX WorkerRoutine,
                           WORK_QUEUE_TYPE QueueType, PVOID Context);
ULONG IoSizeofWorkItem(VOID);
VOID IoInitializeWorkItem(PVOID IoObject, PIO_WORKITEM IoWorkItem);
VOID IoUninitializeWorkItem(PIO_WORKITEM IoWorkItem);
VOID ExQueueWorkItem(PWORK_QUEUE_ITEM WorkItem, WORK_QUEUE_TYPE QueueType);

/* ======================================================================================
 * Registry (the driver's Parameters come from ndkdrv --param)
 * ==================================================================================== */
#define REG_NONE 0
#define REG_SZ 1
#define REG_EXPAND_SZ 2
#define REG_BINARY 3
#define REG_DWORD 4
#define REG_DWORD_LITTLE_ENDIAN 4
#define REG_DWORD_BIG_ENDIAN 5
#define REG_LINK 6
#define REG_MULTI_SZ 7
#define REG_QWORD 11
#define REG_QWORD_LITTLE_ENDIAN 11
#define KEY_QUERY_VALUE 0x0001
#define KEY_SET_VALUE 0x0002
#define KEY_CREATE_SUB_KEY 0x0004
#define KEY_ENUMERATE_SUB_KEYS 0x0008
#define KEY_NOTIFY 0x0010
#define KEY_CREATE_LINK 0x0020
#define KEY_WOW64_64KEY 0x0100
#define KEY_WOW64_32KEY 0x0200
#define KEY_READ 0x20019
#define KEY_WRITE 0x20006
#define KEY_EXECUTE KEY_READ
#define KEY_ALL_ACCESS 0xF003F
#define REG_OPTION_NON_VOLATILE 0x00000000L
#define REG_OPTION_VOLATILE 0x00000001L
#define REG_CREATED_NEW_KEY 0x00000001L
#define REG_OPENED_EXISTING_KEY 0x00000002L
#define PLUGPLAY_REGKEY_DEVICE 1
#define PLUGPLAY_REGKEY_DRIVER 2
#define PLUGPLAY_REGKEY_CURRENT_HWPROFILE 4

typedef enum _KEY_VALUE_INFORMATION_CLASS {
    KeyValueBasicInformation,
    KeyValueFullInformation,
    KeyValuePartialInformation,
    KeyValueFullInformationAlign64,
    KeyValuePartialInformationAlign64,
    KeyValueLayerInformation,
    MaxKeyValueInfoClass
} KEY_VALUE_INFORMATION_CLASS;
typedef struct _KEY_VALUE_BASIC_INFORMATION {
    ULONG TitleIndex;
    ULONG Type;
    ULONG NameLength;
    WCHAR Name[1];
} KEY_VALUE_BASIC_INFORMATION, *PKEY_VALUE_BASIC_INFORMATION;
typedef struct _KEY_VALUE_FULL_INFORMATION {
    ULONG TitleIndex;
    ULONG Type;
    ULONG DataOffset;
    ULONG DataLength;
    ULONG NameLength;
    WCHAR Name[1];
} KEY_VALUE_FULL_INFORMATION, *PKEY_VALUE_FULL_INFORMATION;
typedef struct _KEY_VALUE_PARTIAL_INFORMATION {
    ULONG TitleIndex;
    ULONG Type;
    ULONG DataLength;
    UCHAR Data[1];
} KEY_VALUE_PARTIAL_INFORMATION, *PKEY_VALUE_PARTIAL_INFORMATION;

typedef enum _DRIVER_REGKEY_TYPE {
    DriverRegKeyParameters,
    DriverRegKeyPersistentState,
    DriverRegKeySharedPersistentState
} DRIVER_REGKEY_TYPE, *PDRIVER_REGKEY_TYPE;

NTSTATUS ZwOpenKey(PHANDLE KeyHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes);
NTSTATUS ZwCreateKey(PHANDLE KeyHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                     ULONG TitleIndex, PUNICODE_STRING Class, ULONG CreateOptions, PULONG Disposition);
NTSTATUS ZwQueryValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName,
                         KEY_VALUE_INFORMATION_CLASS KeyValueInformationClass, PVOID KeyValueInformation,
                         ULONG Length, PULONG ResultLength);
NTSTATUS ZwSetValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName, ULONG TitleIndex, ULONG Type, PVOID Data,
                       ULONG DataSize);
NTSTATUS ZwDeleteValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName);
NTSTATUS IoOpenDeviceRegistryKey(PDEVICE_OBJECT DeviceObject, ULONG DevInstKeyType, ACCESS_MASK DesiredAccess,
                                 PHANDLE DevInstRegKey);
NTSTATUS IoOpenDriverRegistryKey(PDRIVER_OBJECT DriverObject, DRIVER_REGKEY_TYPE RegKeyType,
                                 ACCESS_MASK DesiredAccess, ULONG Flags, PHANDLE DriverRegKey);
#define NtOpenKey ZwOpenKey
#define NtQueryValueKey ZwQueryValueKey

typedef NTSTATUS RTL_QUERY_REGISTRY_ROUTINE(PWSTR ValueName, ULONG ValueType, PVOID ValueData, ULONG ValueLength,
                                            PVOID Context, PVOID EntryContext);
typedef RTL_QUERY_REGISTRY_ROUTINE *PRTL_QUERY_REGISTRY_ROUTINE;
typedef struct _RTL_QUERY_REGISTRY_TABLE {
    PRTL_QUERY_REGISTRY_ROUTINE QueryRoutine;
    ULONG Flags;
    PWSTR Name;
    PVOID EntryContext;
    ULONG DefaultType;
    PVOID DefaultData;
    ULONG DefaultLength;
} RTL_QUERY_REGISTRY_TABLE, *PRTL_QUERY_REGISTRY_TABLE;
#define RTL_QUERY_REGISTRY_SUBKEY 0x00000001
#define RTL_QUERY_REGISTRY_TOPKEY 0x00000002
#define RTL_QUERY_REGISTRY_REQUIRED 0x00000004
#define RTL_QUERY_REGISTRY_NOVALUE 0x00000008
#define RTL_QUERY_REGISTRY_NOEXPAND 0x00000010
#define RTL_QUERY_REGISTRY_DIRECT 0x00000020
#define RTL_QUERY_REGISTRY_DELETE 0x00000040
#define RTL_QUERY_REGISTRY_NOSTRING 0x00000080
#define RTL_QUERY_REGISTRY_TYPECHECK 0x00000100
#define RTL_QUERY_REGISTRY_TYPECHECK_SHIFT 24
#define RTL_REGISTRY_ABSOLUTE 0
#define RTL_REGISTRY_SERVICES 1
#define RTL_REGISTRY_CONTROL 2
#define RTL_REGISTRY_WINDOWS_NT 3
#define RTL_REGISTRY_DEVICEMAP 4
#define RTL_REGISTRY_USER 5
#define RTL_REGISTRY_MAXIMUM 6
#define RTL_REGISTRY_HANDLE 0x40000000
#define RTL_REGISTRY_OPTIONAL 0x80000000
NTSTATUS RtlQueryRegistryValues(ULONG RelativeTo, PCWSTR Path, PRTL_QUERY_REGISTRY_TABLE QueryTable, PVOID Context,
                                PVOID Environment);
NTSTATUS RtlQueryRegistryValuesEx(ULONG RelativeTo, PCWSTR Path, PRTL_QUERY_REGISTRY_TABLE QueryTable,
                                  PVOID Context, PVOID Environment);
NTSTATUS RtlWriteRegistryValue(ULONG RelativeTo, PCWSTR Path, PCWSTR ValueName, ULONG ValueType, PVOID ValueData,
                               ULONG ValueLength);

/* ======================================================================================
 * System information
 * ==================================================================================== */
typedef struct _OSVERSIONINFOW {
    ULONG dwOSVersionInfoSize;
    ULONG dwMajorVersion;
    ULONG dwMinorVersion;
    ULONG dwBuildNumber;
    ULONG dwPlatformId;
    WCHAR szCSDVersion[128];
} OSVERSIONINFOW, *POSVERSIONINFOW, RTL_OSVERSIONINFOW, *PRTL_OSVERSIONINFOW;
typedef struct _OSVERSIONINFOEXW {
    ULONG dwOSVersionInfoSize;
    ULONG dwMajorVersion;
    ULONG dwMinorVersion;
    ULONG dwBuildNumber;
    ULONG dwPlatformId;
    WCHAR szCSDVersion[128];
    USHORT wServicePackMajor;
    USHORT wServicePackMinor;
    USHORT wSuiteMask;
    UCHAR wProductType;
    UCHAR wReserved;
} OSVERSIONINFOEXW, *POSVERSIONINFOEXW, RTL_OSVERSIONINFOEXW, *PRTL_OSVERSIONINFOEXW;
NTSTATUS RtlGetVersion(PRTL_OSVERSIONINFOW lpVersionInformation);
BOOLEAN PsGetVersion(PULONG MajorVersion, PULONG MinorVersion, PULONG BuildNumber, PUNICODE_STRING CSDVersion);
#define NTDDI_WIN7 0x06010000
#define NTDDI_WIN8 0x06020000
#define NTDDI_WINBLUE 0x06030000
#define NTDDI_WIN10 0x0A000000
#define NTDDI_WIN10_RS3 0x0A000004
#define NTDDI_WIN10_VB 0x0A000008
#define NTDDI_WIN10_FE 0x0A00000A
#ifndef NTDDI_VERSION
#define NTDDI_VERSION NTDDI_WIN10_FE
#endif
#define _WIN32_WINNT_WIN10 0x0A00
#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0A00
#endif
#ifndef WINVER
#define WINVER 0x0A00
#endif

/* ======================================================================================
 * Declared but not provided: each prints "not supported by the OpenNDK kit: <name>: <what to
 * do>" on standard error and fails the way the WDK lets the call fail (openndk-wdk(7)).
 * ==================================================================================== */
typedef NTSTATUS DRIVER_NOTIFICATION_CALLBACK_ROUTINE(PVOID NotificationStructure, PVOID Context);
typedef DRIVER_NOTIFICATION_CALLBACK_ROUTINE *PDRIVER_NOTIFICATION_CALLBACK_ROUTINE;
typedef enum _IO_NOTIFICATION_EVENT_CATEGORY {
    EventCategoryReserved, EventCategoryHardwareProfileChange, EventCategoryDeviceInterfaceChange,
    EventCategoryTargetDeviceChange, EventCategoryKernelSoftRestart
} IO_NOTIFICATION_EVENT_CATEGORY;
#define PNPNOTIFY_DEVICE_INTERFACE_INCLUDE_EXISTING_INTERFACES 0x00000001
NTSTATUS IoRegisterPlugPlayNotification(IO_NOTIFICATION_EVENT_CATEGORY EventCategory, ULONG EventCategoryFlags,
                                        PVOID EventCategoryData, PDRIVER_OBJECT DriverObject,
                                        PDRIVER_NOTIFICATION_CALLBACK_ROUTINE CallbackRoutine, PVOID Context,
                                        PVOID *NotificationEntry);
NTSTATUS IoUnregisterPlugPlayNotification(PVOID NotificationEntry);
NTSTATUS IoUnregisterPlugPlayNotificationEx(PVOID NotificationEntry);
NTSTATUS IoGetDeviceObjectPointer(PUNICODE_STRING ObjectName, ACCESS_MASK DesiredAccess, PFILE_OBJECT *FileObject,
                                  PDEVICE_OBJECT *DeviceObject);
PDEVICE_OBJECT IoAttachDeviceToDeviceStack(PDEVICE_OBJECT SourceDevice, PDEVICE_OBJECT TargetDevice);
VOID IoDetachDevice(PDEVICE_OBJECT TargetDevice);
NTSTATUS IoRegisterShutdownNotification(PDEVICE_OBJECT DeviceObject);
VOID IoUnregisterShutdownNotification(PDEVICE_OBJECT DeviceObject);
NTSTATUS IoWMIRegistrationControl(PDEVICE_OBJECT DeviceObject, ULONG Action);
NTSTATUS IoRegisterDeviceInterface(PDEVICE_OBJECT PhysicalDeviceObject, const GUID *InterfaceClassGuid,
                                   PUNICODE_STRING ReferenceString, PUNICODE_STRING SymbolicLinkName);
NTSTATUS IoSetDeviceInterfaceState(PUNICODE_STRING SymbolicLinkName, BOOLEAN Enable);
NTSTATUS ZwCreateFile(PHANDLE FileHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                      PIO_STATUS_BLOCK IoStatusBlock, PLARGE_INTEGER AllocationSize, ULONG FileAttributes,
                      ULONG ShareAccess, ULONG CreateDisposition, ULONG CreateOptions, PVOID EaBuffer,
                      ULONG EaLength);
NTSTATUS ZwDeviceIoControlFile(HANDLE FileHandle, HANDLE Event, PVOID ApcRoutine, PVOID ApcContext,
                               PIO_STATUS_BLOCK IoStatusBlock, ULONG IoControlCode, PVOID InputBuffer,
                               ULONG InputBufferLength, PVOID OutputBuffer, ULONG OutputBufferLength);
NTSTATUS PsSetCreateProcessNotifyRoutine(PVOID NotifyRoutine, BOOLEAN Remove);
NTSTATUS PsSetCreateThreadNotifyRoutine(PVOID NotifyRoutine);
NTSTATUS PsLookupProcessByProcessId(HANDLE ProcessId, PEPROCESS *Process);
NTSTATUS ObRegisterCallbacks(PVOID CallbackRegistration, PVOID *RegistrationHandle);
NTSTATUS CmRegisterCallbackEx(PVOID Function, PCUNICODE_STRING Altitude, PVOID Driver, PVOID Context,
                              PLARGE_INTEGER Cookie, PVOID Reserved);
PVOID MmGetSystemRoutineAddress(PUNICODE_STRING SystemRoutineName);
PVOID MmAllocateNonCachedMemory(SIZE_T NumberOfBytes);
VOID MmFreeNonCachedMemory(PVOID BaseAddress, SIZE_T NumberOfBytes);
PVOID IoGetDmaAdapter(PDEVICE_OBJECT PhysicalDeviceObject, PVOID DeviceDescription, PULONG NumberOfMapRegisters);
NTSTATUS IoConnectInterruptEx(PVOID Parameters);

#ifdef __cplusplus
}
#endif

#endif /* OPENNDK_WDK_WDM_H */
