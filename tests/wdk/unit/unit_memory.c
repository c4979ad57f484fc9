/*
 * unit_memory - pool (tags, zeroing, alignment, refusals), lookaside lists, MDLs, interlocked
 * operations, lists, SLIST, Rtl memory helpers and the __try/__except/__finally shapes.
 */
#include "kunit.h"

#define TAG 'tMeM'

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD MemUnload;

_Use_decl_annotations_
static VOID MemUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
}

static NTSTATUS Pool(void)
{
    PUCHAR p = ExAllocatePool2(POOL_FLAG_NON_PAGED, 100, TAG);
    CHECK(p != NULL);
    CHECK(((ULONG_PTR)p & 15) == 0);
    for (int i = 0; i < 100; i++)
        CHECK(p[i] == 0);   /* ExAllocatePool2 zeroes */
    ExFreePoolWithTag(p, TAG);
    p = ExAllocatePool2(POOL_FLAG_PAGED, 3 * PAGE_SIZE, TAG);
    CHECK(p != NULL && ((ULONG_PTR)p & (PAGE_SIZE - 1)) == 0);
    ExFreePool(p);
    CHECK(ExAllocatePool2(POOL_FLAG_NON_PAGED, 16, 0) == NULL);                                   /* tag 0 */
    CHECK(ExAllocatePool2(POOL_FLAG_NON_PAGED | POOL_FLAG_PAGED, 16, TAG) == NULL);               /* two types */
    CHECK(ExAllocatePool2(0x40000000ULL | POOL_FLAG_NON_PAGED, 16, TAG) == NULL);                  /* unknown */
    p = ExAllocatePool2(POOL_FLAG_NON_PAGED | 0x4000000000ULL, 16, TAG);                           /* optional */
    CHECK(p != NULL);
    ExFreePool(p);
    p = ExAllocatePoolWithTag(NonPagedPoolNx, 64, TAG);
    CHECK(p != NULL);
    ExFreePoolWithTag(p, TAG);
    p = ExAllocatePoolZero(NonPagedPoolNx, 64, TAG);
    CHECK(p != NULL && p[0] == 0 && p[63] == 0);
    ExFreePoolWithTag(p, TAG);
    return STATUS_SUCCESS;
}

static ULONG g_allocs, g_frees;
static ALLOCATE_FUNCTION_EX LaAlloc;
static FREE_FUNCTION_EX LaFree;

_Use_decl_annotations_
static PVOID LaAlloc(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag, PLOOKASIDE_LIST_EX Lookaside)
{
    UNREFERENCED_PARAMETER(Lookaside);
    g_allocs++;
    return ExAllocatePoolWithTag(PoolType, NumberOfBytes, Tag);
}

_Use_decl_annotations_
static VOID LaFree(PVOID Buffer, PLOOKASIDE_LIST_EX Lookaside)
{
    UNREFERENCED_PARAMETER(Lookaside);
    g_frees++;
    ExFreePool(Buffer);
}

static NTSTATUS Lookaside(void)
{
    LOOKASIDE_LIST_EX la;
    NPAGED_LOOKASIDE_LIST np;
    CHECK(ExInitializeLookasideListEx(&la, LaAlloc, LaFree, NonPagedPoolNx, 3, 64, TAG, 0) ==
          STATUS_INVALID_PARAMETER_5);
    CHECK(NT_SUCCESS(ExInitializeLookasideListEx(&la, LaAlloc, LaFree, NonPagedPoolNx, 0, 64, TAG, 0)));
    PVOID a = ExAllocateFromLookasideListEx(&la);
    PVOID b = ExAllocateFromLookasideListEx(&la);
    CHECK(a && b && a != b && g_allocs == 2);
    ExFreeToLookasideListEx(&la, a);
    PVOID c = ExAllocateFromLookasideListEx(&la);
    CHECK(c == a && g_allocs == 2);   /* reused, LIFO */
    ExFreeToLookasideListEx(&la, b);
    ExFreeToLookasideListEx(&la, c);
    ExDeleteLookasideListEx(&la);
    CHECK(g_frees == 2);
    ExInitializeNPagedLookasideList(&np, NULL, NULL, 0, 24, TAG, 0);
    a = ExAllocateFromNPagedLookasideList(&np);
    CHECK(a != NULL);
    ExFreeToNPagedLookasideList(&np, a);
    ExDeleteNPagedLookasideList(&np);
    return STATUS_SUCCESS;
}

