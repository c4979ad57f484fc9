/*
 * ndk/nt.h - the Windows kernel types, status codes and MDLs that the NDKPI is written in,
 * with exact widths for an LP64 Linux host.
 *
 * Windows kernel code is LLP64: ULONG is 32 bits even on 64-bit targets, so nothing here maps
 * to `long` (NDKPI reference §0.1). NTSTATUS values are the real ntstatus.h numbers (§0.3).
 */
#ifndef NDK_NT_H
#define NDK_NT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- scalar types (§0.1) ---- */
typedef int32_t   NTSTATUS;
typedef int32_t   NDIS_STATUS;
typedef uint8_t   UCHAR, *PUCHAR;
typedef uint8_t   BOOLEAN, *PBOOLEAN;
typedef int16_t   CSHORT;
typedef uint16_t  USHORT, *PUSHORT;
typedef uint32_t  ULONG, *PULONG;
typedef int32_t   LONG;
typedef uint32_t  UINT32, *PUINT32;
typedef uint64_t  ULONG64, *PULONG64;
typedef uint64_t  UINT64, *PUINT64;
typedef uint64_t  ULONGLONG;
typedef int64_t   LONGLONG;
typedef size_t    SIZE_T, *PSIZE_T;
typedef uintptr_t ULONG_PTR;
typedef uintptr_t KAFFINITY;
typedef void     *PVOID;
typedef void      VOID;
typedef void     *NDIS_HANDLE;
typedef ULONG     NDIS_OID;
typedef ULONG     NET_IFINDEX;
typedef ULONG     NDIS_NIC_SWITCH_ID;
typedef ULONG     NDIS_NIC_SWITCH_VPORT_ID;
typedef UINT32    NDIS_SWITCH_PORT_ID;

#ifndef CONST
#define CONST const
#endif
#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif
#ifndef MAXULONG
#define MAXULONG 0xFFFFFFFFu
#endif
#ifndef MAXUSHORT
#define MAXUSHORT 0xFFFFu
#endif

/* LARGE_INTEGER-style physical address; NDK only ever uses the 64-bit QuadPart. */
typedef union _LARGE_INTEGER {
    struct {
        uint32_t LowPart;
        int32_t  HighPart;
    } u;
    LONGLONG QuadPart;
} LARGE_INTEGER, PHYSICAL_ADDRESS, *PPHYSICAL_ADDRESS;

typedef struct _GUID {
    uint32_t Data1;
    uint16_t Data2;
    uint16_t Data3;
    uint8_t  Data4[8];
} GUID, *PGUID;

/* guiddef.h's DEFINE_GUID: a declaration, or the definition in the one file that defines
 * INITGUID before it includes the first OpenNDK header. */
#ifndef DEFINE_GUID
#ifdef INITGUID
#ifdef __cplusplus
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8) \
    extern const GUID name = { l, w1, w2, { b1, b2, b3, b4, b5, b6, b7, b8 } }
#else
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8) \
    const GUID name = { l, w1, w2, { b1, b2, b3, b4, b5, b6, b7, b8 } }
#endif
#else
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8) extern const GUID name
#endif
#endif

typedef struct _GROUP_AFFINITY {
    KAFFINITY Mask;
    USHORT    Group;
    USHORT    Reserved[3];
} GROUP_AFFINITY, *PGROUP_AFFINITY;

/* Sockets: Linux's own layouts. AF_INET6 here is Linux's 10, not Windows' 23 (§0.1 [port]). */
typedef struct sockaddr     SOCKADDR, *PSOCKADDR;
typedef struct sockaddr_in  SOCKADDR_IN, *PSOCKADDR_IN;
typedef struct sockaddr_in6 SOCKADDR_IN6, *PSOCKADDR_IN6;
typedef uint16_t            ADDRESS_FAMILY;
typedef union _SOCKADDR_INET {
    SOCKADDR_IN    Ipv4;
    SOCKADDR_IN6   Ipv6;
    ADDRESS_FAMILY si_family;
} SOCKADDR_INET, *PSOCKADDR_INET;

#define FIELD_OFFSET(type, field) ((LONG)offsetof(type, field))
#define RTL_FIELD_SIZE(type, field) (sizeof(((type *)0)->field))
#define RTL_SIZEOF_THROUGH_FIELD(type, field) (offsetof(type, field) + RTL_FIELD_SIZE(type, field))

