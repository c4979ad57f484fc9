/*
 * unit_sync - events, waits and timeouts, semaphores, mutexes, spin locks under contention and
 * system threads, checked from DriverEntry at PASSIVE_LEVEL.
 */
#include "kunit.h"

#define TAG 'cnyS'
#define WORKERS 4
#define ROUNDS 20000

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD SyncUnload;
static KSTART_ROUTINE Adder;

static KSPIN_LOCK g_lock;
static volatile LONG g_counter;
static LONG g_plain;
static KEVENT g_go;

_Use_decl_annotations_
static VOID SyncUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
}

static NTSTATUS Events(void)
{
    KEVENT n, s;
    LARGE_INTEGER zero, rel, abs_time;
    PVOID objs[2];
    zero.QuadPart = 0;
    rel.QuadPart = -20 * 10000;   /* 20 ms */
    KeInitializeEvent(&n, NotificationEvent, FALSE);
    KeInitializeEvent(&s, SynchronizationEvent, FALSE);
    CHECK(KeReadStateEvent(&n) == 0);
    CHECK(KeWaitForSingleObject(&n, Executive, KernelMode, FALSE, &zero) == STATUS_TIMEOUT);
    LARGE_INTEGER t0 = KeQueryPerformanceCounter(NULL);
    CHECK(KeWaitForSingleObject(&n, Executive, KernelMode, FALSE, &rel) == STATUS_TIMEOUT);
    LARGE_INTEGER t1 = KeQueryPerformanceCounter(NULL);
    CHECK(t1.QuadPart - t0.QuadPart >= 19 * 10000);   /* waited at least ~20 ms (10 MHz counter) */
    KeQuerySystemTime(&abs_time);
    abs_time.QuadPart += 10 * 10000;   /* absolute: 10 ms from now */
    CHECK(KeWaitForSingleObject(&n, Executive, KernelMode, FALSE, &abs_time) == STATUS_TIMEOUT);
    CHECK(KeSetEvent(&n, IO_NO_INCREMENT, FALSE) == 0);
    CHECK(KeSetEvent(&n, IO_NO_INCREMENT, FALSE) != 0);   /* previous state: signaled */
    /* Notification: stays signaled through waits. */
    CHECK(KeWaitForSingleObject(&n, Executive, KernelMode, FALSE, &zero) == STATUS_SUCCESS);
    CHECK(KeWaitForSingleObject(&n, Executive, KernelMode, FALSE, NULL) == STATUS_SUCCESS);
    CHECK(KeResetEvent(&n) != 0);
    CHECK(KeReadStateEvent(&n) == 0);
    /* Synchronization: one satisfied wait clears it. */
    KeSetEvent(&s, IO_NO_INCREMENT, FALSE);
    CHECK(KeWaitForSingleObject(&s, Executive, KernelMode, FALSE, &zero) == STATUS_SUCCESS);
    CHECK(KeWaitForSingleObject(&s, Executive, KernelMode, FALSE, &zero) == STATUS_TIMEOUT);
    /* WaitAny returns STATUS_WAIT_0 + index; WaitAll needs every object. */
    objs[0] = &n;
    objs[1] = &s;
    KeSetEvent(&s, IO_NO_INCREMENT, FALSE);
    CHECK(KeWaitForMultipleObjects(2, objs, WaitAny, Executive, KernelMode, FALSE, &zero, NULL) == STATUS_WAIT_1);
    CHECK(KeWaitForMultipleObjects(2, objs, WaitAll, Executive, KernelMode, FALSE, &zero, NULL) == STATUS_TIMEOUT);
    KeSetEvent(&n, IO_NO_INCREMENT, FALSE);
    KeSetEvent(&s, IO_NO_INCREMENT, FALSE);
    CHECK(KeWaitForMultipleObjects(2, objs, WaitAll, Executive, KernelMode, FALSE, &zero, NULL) == STATUS_SUCCESS);
    CHECK(KeReadStateEvent(&s) == 0 && KeReadStateEvent(&n) != 0);
    KeClearEvent(&n);
    CHECK(KeReadStateEvent(&n) == 0);
    /* A timer is a dispatcher object too. */
    KTIMER timer;
    KeInitializeTimer(&timer);
    rel.QuadPart = -5 * 10000;
    CHECK(KeSetTimer(&timer, rel, NULL) == FALSE);
    CHECK(KeWaitForSingleObject(&timer, Executive, KernelMode, FALSE, NULL) == STATUS_SUCCESS);
    CHECK(KeReadStateTimer(&timer));
    return STATUS_SUCCESS;
}