static NTSTATUS Mdls(void)
{
    PUCHAR buf = ExAllocatePool2(POOL_FLAG_NON_PAGED, 3 * PAGE_SIZE, TAG);
    CHECK(buf != NULL);
    PUCHAR va = buf + 100;
    PMDL mdl = IoAllocateMdl(va, 2 * PAGE_SIZE, FALSE, FALSE, NULL);
    CHECK(mdl != NULL);
    CHECK(MmGetMdlVirtualAddress(mdl) == va);
    CHECK(MmGetMdlByteCount(mdl) == 2 * PAGE_SIZE);
    CHECK(MmGetMdlByteOffset(mdl) == 100);
    CHECK(MmGetMdlBaseVa(mdl) == buf);
    CHECK(ADDRESS_AND_SIZE_TO_SPAN_PAGES(va, 2 * PAGE_SIZE) == 3);
    MmBuildMdlForNonPagedPool(mdl);
    CHECK(MmGetSystemAddressForMdlSafe(mdl, NormalPagePriority | MdlMappingNoExecute) == va);
    PPFN_NUMBER pfn = MmGetMdlPfnArray(mdl);
    CHECK(pfn[1] == pfn[0] + 1 && pfn[2] == pfn[0] + 2);
    CHECK(MmGetPhysicalAddress(va).QuadPart == (LONGLONG)(ULONG_PTR)va);
    PMDL part = IoAllocateMdl(va + 10, 50, FALSE, FALSE, NULL);
    CHECK(part != NULL);
    IoBuildPartialMdl(mdl, part, va + 10, 50);
    CHECK(MmGetSystemAddressForMdlSafe(part, NormalPagePriority) == va + 10);
    IoFreeMdl(part);
    IoFreeMdl(mdl);
    mdl = IoAllocateMdl(buf, PAGE_SIZE, FALSE, FALSE, NULL);
    CHECK(mdl != NULL);
    __try {
        MmProbeAndLockPages(mdl, KernelMode, IoWriteAccess);
    } __except (EXCEPTION_EXECUTE_HANDLER) {
        IoFreeMdl(mdl);
        return GetExceptionCode();
    }
    CHECK(mdl->MdlFlags & MDL_PAGES_LOCKED);
    CHECK(MmGetSystemAddressForMdlSafe(mdl, NormalPagePriority) == buf);
    KeFlushIoBuffers(mdl, FALSE, TRUE);
    MmUnlockPages(mdl);
    IoFreeMdl(mdl);
    ExFreePoolWithTag(buf, TAG);
    return STATUS_SUCCESS;
}

typedef struct _ITEM {
    LIST_ENTRY Link;
    SLIST_ENTRY SLink;
    int Value;
} ITEM;

