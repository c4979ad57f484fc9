/*
 * ndk/nt.h - the Windows kernel types, status codes and MDLs that the NDKPI is written in,
 * with exact widths for an LP64 Linux host.
 *
 * Windows kernel code is LLP64: ULONG is 32 bits even on 64-bit targets, so nothing here maps
 * to `long`. NTSTATUS values are the real ntstatus.h numbers (ndk/ntstatus.h).
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

/* ---- scalar types ----
 * The 64-bit integers are `long long`, as MSVC's __int64 is: the WDK's Interlocked*64 take
 * `LONG64 volatile *`, and a consumer passes the address of its own ULONG64/LONGLONG fields. On
 * LP64 Linux int64_t is `long`, a distinct type, so those pointers would not convert. Print them
 * with %llu/%lld (not PRIu64). */
typedef int32_t            NTSTATUS, *PNTSTATUS;
typedef int32_t            NDIS_STATUS, *PNDIS_STATUS;
typedef char               CHAR, *PCHAR, *PSTR;
typedef const char        *PCSTR;
typedef char               CCHAR;
typedef uint8_t            UCHAR, *PUCHAR;
typedef uint8_t            BOOLEAN, *PBOOLEAN;
typedef int16_t            SHORT, *PSHORT;
typedef int16_t            CSHORT;
typedef uint16_t           USHORT, *PUSHORT;
typedef int                INT, *PINT;
typedef unsigned int       UINT, *PUINT;
typedef uint32_t           ULONG, *PULONG;
typedef int32_t            LONG, *PLONG;
typedef int8_t             INT8, *PINT8;
typedef int16_t            INT16, *PINT16;
typedef int32_t            INT32, *PINT32;
typedef uint8_t            UINT8, *PUINT8;
typedef uint16_t           UINT16, *PUINT16;
typedef uint32_t           UINT32, *PUINT32;
typedef int32_t            LONG32, *PLONG32;
typedef uint32_t           ULONG32, *PULONG32;
typedef long long          LONGLONG, *PLONGLONG;
typedef unsigned long long ULONGLONG, *PULONGLONG;
typedef long long          LONG64, *PLONG64;
typedef unsigned long long ULONG64, *PULONG64;
typedef long long          INT64, *PINT64;
typedef unsigned long long UINT64, *PUINT64;
typedef size_t             SIZE_T, *PSIZE_T;
typedef intptr_t           SSIZE_T, *PSSIZE_T;
typedef intptr_t           LONG_PTR, *PLONG_PTR;
typedef uintptr_t          ULONG_PTR, *PULONG_PTR;
typedef intptr_t           INT_PTR, *PINT_PTR;
typedef uintptr_t          UINT_PTR, *PUINT_PTR;
typedef uintptr_t          KAFFINITY, *PKAFFINITY;
typedef void              *PVOID;
typedef void              *HANDLE, **PHANDLE;
typedef void               VOID;
_Static_assert(sizeof(LONGLONG) == 8 && sizeof(ULONG64) == 8, "64-bit integers are 8 bytes");

/* WCHAR is UTF-16. Built with -fshort-wchar (the kit's flags), wchar_t is 16 bits and
 * L"..." literals have type WCHAR[]; otherwise a plain 16-bit integer keeps the layouts right. */
#if defined(__SIZEOF_WCHAR_T__) && __SIZEOF_WCHAR_T__ == 2
typedef wchar_t            WCHAR;
#else
typedef uint16_t           WCHAR;
#endif
typedef WCHAR             *PWCHAR, *PWCH, *PWSTR, *LPWSTR;
typedef const WCHAR       *PCWCH, *PCWSTR, *LPCWSTR;
_Static_assert(sizeof(WCHAR) == 2, "WCHAR is 16 bits");

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

/* LARGE_INTEGER: the halves are reachable both directly and through `.u`, as in ntdef.h. */
typedef union _LARGE_INTEGER {
    struct {
        ULONG LowPart;
        LONG  HighPart;
    };
    struct {
        ULONG LowPart;
        LONG  HighPart;
    } u;
    LONGLONG QuadPart;
} LARGE_INTEGER, *PLARGE_INTEGER, PHYSICAL_ADDRESS, *PPHYSICAL_ADDRESS;

typedef union _ULARGE_INTEGER {
    struct {
        ULONG LowPart;
        ULONG HighPart;
    };
    struct {
        ULONG LowPart;
        ULONG HighPart;
    } u;
    ULONGLONG QuadPart;
} ULARGE_INTEGER, *PULARGE_INTEGER;

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

