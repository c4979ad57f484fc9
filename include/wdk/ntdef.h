/*
 * ntdef.h - the basic types, annotations and macros of the Windows kernel headers, as the
 * OpenNDK WDK kit gives them to gcc and clang (openndk-wdk(7)).
 *
 * The scalar types and status codes that the NDKPI itself is written in live in <ndk/nt.h>;
 * this header adds what driver code uses beyond them: the character and pointer types, counted
 * strings, lists, object attributes, the calling-convention and __declspec spellings, and the
 * structured-exception keywords. Names and values are the WDK's (Microsoft's "ntdef.h header"
 * documentation); widths are LLP64, as on x64 Windows.
 */
#ifndef OPENNDK_WDK_NTDEF_H
#define OPENNDK_WDK_NTDEF_H

/* The MDL helpers of <ndk/nt.h> are the runtime's own; the kit supplies the WDK's (tracked)
 * IoAllocateMdl & co. in wdm.h. */
#ifndef NDK_NT_NO_MDL_HELPERS
#define NDK_NT_NO_MDL_HELPERS 1
#endif

#include <stdarg.h>
/* Whether or not <ndk/nt.h> honours NDK_NT_NO_MDL_HELPERS, its inline MDL helpers are renamed
 * out of the way while it is read, so the kit's declarations below are the only ones. */
#define IoAllocateMdl wdk_nt_inline_IoAllocateMdl
#define IoFreeMdl wdk_nt_inline_IoFreeMdl
#define MmBuildMdlForNonPagedPool wdk_nt_inline_MmBuildMdlForNonPagedPool
#define MmUnlockPages wdk_nt_inline_MmUnlockPages
#define MmGetSystemAddressForMdlSafe wdk_nt_inline_MmGetSystemAddressForMdlSafe
#define MmGetMdlVirtualAddress wdk_nt_inline_MmGetMdlVirtualAddress
#define MmGetMdlByteCount wdk_nt_inline_MmGetMdlByteCount
#define MmGetMdlByteOffset wdk_nt_inline_MmGetMdlByteOffset
#define MmGetMdlBaseVa wdk_nt_inline_MmGetMdlBaseVa
#include <ndk/nt.h>
#undef IoAllocateMdl
#undef IoFreeMdl
#undef MmBuildMdlForNonPagedPool
#undef MmUnlockPages
#undef MmGetSystemAddressForMdlSafe
#undef MmGetMdlVirtualAddress
#undef MmGetMdlByteCount
#undef MmGetMdlByteOffset
#undef MmGetMdlBaseVa
#include "sal.h"
#include "ntstatus.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- checked build: the kit is a test bench, so DBG defaults to 1 (ASSERT, KdPrint active);
 * a driver's build may pass -DDBG=0 ---- */
#ifndef DBG
#define DBG 1
#endif

/* ---- calling conventions and storage-class spellings: meaningless on x64 Linux ---- */
#ifndef _MSC_VER
#ifndef __cdecl
#define __cdecl
#endif
#ifndef __stdcall
#define __stdcall
#endif
#ifndef __fastcall
#define __fastcall
#endif
#ifndef __forceinline
#define __forceinline static inline __attribute__((always_inline))
#endif
#ifndef __ptr64
#define __ptr64
#endif
#ifndef __unaligned
#define __unaligned
#endif
#ifndef __restrict
#define __restrict restrict
#endif
/* __declspec(x) becomes WDK_DECLSPEC_x: the known ones map to gcc attributes, an unknown one is a
 * compile error that names it. */