/* ---- status codes (§0.3): STATUS_PENDING is success-class; test for it explicitly ---- */
#define NT_SUCCESS(Status) (((NTSTATUS)(Status)) >= 0)

#define STATUS_SUCCESS                 ((NTSTATUS)0x00000000L)
#define STATUS_PENDING                 ((NTSTATUS)0x00000103L)
#define STATUS_BUFFER_OVERFLOW         ((NTSTATUS)0x80000005L)
#define STATUS_UNSUCCESSFUL            ((NTSTATUS)0xC0000001L)
#define STATUS_NOT_IMPLEMENTED         ((NTSTATUS)0xC0000002L)
#define STATUS_ACCESS_VIOLATION        ((NTSTATUS)0xC0000005L)
#define STATUS_INVALID_HANDLE          ((NTSTATUS)0xC0000008L)
#define STATUS_INVALID_PARAMETER       ((NTSTATUS)0xC000000DL)
#define STATUS_NO_SUCH_DEVICE          ((NTSTATUS)0xC000000EL)
#define STATUS_INVALID_DEVICE_REQUEST  ((NTSTATUS)0xC0000010L)
#define STATUS_NO_MEMORY               ((NTSTATUS)0xC0000017L)
#define STATUS_ACCESS_DENIED           ((NTSTATUS)0xC0000022L)
#define STATUS_BUFFER_TOO_SMALL        ((NTSTATUS)0xC0000023L)
#define STATUS_OBJECT_NAME_NOT_FOUND   ((NTSTATUS)0xC0000034L)
#define STATUS_INVALID_PARAMETER_MIX   ((NTSTATUS)0xC0000030L)
#define STATUS_SHARING_VIOLATION       ((NTSTATUS)0xC0000043L)
#define STATUS_INSUFFICIENT_RESOURCES  ((NTSTATUS)0xC000009AL)
#define STATUS_DEVICE_NOT_READY        ((NTSTATUS)0xC00000A3L)
#define STATUS_IO_TIMEOUT              ((NTSTATUS)0xC00000B5L)
#define STATUS_NOT_SUPPORTED           ((NTSTATUS)0xC00000BBL)
#define STATUS_INTERNAL_ERROR          ((NTSTATUS)0xC00000E5L)
#define STATUS_INVALID_PARAMETER_1     ((NTSTATUS)0xC00000EFL)
#define STATUS_DLL_NOT_FOUND           ((NTSTATUS)0xC0000135L)
#define STATUS_CANCELLED               ((NTSTATUS)0xC0000120L)
#define STATUS_REMOTE_RESOURCES        ((NTSTATUS)0xC000013DL)
#define STATUS_INVALID_ADDRESS         ((NTSTATUS)0xC0000141L)
#define STATUS_ENTRYPOINT_NOT_FOUND    ((NTSTATUS)0xC0000139L)
#define STATUS_DATA_ERROR              ((NTSTATUS)0xC000003EL)
#define STATUS_TOO_MANY_ADDRESSES      ((NTSTATUS)0xC0000209L)
#define STATUS_ADDRESS_ALREADY_EXISTS  ((NTSTATUS)0xC000020AL)
#define STATUS_CONNECTION_DISCONNECTED ((NTSTATUS)0xC000020CL)
#define STATUS_CONNECTION_RESET        ((NTSTATUS)0xC000020DL)
#define STATUS_CONNECTION_REFUSED      ((NTSTATUS)0xC0000236L)
#define STATUS_CONNECTION_INVALID      ((NTSTATUS)0xC000023AL)
#define STATUS_CONNECTION_ACTIVE       ((NTSTATUS)0xC000023BL)
#define STATUS_NETWORK_UNREACHABLE     ((NTSTATUS)0xC000023CL)
#define STATUS_HOST_UNREACHABLE        ((NTSTATUS)0xC000023DL)
#define STATUS_PROTOCOL_UNREACHABLE    ((NTSTATUS)0xC000023EL)
#define STATUS_PORT_UNREACHABLE        ((NTSTATUS)0xC000023FL)
#define STATUS_CONNECTION_ABORTED      ((NTSTATUS)0xC0000241L)
#define STATUS_IMPLEMENTATION_LIMIT    ((NTSTATUS)0xC000042BL)