static NTSTATUS Semaphores(void)
{
    KSEMAPHORE sem;
    KMUTEX m;
    FAST_MUTEX fm;
    LARGE_INTEGER zero;
    zero.QuadPart = 0;
    KeInitializeSemaphore(&sem, 2, 3);
    CHECK(KeWaitForSingleObject(&sem, Executive, KernelMode, FALSE, &zero) == STATUS_SUCCESS);
    CHECK(KeWaitForSingleObject(&sem, Executive, KernelMode, FALSE, &zero) == STATUS_SUCCESS);
    CHECK(KeWaitForSingleObject(&sem, Executive, KernelMode, FALSE, &zero) == STATUS_TIMEOUT);
    CHECK(KeReleaseSemaphore(&sem, 0, 3, FALSE) == 0);
    CHECK(KeReadStateSemaphore(&sem) == 3);
    KeInitializeMutex(&m, 0);
    CHECK(KeWaitForSingleObject(&m, Executive, KernelMode, FALSE, NULL) == STATUS_SUCCESS);
    CHECK(KeWaitForSingleObject(&m, Executive, KernelMode, FALSE, NULL) == STATUS_SUCCESS);   /* recursive */
    KeReleaseMutex(&m, FALSE);
    KeReleaseMutex(&m, FALSE);
    CHECK(KeReadStateMutex(&m) == 1);
    ExInitializeFastMutex(&fm);
    ExAcquireFastMutex(&fm);
    CHECK(KeGetCurrentIrql() == APC_LEVEL);
    ExReleaseFastMutex(&fm);
    CHECK(KeGetCurrentIrql() == PASSIVE_LEVEL);
    CHECK(ExTryToAcquireFastMutex(&fm));
    ExReleaseFastMutex(&fm);
    return STATUS_SUCCESS;
}

/* Each thread adds ROUNDS times under the spin lock (both forms); the plain counter is only
 * right if the lock excludes. */
_Use_decl_annotations_
static VOID Adder(PVOID Context)
{
    UNREFERENCED_PARAMETER(Context);
    KeWaitForSingleObject(&g_go, Executive, KernelMode, FALSE, NULL);
    for (int i = 0; i < ROUNDS; i++) {
        if (i & 1) {
            KLOCK_QUEUE_HANDLE h;
            KeAcquireInStackQueuedSpinLock(&g_lock, &h);
            g_plain++;
            KeReleaseInStackQueuedSpinLock(&h);
        } else {
            KIRQL old;
            KeAcquireSpinLock(&g_lock, &old);
            g_plain++;
            KeReleaseSpinLock(&g_lock, old);
        }
        InterlockedIncrement(&g_counter);
    }
    PsTerminateSystemThread(STATUS_SUCCESS);
}

static NTSTATUS SpinLocksAndThreads(void)
{
    HANDLE handles[WORKERS];
    PVOID threads[WORKERS];
    KWAIT_BLOCK blocks[WORKERS];
    KIRQL old;
    KeInitializeSpinLock(&g_lock);
    KeInitializeEvent(&g_go, NotificationEvent, FALSE);
    KeAcquireSpinLock(&g_lock, &old);
    CHECK(old == PASSIVE_LEVEL && KeGetCurrentIrql() == DISPATCH_LEVEL);
    CHECK(!KeTryToAcquireSpinLockAtDpcLevel(&g_lock) || (KeReleaseSpinLockFromDpcLevel(&g_lock), FALSE));
    KeReleaseSpinLock(&g_lock, old);
    CHECK(KeGetCurrentIrql() == PASSIVE_LEVEL);
    for (int i = 0; i < WORKERS; i++) {
        CHECK(NT_SUCCESS(PsCreateSystemThread(&handles[i], THREAD_ALL_ACCESS, NULL, NULL, NULL, Adder, NULL)));
        CHECK(NT_SUCCESS(ObReferenceObjectByHandle(handles[i], SYNCHRONIZE, *PsThreadType, KernelMode, &threads[i],
                                                   NULL)));
        ZwClose(handles[i]);
    }
    KeSetEvent(&g_go, IO_NO_INCREMENT, FALSE);
    CHECK(KeWaitForMultipleObjects(WORKERS, threads, WaitAll, Executive, KernelMode, FALSE, NULL, blocks) ==
          STATUS_SUCCESS);
    for (int i = 0; i < WORKERS; i++)
        ObDereferenceObject(threads[i]);
    CHECK(g_counter == WORKERS * ROUNDS);
    CHECK(g_plain == WORKERS * ROUNDS);
    return STATUS_SUCCESS;
}

static NTSTATUS Irql(void)
{
    KIRQL old;
    CHECK(KeGetCurrentIrql() == PASSIVE_LEVEL);
    KeRaiseIrql(APC_LEVEL, &old);
    CHECK(old == PASSIVE_LEVEL && KeGetCurrentIrql() == APC_LEVEL);
    PAGED_CODE();
    old = KeRaiseIrqlToDpcLevel();
    CHECK(old == APC_LEVEL && KeGetCurrentIrql() == DISPATCH_LEVEL);
    KeLowerIrql(old);
    KeLowerIrql(PASSIVE_LEVEL);
    CHECK(KeGetCurrentIrql() == PASSIVE_LEVEL);
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    UNREFERENCED_PARAMETER(RegistryPath);
    DriverObject->DriverUnload = SyncUnload;
    RUN(Irql);
    RUN(Events);
    RUN(Semaphores);
    RUN(SpinLocksAndThreads);
    return STATUS_SUCCESS;
}