static NTSTATUS ListsAndInterlocked(void)
{
    LIST_ENTRY head;
    ITEM items[3];
    InitializeListHead(&head);
    CHECK(IsListEmpty(&head));
    for (int i = 0; i < 3; i++) {
        items[i].Value = i;
        InsertTailList(&head, &items[i].Link);
    }
    CHECK(CONTAINING_RECORD(head.Flink, ITEM, Link)->Value == 0);
    CHECK(CONTAINING_RECORD(RemoveTailList(&head), ITEM, Link)->Value == 2);
    InsertHeadList(&head, &items[2].Link);
    CHECK(CONTAINING_RECORD(RemoveHeadList(&head), ITEM, Link)->Value == 2);
    CHECK(!RemoveEntryList(&items[0].Link));
    CHECK(RemoveEntryList(&items[1].Link));
    CHECK(IsListEmpty(&head));
    DECLSPEC_ALIGN(16) SLIST_HEADER sh;
    InitializeSListHead(&sh);
    InterlockedPushEntrySList(&sh, &items[0].SLink);
    InterlockedPushEntrySList(&sh, &items[1].SLink);
    CHECK(QueryDepthSList(&sh) == 2);
    CHECK(InterlockedPopEntrySList(&sh) == &items[1].SLink);
    CHECK(InterlockedFlushSList(&sh) == &items[0].SLink && QueryDepthSList(&sh) == 0);

    volatile LONG l = 5;
    volatile LONG64 q = 1LL << 40;
    PVOID volatile ptr = NULL;
    CHECK(InterlockedIncrement(&l) == 6 && InterlockedDecrement(&l) == 5);
    CHECK(InterlockedExchange(&l, 9) == 5 && l == 9);
    CHECK(InterlockedExchangeAdd(&l, 2) == 9 && InterlockedAdd(&l, 1) == 12);
    CHECK(InterlockedCompareExchange(&l, 7, 1) == 12 && l == 12);
    CHECK(InterlockedCompareExchange(&l, 7, 12) == 12 && l == 7);
    CHECK(InterlockedOr(&l, 8) == 7 && InterlockedAnd(&l, 3) == 15 && l == 3);
    CHECK(InterlockedIncrement64(&q) == (1LL << 40) + 1);
    CHECK(InterlockedCompareExchange64(&q, 5, (1LL << 40) + 1) == (1LL << 40) + 1 && q == 5);
    CHECK(InterlockedExchangePointer(&ptr, (PVOID)&l) == NULL);
    CHECK(InterlockedCompareExchangePointer(&ptr, NULL, (PVOID)&l) == (PVOID)&l && ptr == NULL);
    ULONG64 field = 0;
    InterlockedOr64((LONG64 volatile *)&field, 4);
    CHECK(field == 4);
    return STATUS_SUCCESS;
}

static NTSTATUS RtlMemory(void)
{
    UCHAR a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[8];
    RtlCopyMemory(b, a, 8);
    CHECK(RtlEqualMemory(a, b, 8));
    b[5] = 0;
    CHECK(RtlCompareMemory(a, b, 8) == 5);
    RtlFillMemory(b, 8, 0xAB);
    CHECK(b[7] == 0xAB);
    RtlZeroMemory(b, 8);
    CHECK(b[0] == 0 && b[7] == 0);
    RtlMoveMemory(a + 1, a, 4);
    CHECK(a[1] == 1 && a[4] == 4);
    CHECK(RtlUlongByteSwap(0x11223344) == 0x44332211 && RtlUshortByteSwap(0x1122) == 0x2211);
    return STATUS_SUCCESS;
}

/* __try runs the guarded block; __except never runs; __finally runs after a normal exit. */
static NTSTATUS Seh(void)
{
    int ran = 0, handler = 0, fin = 0;
    __try {
        ran = 1;
    } __except (EXCEPTION_EXECUTE_HANDLER) {
        handler = 1;
    }
    __try {
        ran++;
    } __finally {
        fin = 1;
    }
    CHECK(ran == 2 && !handler && fin);
    for (int i = 0; i < 3; i++) {
        __try {
            if (i == 1)
                continue;
            ran++;
        } __except (GetExceptionCode() == STATUS_ACCESS_VIOLATION ? EXCEPTION_EXECUTE_HANDLER
                                                                   : EXCEPTION_CONTINUE_SEARCH) {
            handler = 1;
        }
    }
    CHECK(ran == 4 && !handler);
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    UNREFERENCED_PARAMETER(RegistryPath);
    DriverObject->DriverUnload = MemUnload;
    RUN(Pool);
    RUN(Lookaside);
    RUN(Mdls);
    RUN(ListsAndInterlocked);
    RUN(RtlMemory);
    RUN(Seh);
    return STATUS_SUCCESS;
}