/* The NDIS facility (0x23) of ntstatus.h: NDIS 6 gives its NDIS_STATUS_xxx codes these values
 * (NDIS 5 used 0xC001xxxx for the same names). */
#define STATUS_NDIS_BAD_VERSION        ((NTSTATUS)0xC0230004L)
#define STATUS_NDIS_ADAPTER_NOT_READY  ((NTSTATUS)0xC0230011L)
#define STATUS_NDIS_INVALID_LENGTH     ((NTSTATUS)0xC0230014L)
#define STATUS_NDIS_BUFFER_TOO_SHORT   ((NTSTATUS)0xC0230016L)
#define STATUS_NDIS_INVALID_OID        ((NTSTATUS)0xC0230017L)
#define STATUS_NDIS_NOT_SUPPORTED      ((NTSTATUS)0xC02300BBL)

/* ndis.h's names. SUCCESS, PENDING, FAILURE, RESOURCES and INVALID_PARAMETER are the generic
 * NTSTATUS codes (ntstatus.h has no STATUS_NDIS_ twin for them); the others take the values the
 * reference gives (§0.3), their STATUS_NDIS_xxx twins. Public ndis.h copies instead keep NDIS 5's
 * 0xC001xxxx numbers and make NDIS_STATUS_NOT_SUPPORTED the generic STATUS_NOT_SUPPORTED, so code
 * that may see either accepts both (as the runtime's registry does for NOT_SUPPORTED). */
#define NDIS_STATUS_SUCCESS            ((NDIS_STATUS)STATUS_SUCCESS)
#define NDIS_STATUS_PENDING            ((NDIS_STATUS)STATUS_PENDING)
#define NDIS_STATUS_FAILURE            ((NDIS_STATUS)STATUS_UNSUCCESSFUL)
#define NDIS_STATUS_RESOURCES          ((NDIS_STATUS)STATUS_INSUFFICIENT_RESOURCES)
#define NDIS_STATUS_INVALID_PARAMETER  ((NDIS_STATUS)STATUS_INVALID_PARAMETER)
#define NDIS_STATUS_BAD_VERSION        ((NDIS_STATUS)STATUS_NDIS_BAD_VERSION)
#define NDIS_STATUS_ADAPTER_NOT_READY  ((NDIS_STATUS)STATUS_NDIS_ADAPTER_NOT_READY)
#define NDIS_STATUS_INVALID_LENGTH     ((NDIS_STATUS)STATUS_NDIS_INVALID_LENGTH)
#define NDIS_STATUS_BUFFER_TOO_SHORT   ((NDIS_STATUS)STATUS_NDIS_BUFFER_TOO_SHORT)
#define NDIS_STATUS_INVALID_OID        ((NDIS_STATUS)STATUS_NDIS_INVALID_OID)
#define NDIS_STATUS_NOT_SUPPORTED      ((NDIS_STATUS)STATUS_NDIS_NOT_SUPPORTED)

/* ---- MDL: a chain of descriptors, each for one virtually contiguous buffer ----
 * As on Windows, StartVa is the page-aligned base and ByteOffset the offset of the first byte
 * in that page; the buffer starts at StartVa + ByteOffset and spans ByteCount bytes. Next links
 * the chain. A user-space MDL's pages are ordinary process memory; "locking" is a no-op unless
 * the consumer asks for mlock. Providers treat the virtual address as a label (§2.6). */
typedef struct _MDL {
    struct _MDL *Next;
    CSHORT       Size;        /* bytes of this descriptor */
    CSHORT       MdlFlags;
    PVOID        Process;     /* unused; kept for layout familiarity */
    PVOID        MappedSystemVa;
    PVOID        StartVa;
    ULONG        ByteCount;
    ULONG        ByteOffset;
} MDL, *PMDL;

#define MDL_PAGES_LOCKED         0x0002
#define MDL_SOURCE_IS_NONPAGED_POOL 0x0004
#define MDL_ALLOCATED_FIXED_SIZE 0x0008

#define NDK_MDL_PAGE_SIZE 4096u
#ifndef PAGE_SIZE
#define PAGE_SIZE NDK_MDL_PAGE_SIZE
#endif