/* A counted UTF-16 string: lengths in bytes, no terminator required (ntdef.h's shape). */
typedef struct _UNICODE_STRING {
    USHORT Length;
    USHORT MaximumLength;
    PWCH   Buffer;
} UNICODE_STRING, *PUNICODE_STRING;
typedef const UNICODE_STRING *PCUNICODE_STRING;

typedef struct _GROUP_AFFINITY {
    KAFFINITY Mask;
    USHORT    Group;
    USHORT    Reserved[3];
} GROUP_AFFINITY, *PGROUP_AFFINITY;

typedef struct _PROCESSOR_NUMBER {
    USHORT Group;
    UCHAR  Number;
    UCHAR  Reserved;
} PROCESSOR_NUMBER, *PPROCESSOR_NUMBER;

/* ---- socket addresses (ws2def.h / ws2ipdef.h shapes) ----
 * Windows and Linux lay these out byte for byte alike; only the member spellings differ, and
 * AF_INET6 is Linux's 10 here, not Windows' 23. So the Windows-shaped types below
 * carry the Windows names (S_un, u.Byte, sin6_scope_struct) and the Linux ones the tree uses
 * (s_addr, s6_addr), and a pointer to either converts to a `struct sockaddr *` for the kernel.
 * SOCKADDR itself is Linux's struct sockaddr (sa_family, sa_data[14]: the same 16 bytes). */
typedef struct sockaddr SOCKADDR, *PSOCKADDR;
typedef USHORT          ADDRESS_FAMILY;

typedef struct _NDK_IN_ADDR {
    union {
        union {
            struct { UCHAR s_b1, s_b2, s_b3, s_b4; } S_un_b;
            struct { USHORT s_w1, s_w2; } S_un_w;
            ULONG S_addr;
        } S_un;
        in_addr_t s_addr;            /* the POSIX spelling (Windows makes it a macro for S_un.S_addr) */
    };
} IN_ADDR, *PIN_ADDR;

typedef struct _NDK_IN6_ADDR {
    union {
        union {
            UCHAR  Byte[16];
            USHORT Word[8];
        } u;
#ifdef __GLIBC__
        /* glibc's s6_addr macro names this member path; mirroring it lets POSIX code write
         * addr.s6_addr[i] on an IN6_ADDR, as Windows code writes addr.u.Byte[i]. */
        union {
            uint8_t  __u6_addr8[16];
            uint16_t __u6_addr16[8];
            uint32_t __u6_addr32[4];
        } __in6_u;
#endif
    };
} IN6_ADDR, *PIN6_ADDR;

typedef enum _SCOPE_LEVEL {
    ScopeLevelInterface    = 1,
    ScopeLevelLink         = 2,
    ScopeLevelSubnet       = 3,
    ScopeLevelAdmin        = 4,
    ScopeLevelSite         = 5,
    ScopeLevelOrganization = 8,
    ScopeLevelGlobal       = 14,
    ScopeLevelCount        = 16
} SCOPE_LEVEL;

typedef struct _SCOPE_ID {
    union {
        struct {
            ULONG Zone  : 28;
            ULONG Level : 4;
        };
        ULONG Value;
    };
} SCOPE_ID, *PSCOPE_ID;

typedef struct _NDK_SOCKADDR_IN {
    ADDRESS_FAMILY sin_family;
    USHORT         sin_port;         /* network order */
    IN_ADDR        sin_addr;
    CHAR           sin_zero[8];
} SOCKADDR_IN, *PSOCKADDR_IN;

typedef struct _NDK_SOCKADDR_IN6 {
    ADDRESS_FAMILY sin6_family;
    USHORT         sin6_port;        /* network order */
    ULONG          sin6_flowinfo;
    IN6_ADDR       sin6_addr;
    union {
        ULONG    sin6_scope_id;
        SCOPE_ID sin6_scope_struct;
    };
} SOCKADDR_IN6, *PSOCKADDR_IN6, SOCKADDR_IN6_LH, *PSOCKADDR_IN6_LH;

_Static_assert(sizeof(IN_ADDR) == sizeof(struct in_addr), "IN_ADDR is struct in_addr's size");
_Static_assert(sizeof(IN6_ADDR) == sizeof(struct in6_addr), "IN6_ADDR is struct in6_addr's size");
_Static_assert(sizeof(SCOPE_ID) == 4, "SCOPE_ID is one ULONG");
_Static_assert(sizeof(SOCKADDR_IN) == sizeof(struct sockaddr_in) &&
               offsetof(SOCKADDR_IN, sin_family) == offsetof(struct sockaddr_in, sin_family) &&
               offsetof(SOCKADDR_IN, sin_port) == offsetof(struct sockaddr_in, sin_port) &&
               offsetof(SOCKADDR_IN, sin_addr) == offsetof(struct sockaddr_in, sin_addr) &&
               offsetof(SOCKADDR_IN, sin_zero) == offsetof(struct sockaddr_in, sin_zero),
               "SOCKADDR_IN matches struct sockaddr_in");
