/* ndk/nt.h's basic Windows types: the widths, member names and x64 layouts that driver code
 * (and the WDK kit built on this header) relies on. Most checks are static, so a change that
 * breaks one fails the build; the rest run. */
#include <ndk/nt.h>
#include <arpa/inet.h>
#include <stddef.h>
#include "testlib.h"

#define OFF(t, f, v) _Static_assert(offsetof(t, f) == (v), #t "." #f " offset")
#define SIZE(t, v) _Static_assert(sizeof(t) == (v), "sizeof " #t)
#define IS(expr, type) _Static_assert(_Generic((expr), type: 1, default: 0), #expr " is " #type)

/* LLP64 widths; the 64-bit ones are `long long` so &field is what Interlocked*64 takes. */
SIZE(CHAR, 1); SIZE(UCHAR, 1); SIZE(SHORT, 2); SIZE(USHORT, 2); SIZE(WCHAR, 2); SIZE(INT, 4); SIZE(UINT, 4);
SIZE(LONG, 4); SIZE(ULONG, 4); SIZE(LONGLONG, 8); SIZE(ULONGLONG, 8); SIZE(LONG64, 8); SIZE(ULONG64, 8);
SIZE(UINT64, 8); SIZE(ULONG_PTR, sizeof(void *)); SIZE(LONG_PTR, sizeof(void *));
IS((PLONG64)0, long long *); IS((PULONG64)0, unsigned long long *); IS((PLONGLONG)0, long long *);
IS((PULONGLONG)0, unsigned long long *); IS((PUINT64)0, unsigned long long *); IS((UINT)0, unsigned int);
IS((PCHAR)0, char *); IS((PCSTR)0, const char *); IS((PWCHAR)0, WCHAR *); IS((PWSTR)0, WCHAR *);
IS((PCWSTR)0, const WCHAR *);
_Static_assert((WCHAR)-1 > 0, "WCHAR is unsigned");

/* LARGE_INTEGER / ULARGE_INTEGER: halves at 0 and 4, both directly and through .u */
SIZE(LARGE_INTEGER, 8); SIZE(ULARGE_INTEGER, 8);
OFF(LARGE_INTEGER, LowPart, 0); OFF(LARGE_INTEGER, HighPart, 4); OFF(LARGE_INTEGER, u.LowPart, 0);
OFF(LARGE_INTEGER, u.HighPart, 4); OFF(LARGE_INTEGER, QuadPart, 0);
OFF(ULARGE_INTEGER, LowPart, 0); OFF(ULARGE_INTEGER, HighPart, 4); OFF(ULARGE_INTEGER, u.HighPart, 4);
IS(((LARGE_INTEGER *)0)->HighPart, LONG); IS(((ULARGE_INTEGER *)0)->HighPart, ULONG);
IS(((LARGE_INTEGER *)0)->QuadPart, LONGLONG); IS(((ULARGE_INTEGER *)0)->QuadPart, ULONGLONG);

/* ws2def.h / ws2ipdef.h / inaddr.h / in6addr.h x64 layouts, equal to Linux's */
SIZE(IN_ADDR, 4); OFF(IN_ADDR, S_un.S_un_b.s_b4, 3); OFF(IN_ADDR, S_un.S_un_w.s_w2, 2);
OFF(IN_ADDR, S_un.S_addr, 0); OFF(IN_ADDR, s_addr, 0);
SIZE(IN6_ADDR, 16); OFF(IN6_ADDR, u.Byte, 0); OFF(IN6_ADDR, u.Word[7], 14);
SIZE(SCOPE_ID, 4);
SIZE(SOCKADDR_IN, 16); OFF(SOCKADDR_IN, sin_family, 0); OFF(SOCKADDR_IN, sin_port, 2);
OFF(SOCKADDR_IN, sin_addr, 4); OFF(SOCKADDR_IN, sin_zero, 8);
SIZE(SOCKADDR_IN6, 28); OFF(SOCKADDR_IN6, sin6_family, 0); OFF(SOCKADDR_IN6, sin6_port, 2);
OFF(SOCKADDR_IN6, sin6_flowinfo, 4); OFF(SOCKADDR_IN6, sin6_addr, 8); OFF(SOCKADDR_IN6, sin6_scope_id, 24);
OFF(SOCKADDR_IN6, sin6_scope_struct, 24);
SIZE(SOCKADDR_INET, 28); OFF(SOCKADDR_INET, Ipv4, 0); OFF(SOCKADDR_INET, Ipv6, 0); OFF(SOCKADDR_INET, si_family, 0);
IS(((PSOCKADDR_IN)0)->sin_addr, IN_ADDR); IS(((PSOCKADDR_IN6)0)->sin6_addr, IN6_ADDR);