static inline PVOID MmGetMdlVirtualAddress(const MDL *Mdl)
{
    return (PVOID)((uint8_t *)Mdl->StartVa + Mdl->ByteOffset);
}
static inline ULONG MmGetMdlByteCount(const MDL *Mdl) { return Mdl->ByteCount; }
static inline ULONG MmGetMdlByteOffset(const MDL *Mdl) { return Mdl->ByteOffset; }
static inline PVOID MmGetMdlBaseVa(const MDL *Mdl) { return Mdl->StartVa; }
static inline PVOID MmGetSystemAddressForMdlSafe(MDL *Mdl, ULONG Priority)
{
    (void)Priority;
    return MmGetMdlVirtualAddress(Mdl);
}

/* Describes Length bytes at VirtualAddress in a new MDL (IoAllocateMdl's shape). With
 * SecondaryBuffer TRUE and Irp pointing at the chain's head MDL, the new descriptor is appended
 * to that chain; Irp may be NULL. Returns NULL on allocation failure. */
static inline PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer,
                                 BOOLEAN ChargeQuota, PVOID Irp)
{
    (void)ChargeQuota;
    PMDL mdl = (PMDL)calloc(1, sizeof(MDL));
    if (!mdl)
        return NULL;
    uintptr_t va = (uintptr_t)VirtualAddress;
    mdl->Size = (CSHORT)sizeof(MDL);
    mdl->StartVa = (PVOID)(va & ~(uintptr_t)(NDK_MDL_PAGE_SIZE - 1));
    mdl->ByteOffset = (ULONG)(va & (NDK_MDL_PAGE_SIZE - 1));
    mdl->ByteCount = Length;
    mdl->MappedSystemVa = VirtualAddress;
    if (SecondaryBuffer && Irp) {
        PMDL tail = (PMDL)Irp;
        while (tail->Next)
            tail = tail->Next;
        tail->Next = mdl;
    }
    return mdl;
}

/* Frees one descriptor (not the rest of its chain), as IoFreeMdl does. */
static inline VOID IoFreeMdl(PMDL Mdl) { free(Mdl); }

/* User memory is always resident for our purposes; these record the state for the checks. */
static inline VOID MmBuildMdlForNonPagedPool(PMDL Mdl) { Mdl->MdlFlags |= MDL_SOURCE_IS_NONPAGED_POOL; }
static inline VOID MmUnlockPages(PMDL Mdl) { Mdl->MdlFlags &= (CSHORT)~MDL_PAGES_LOCKED; }

/* ---- chain helpers (ours) ---- */
/* Builds a chain of Count descriptors for Buffers[i]/Lengths[i]; NULL on failure (nothing leaks). */
static inline PMDL NdkMdlChainBuild(PVOID const *Buffers, const ULONG *Lengths, ULONG Count)
{
    PMDL head = NULL;
    for (ULONG i = 0; i < Count; i++) {
        PMDL m = IoAllocateMdl(Buffers[i], Lengths[i], head != NULL, FALSE, head);
        if (!m) {
            while (head) {
                PMDL next = head->Next;
                IoFreeMdl(head);
                head = next;
            }
            return NULL;
        }
        if (!head)
            head = m;
    }
    return head;
}

/* Frees every descriptor of a chain. */
static inline VOID NdkMdlChainFree(PMDL Head)
{
    while (Head) {
        PMDL next = Head->Next;
        IoFreeMdl(Head);
        Head = next;
    }
}

/* Total bytes the chain describes. */
static inline SIZE_T NdkMdlChainByteCount(const MDL *Head)
{
    SIZE_T total = 0;
    for (; Head; Head = Head->Next)
        total += Head->ByteCount;
    return total;
}

/* TRUE when the first Length bytes of the chain are one virtually contiguous range, i.e. each
 * descriptor starts where the previous one ended (the precondition of NdkRegisterMr/NdkBuildLAM). */
static inline BOOLEAN NdkMdlChainIsContiguous(const MDL *Head, SIZE_T Length)
{
    if (!Head)
        return Length == 0;
    uintptr_t expect = (uintptr_t)MmGetMdlVirtualAddress(Head);
    SIZE_T covered = 0;
    for (const MDL *m = Head; m && covered < Length; m = m->Next) {
        if ((uintptr_t)MmGetMdlVirtualAddress(m) != expect)
            return FALSE;
        expect += m->ByteCount;
        covered += m->ByteCount;
    }
    return covered >= Length;
}

#ifdef __cplusplus
}
#endif

#endif /* NDK_NT_H */