#define __declspec(x) WDK_DECLSPEC_##x
#define WDK_DECLSPEC_align(n) __attribute__((aligned(n)))
#define WDK_DECLSPEC_noinline __attribute__((noinline))
#define WDK_DECLSPEC_noreturn __attribute__((noreturn))
#define WDK_DECLSPEC_nothrow
#define WDK_DECLSPEC_novtable
#define WDK_DECLSPEC_dllimport
#define WDK_DECLSPEC_dllexport __attribute__((visibility("default")))
#define WDK_DECLSPEC_selectany __attribute__((weak))
#define WDK_DECLSPEC_restrict
#define WDK_DECLSPEC_noalias
#define WDK_DECLSPEC_deprecated
#define WDK_DECLSPEC_thread __thread
#define WDK_DECLSPEC_code_seg(s)
#define WDK_DECLSPEC_allocate(s)
#define WDK_DECLSPEC_guard(x)
#define WDK_DECLSPEC_safebuffers
#define WDK_DECLSPEC_uuid(s)
#endif

#define NTAPI
#define NTAPI_INLINE
#define NTSYSAPI
#define NTSYSCALLAPI
#define NTKERNELAPI
#define NTHALAPI
#define DDKAPI
#define FASTCALL
#define WINAPI
#define CALLBACK
#define APIENTRY
#define IN
#define OUT
#define OPTIONAL
#define UNALIGNED
#define RESTRICTED_POINTER
#define POINTER_64
#define POINTER_32
#define EXTERN_C extern
#define FORCEINLINE static inline __attribute__((always_inline))
#define NTKRNLVISTAAPI
#define DECLSPEC_IMPORT
#define DECLSPEC_EXPORT __attribute__((visibility("default")))
#define DECLSPEC_NORETURN __attribute__((noreturn))
#define DECLSPEC_NOINLINE __attribute__((noinline))
#define DECLSPEC_NOTHROW
#define DECLSPEC_ALIGN(x) __attribute__((aligned(x)))
#define DECLSPEC_CACHEALIGN __attribute__((aligned(64)))
#define DECLSPEC_SELECTANY __attribute__((weak))
#define DECLSPEC_DEPRECATED
#define DECLSPEC_DEPRECATED_DDK
#define DECLSPEC_DEPRECATED_DDK_WIN2K
#define DECLSPEC_RESTRICT
#define DECLSPEC_NOVTABLE
#define DECLSPEC_GUARDNOCF
#define DECLSPEC_GUARD_SUPPRESS
#define DECLSPEC_SAFEBUFFERS
#define DECLSPEC_NOSANITIZE_ADDRESS
#define DECLSPEC_ADDRSAFE
#define DECLSPEC_UUID(x)
#define SYSTEM_CACHE_ALIGNMENT_SIZE 64
#define MEMORY_ALLOCATION_ALIGNMENT 16
#define NOP_FUNCTION (void)0
#define ANYSIZE_ARRAY 1

/* ---- structured exception handling: the guarded block runs, no exception is ever raised
 * (openndk-wdk(7)). A __finally block runs after the __try block falls through; a return from
 * inside the __try skips it. __leave has no equivalent and is a compile error. ---- */
#ifndef _MSC_VER
#define __try if (1)
#define __except(filter) else if (0)
#define __finally
#define _try __try
#define _except __except
#define _finally __finally
#define __leave __leave_is_not_supported_by_the_OpenNDK_kit
#define GetExceptionCode() ((NTSTATUS)STATUS_UNSUCCESSFUL)
#define GetExceptionInformation() ((PVOID)0)
#define _exception_code() GetExceptionCode()
#define _exception_info() GetExceptionInformation()
#define AbnormalTermination() 0
#endif
#define EXCEPTION_EXECUTE_HANDLER 1
#define EXCEPTION_CONTINUE_SEARCH 0
#define EXCEPTION_CONTINUE_EXECUTION (-1)