/* MDL: 48 bytes, Process is the WDK's PEPROCESS type */
SIZE(PROCESSOR_NUMBER, 4); OFF(PROCESSOR_NUMBER, Number, 2); OFF(PROCESSOR_NUMBER, Reserved, 3);
SIZE(MDL, 48); OFF(MDL, Next, 0); OFF(MDL, Size, 8); OFF(MDL, MdlFlags, 10); OFF(MDL, Process, 16);
OFF(MDL, MappedSystemVa, 24); OFF(MDL, StartVa, 32); OFF(MDL, ByteCount, 40); OFF(MDL, ByteOffset, 44);
IS(((PMDL)0)->Process, struct _EPROCESS *);

int nt_kit_mode_check(void);   /* nt_kit_mode.c */

int main(void)
{
    CHECK_EQ(nt_kit_mode_check(), 0);

    LARGE_INTEGER li;
    li.QuadPart = -2;   /* 0xFFFFFFFF_FFFFFFFE */
    CHECK_EQ(li.LowPart, 0xFFFFFFFEu);
    CHECK_EQ(li.HighPart, -1);
    CHECK_EQ(li.u.LowPart, 0xFFFFFFFEu);
    li.u.HighPart = 1;
    CHECK_EQ(li.QuadPart, 0x1FFFFFFFEll);
    ULARGE_INTEGER ul = { .QuadPart = 0x123456789ull };
    CHECK_EQ(ul.HighPart, 1);
    CHECK_EQ(ul.u.LowPart, 0x23456789u);

    /* An address written through the Windows names reads back through Linux's (and back). */
    SOCKADDR_INET a;
    memset(&a, 0, sizeof a);
    a.Ipv4.sin_family = AF_INET;
    a.Ipv4.sin_port = htons(445);
    a.Ipv4.sin_addr.S_un.S_un_b.s_b1 = 192;
    a.Ipv4.sin_addr.S_un.S_un_b.s_b2 = 0;
    a.Ipv4.sin_addr.S_un.S_un_b.s_b3 = 2;
    a.Ipv4.sin_addr.S_un.S_un_b.s_b4 = 7;
    const struct sockaddr_in *lin = (const struct sockaddr_in *)&a;
    CHECK_EQ(lin->sin_addr.s_addr, inet_addr("192.0.2.7"));
    CHECK_EQ(a.Ipv4.sin_addr.s_addr, a.Ipv4.sin_addr.S_un.S_addr);
    CHECK_EQ(ntohs(lin->sin_port), 445);

    memset(&a, 0, sizeof a);
    a.Ipv6.sin6_family = AF_INET6;
    CHECK(inet_pton(AF_INET6, "2001:db8::1:2", &a.Ipv6.sin6_addr) == 1);
    a.Ipv6.sin6_scope_struct.Zone = 5;
    a.Ipv6.sin6_scope_struct.Level = ScopeLevelLink;
    const struct sockaddr_in6 *lin6 = (const struct sockaddr_in6 *)&a;
    CHECK_EQ(a.Ipv6.sin6_addr.u.Byte[0], 0x20);
    CHECK_EQ(ntohs(a.Ipv6.sin6_addr.u.Word[7]), 2);
    CHECK_EQ(lin6->sin6_addr.s6_addr[15], 2);
    CHECK_EQ(a.Ipv6.sin6_addr.s6_addr[2], 0x0d);
    /* SCOPE_ID puts Zone in the low 28 bits and Level in the top 4, as MSVC does on x64. */
    CHECK_EQ(lin6->sin6_scope_id, 0x20000005u);
    CHECK_EQ(a.Ipv6.sin6_scope_id, a.Ipv6.sin6_scope_struct.Value);

    /* Interlocked*64 in the WDK take LONG64 volatile *; a ULONG64 field converts to it. */
    struct { ULONG64 count; LONGLONG when; } s = { 1, 2 };
    LONG64 volatile *p64 = (LONG64 volatile *)&s.count;
    __atomic_add_fetch(p64, 1, __ATOMIC_SEQ_CST);
    long long volatile *pw = &s.when;
    CHECK_EQ(s.count + (ULONG64)*pw, 4);

    /* Severity classes of NTSTATUS */
    CHECK(NT_SUCCESS(STATUS_PENDING) && NT_INFORMATION(0x40000000) && !NT_ERROR(STATUS_PENDING));
    CHECK(NT_WARNING(STATUS_BUFFER_OVERFLOW) && !NT_SUCCESS(STATUS_BUFFER_OVERFLOW));
    CHECK(NT_ERROR(STATUS_UNSUCCESSFUL) && !NT_WARNING(STATUS_UNSUCCESSFUL));
    printf("nt: types, layouts and severity classes match the WDK's\n");
    return 0;
}