_Static_assert(sizeof(SOCKADDR_IN6) == sizeof(struct sockaddr_in6) &&
               offsetof(SOCKADDR_IN6, sin6_family) == offsetof(struct sockaddr_in6, sin6_family) &&
               offsetof(SOCKADDR_IN6, sin6_port) == offsetof(struct sockaddr_in6, sin6_port) &&
               offsetof(SOCKADDR_IN6, sin6_flowinfo) == offsetof(struct sockaddr_in6, sin6_flowinfo) &&
               offsetof(SOCKADDR_IN6, sin6_addr) == offsetof(struct sockaddr_in6, sin6_addr) &&
               offsetof(SOCKADDR_IN6, sin6_scope_id) == offsetof(struct sockaddr_in6, sin6_scope_id),
               "SOCKADDR_IN6 matches struct sockaddr_in6");

typedef union _SOCKADDR_INET {
    SOCKADDR_IN    Ipv4;
    SOCKADDR_IN6   Ipv6;
    ADDRESS_FAMILY si_family;
} SOCKADDR_INET, *PSOCKADDR_INET;

#define FIELD_OFFSET(type, field) ((LONG)offsetof(type, field))
#define RTL_FIELD_SIZE(type, field) (sizeof(((type *)0)->field))
#define RTL_SIZEOF_THROUGH_FIELD(type, field) (offsetof(type, field) + RTL_FIELD_SIZE(type, field))

/* ---- status codes: STATUS_PENDING is success-class; test for it explicitly ---- */
/* The top two bits are the severity: 0 success, 1 informational, 2 warning, 3 error. */
#ifndef NT_SUCCESS
#define NT_SUCCESS(Status) (((NTSTATUS)(Status)) >= 0)
#endif
#ifndef NT_INFORMATION
#define NT_INFORMATION(Status) ((((ULONG)(Status)) >> 30) == 1)
#endif
#ifndef NT_WARNING
#define NT_WARNING(Status) ((((ULONG)(Status)) >> 30) == 2)
#endif
#ifndef NT_ERROR
#define NT_ERROR(Status) ((((ULONG)(Status)) >> 30) == 3)
#endif

/* The codes themselves, and ndis.h's NDIS_STATUS_xxx names, have their own header. */
#include <ndk/ntstatus.h>

/* ---- MDL: a chain of descriptors, each for one virtually contiguous buffer ----
 * As on Windows, StartVa is the page-aligned base and ByteOffset the offset of the first byte
 * in that page; the buffer starts at StartVa + ByteOffset and spans ByteCount bytes. Next links
 * the chain. A user-space MDL's pages are ordinary process memory; "locking" is a no-op unless
 * the consumer asks for mlock. Providers treat the virtual address as a label (docs/ndkpi.md,
 * "Memory registration"). */
typedef struct _MDL {
    struct _MDL *Next;
    CSHORT       Size;        /* bytes of this descriptor */
    CSHORT       MdlFlags;
    struct _EPROCESS *Process; /* unused in user space; the WDK's type, so drivers compile */
    PVOID        MappedSystemVa;
    PVOID        StartVa;
    ULONG        ByteCount;
    ULONG        ByteOffset;
} MDL, *PMDL;

#ifndef MDL_PAGES_LOCKED
#define MDL_PAGES_LOCKED 0x0002
#endif
#ifndef MDL_SOURCE_IS_NONPAGED_POOL
#define MDL_SOURCE_IS_NONPAGED_POOL 0x0004
#endif
#ifndef MDL_ALLOCATED_FIXED_SIZE
#define MDL_ALLOCATED_FIXED_SIZE 0x0008
#endif

#define NDK_MDL_PAGE_SIZE 4096u
#ifndef PAGE_SIZE
#define PAGE_SIZE NDK_MDL_PAGE_SIZE
#endif

/* User-space MDL helpers. The WDK kit supplies its own (tracked, with the WDK's PIRP parameter)
 * and defines NDK_NT_NO_MDL_HELPERS before including this header to leave these out. */
#ifndef NDK_NT_NO_MDL_HELPERS
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
#endif /* NDK_NT_NO_MDL_HELPERS */

#ifdef __cplusplus
}
#endif

#endif /* NDK_NT_H */