/* ---- scalar types beyond <ndk/nt.h> ---- */
typedef CHAR *PCH, *LPCH, *PSZ, *LPSTR, *NPSTR;
typedef const CHAR *PCCH, *LPCCH, *LPCSTR, *PCSZ;
typedef signed char SCHAR, *PSCHAR;
typedef CCHAR *PCCHAR;
typedef WCHAR *LPWCH, *NWPSTR, *PZZWSTR;
typedef const WCHAR *LPCWCH, *PCZZWSTR, *PCUWSTR;
typedef CSHORT *PCSHORT;
typedef ULONG CLONG, *PCLONG;
typedef ULONGLONG DWORDLONG, *PDWORDLONG;
typedef uint8_t BYTE, *PBYTE, *LPBYTE;
typedef uint16_t WORD, *PWORD;
typedef uint32_t DWORD, *PDWORD, *LPDWORD, DWORD32, *PDWORD32;
typedef ULONG64 DWORD64, *PDWORD64;
typedef ULONG_PTR DWORD_PTR, *PDWORD_PTR;
typedef ULONG_PTR KSPIN_LOCK, *PKSPIN_LOCK;
typedef void **PPVOID, *PVOID64;
typedef const void *PCVOID, *LPCVOID;
typedef int BOOL, *PBOOL;
typedef ULONG LOGICAL, *PLOGICAL;
typedef LONG KPRIORITY, *PKPRIORITY;
typedef ULONG ACCESS_MASK, *PACCESS_MASK;
typedef CCHAR KPROCESSOR_MODE;
typedef UCHAR KIRQL, *PKIRQL;
typedef ULONG LCID;
typedef float FLOAT;
typedef double DOUBLE;

typedef enum _MODE { KernelMode, UserMode, MaximumMode } MODE;

#define MAXCHAR 0x7f
#define MINCHAR 0x80
#define MAXUCHAR 0xff
#define MAXSHORT 0x7fff
#define MINSHORT 0x8000
#define MAXLONG 0x7fffffff
#define MINLONG 0x80000000
#define MAXLONGLONG ((LONGLONG)0x7fffffffffffffffLL)
#define MAXULONGLONG ((ULONGLONG)~((ULONGLONG)0))
#define MAXUINT ((UINT)~((UINT)0))
#define MAXINT ((INT)(MAXUINT >> 1))
#define MAXUINT8 ((UINT8)~((UINT8)0))
#define MAXUINT16 ((UINT16)~((UINT16)0))
#define MAXUINT32 ((UINT32)~((UINT32)0))
#define MAXUINT64 ((UINT64)~((UINT64)0))
#define MAXULONG32 ((ULONG32)~((ULONG32)0))
#define MAXULONG64 ((ULONG64)~((ULONG64)0))
#define MAXLONG64 ((LONG64)(MAXULONG64 >> 1))
#define MAXULONG_PTR (~((ULONG_PTR)0))
#define MAXLONG_PTR ((LONG_PTR)(MAXULONG_PTR >> 1))
#define MAXSIZE_T ((SIZE_T)~((SIZE_T)0))
#define MAXDWORD 0xffffffff

#ifndef NULL
#define NULL ((void *)0)
#endif
#define UNICODE_NULL ((WCHAR)0)
#define ANSI_NULL ((CHAR)0)

/* ---- small macros ---- */
#define UNREFERENCED_PARAMETER(P) ((void)(P))
#define DBG_UNREFERENCED_PARAMETER(P) ((void)(P))
#define DBG_UNREFERENCED_LOCAL_VARIABLE(V) ((void)(V))
#define UNREFERENCED_LOCAL_VARIABLE(V) ((void)(V))
#define C_ASSERT(e) _Static_assert((e), #e)
#define ARGUMENT_PRESENT(ArgumentPointer) ((CHAR *)((ULONG_PTR)(ArgumentPointer)) != (CHAR *)(NULL))
#define RTL_NUMBER_OF(A) (sizeof(A) / sizeof((A)[0]))
#define RTL_NUMBER_OF_V1(A) RTL_NUMBER_OF(A)
#define RTL_NUMBER_OF_V2(A) RTL_NUMBER_OF(A)
#define RTL_NUMBER_OF_FIELD(type, field) (RTL_NUMBER_OF(((type *)0)->field))
#define ARRAYSIZE(A) RTL_NUMBER_OF(A)
#define _ARRAYSIZE(A) RTL_NUMBER_OF(A)
#ifndef _countof
#define _countof(A) RTL_NUMBER_OF(A)
#endif
#define RTL_PADDING_BETWEEN_FIELDS(T, F1, F2) \
    ((FIELD_OFFSET(T, F2) > FIELD_OFFSET(T, F1)) \
         ? (FIELD_OFFSET(T, F2) - FIELD_OFFSET(T, F1) - RTL_FIELD_SIZE(T, F1)) \
         : (FIELD_OFFSET(T, F1) - FIELD_OFFSET(T, F2) - RTL_FIELD_SIZE(T, F2)))
#define RTL_CONTAINS_FIELD(Struct, Size, Field) \
    ((((PCHAR)(&(Struct)->Field)) + sizeof((Struct)->Field)) <= (((PCHAR)(Struct)) + (Size)))
/* offsetof, not the WDK's &((type *)0)->field, which UBSan rejects as a null member access. */
#define CONTAINING_RECORD(address, type, field) ((type *)((PCHAR)(address) - offsetof(type, field)))
#define ALIGN_DOWN_BY(length, alignment) ((ULONG_PTR)(length) & ~((ULONG_PTR)(alignment) - 1))
#define ALIGN_UP_BY(length, alignment) (ALIGN_DOWN_BY(((ULONG_PTR)(length) + (alignment) - 1), alignment))
#define ALIGN_DOWN_POINTER_BY(address, alignment) ((PVOID)((ULONG_PTR)(address) & ~((ULONG_PTR)(alignment) - 1)))
#define ALIGN_UP_POINTER_BY(address, alignment) \
    (ALIGN_DOWN_POINTER_BY(((ULONG_PTR)(address) + (alignment) - 1), alignment))
#define ALIGN_DOWN(length, type) ALIGN_DOWN_BY(length, sizeof(type))
#define ALIGN_UP(length, type) ALIGN_UP_BY(length, sizeof(type))
#define ALIGN_DOWN_POINTER(address, type) ALIGN_DOWN_POINTER_BY(address, sizeof(type))
#define ALIGN_UP_POINTER(address, type) ALIGN_UP_POINTER_BY(address, sizeof(type))
#define FlagOn(_F, _SF) ((_F) & (_SF))
#define BooleanFlagOn(F, SF) ((BOOLEAN)(((F) & (SF)) != 0))
#define SetFlag(_F, _SF) ((_F) |= (_SF))
#define ClearFlag(_F, _SF) ((_F) &= ~(_SF))
#if !defined(NOMINMAX) && !defined(__cplusplus)
#ifndef min
#define min(a, b) (((a) < (b)) ? (a) : (b))
#endif
#ifndef max
#define max(a, b) (((a) > (b)) ? (a) : (b))
#endif
#endif
#define Int32x32To64(a, b) (((LONGLONG)((LONG)(a))) * ((LONGLONG)((LONG)(b))))
#define UInt32x32To64(a, b) (((ULONGLONG)((ULONG)(a))) * ((ULONGLONG)((ULONG)(b))))
#define LOWORD(l) ((WORD)(((DWORD_PTR)(l)) & 0xffff))
#define HIWORD(l) ((WORD)((((DWORD_PTR)(l)) >> 16) & 0xffff))
#define LOBYTE(w) ((BYTE)(((DWORD_PTR)(w)) & 0xff))
#define HIBYTE(w) ((BYTE)((((DWORD_PTR)(w)) >> 8) & 0xff))

/* ---- doubly and singly linked lists (helpers in wdm.h) ---- */
typedef struct _LIST_ENTRY {
    struct _LIST_ENTRY *Flink;
    struct _LIST_ENTRY *Blink;
} LIST_ENTRY, *PLIST_ENTRY, *PRLIST_ENTRY;

typedef struct _SINGLE_LIST_ENTRY {
    struct _SINGLE_LIST_ENTRY *Next;
} SINGLE_LIST_ENTRY, *PSINGLE_LIST_ENTRY;

/* ---- counted strings: lengths in bytes, no terminator required ---- */
typedef struct _STRING {
    USHORT Length;
    USHORT MaximumLength;
    PCHAR Buffer;
} STRING, *PSTRING, ANSI_STRING, *PANSI_STRING, OEM_STRING, *POEM_STRING;
typedef const STRING *PCSTRING, *PCANSI_STRING, *PCOEM_STRING;

#define UNICODE_STRING_MAX_BYTES ((USHORT)65534)
#define UNICODE_STRING_MAX_CHARS (32767)
#define RTL_CONSTANT_STRING(s) { (USHORT)(sizeof(s) - sizeof((s)[0])), (USHORT)sizeof(s), (s) }
#define DECLARE_CONST_UNICODE_STRING(_var, _string) \
    const WCHAR _var##_buffer[] = _string; \
    const UNICODE_STRING _var = { (USHORT)(sizeof(_string) - sizeof(WCHAR)), (USHORT)sizeof(_string), \
                                  (PWCH)_var##_buffer }
#define DECLARE_GLOBAL_CONST_UNICODE_STRING(_var, _str) \
    extern const __attribute__((weak)) UNICODE_STRING _var = RTL_CONSTANT_STRING(_str)
#define DECLARE_UNICODE_STRING_SIZE(_var, _size) \
    WCHAR _var##_buffer[_size]; \
    UNICODE_STRING _var = { 0, (USHORT)((_size) * sizeof(WCHAR)), _var##_buffer }

/* ---- object attributes (ZwOpenKey & co.) ---- */
typedef struct _OBJECT_ATTRIBUTES {
    ULONG Length;
    HANDLE RootDirectory;
    PUNICODE_STRING ObjectName;
    ULONG Attributes;
    PVOID SecurityDescriptor;
    PVOID SecurityQualityOfService;
} OBJECT_ATTRIBUTES, *POBJECT_ATTRIBUTES;
typedef const OBJECT_ATTRIBUTES *PCOBJECT_ATTRIBUTES;

#define OBJ_INHERIT 0x00000002L
#define OBJ_PERMANENT 0x00000010L
#define OBJ_EXCLUSIVE 0x00000020L
#define OBJ_CASE_INSENSITIVE 0x00000040L
#define OBJ_OPENIF 0x00000080L
#define OBJ_OPENLINK 0x00000100L
#define OBJ_KERNEL_HANDLE 0x00000200L
#define OBJ_FORCE_ACCESS_CHECK 0x00000400L
#define OBJ_VALID_ATTRIBUTES 0x00001FF2L

/* A block, as in the WDK: usable only as a statement. */
#define InitializeObjectAttributes(p, n, a, r, s) \
    { \
        (p)->Length = sizeof(OBJECT_ATTRIBUTES); \
        (p)->RootDirectory = r; \
        (p)->Attributes = a; \
        (p)->ObjectName = n; \
        (p)->SecurityDescriptor = s; \
        (p)->SecurityQualityOfService = NULL; \
    }
#define RTL_CONSTANT_OBJECT_ATTRIBUTES(n, a) { sizeof(OBJECT_ATTRIBUTES), NULL, RTL_CONST_CAST(PUNICODE_STRING)(n), a, NULL, NULL }
#define RTL_CONST_CAST(type) (type)

/* ---- dispatcher-object vocabulary ---- */
typedef enum _EVENT_TYPE { NotificationEvent, SynchronizationEvent } EVENT_TYPE;
typedef enum _TIMER_TYPE { NotificationTimer, SynchronizationTimer } TIMER_TYPE;
typedef enum _WAIT_TYPE { WaitAll, WaitAny, WaitNotification, WaitDequeue, WaitDpc } WAIT_TYPE;

#ifdef __cplusplus
}
#endif

#include "guiddef.h"

#endif /* OPENNDK_WDK_NTDEF_H */
