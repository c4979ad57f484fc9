/*
 * verifier.c - the kit's Driver Verifier: one line per broken rule, naming the rule and the call
 * site in the driver's code; NDK_WDK_VERIFY=abort makes every report fatal, =off silences them
 * (openndk-wdk(7) lists the rules). Also the kit's plain log lines, bug checks, assertions and
 * the at-unload check registry.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wdk_internal.h"

#undef DbgBreakPoint

enum { VERIFY_REPORT, VERIFY_ABORT, VERIFY_OFF };

static unsigned findings;   /* atomic */

static int verify_mode(void)
{
    const char *v = getenv("NDK_WDK_VERIFY");
    if (!v || !*v)
        return VERIFY_REPORT;
    if (!strcmp(v, "abort") || !strcmp(v, "fatal"))
        return VERIFY_ABORT;
    if (!strcmp(v, "off") || !strcmp(v, "0"))
        return VERIFY_OFF;
    return VERIFY_REPORT;
}

void wdk_verify_report(const char *rule, const char *site, const char *fmt, ...)
{
    int mode = verify_mode();
    if (mode == VERIFY_OFF)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ndkdrv: VERIFIER %s: %s at %s\n", rule, msg, site ? site : "?");
    fflush(stderr);
    __atomic_add_fetch(&findings, 1, __ATOMIC_SEQ_CST);
    if (mode == VERIFY_ABORT) {
        fprintf(stderr, "ndkdrv: NDK_WDK_VERIFY=abort: stopping at the first finding\n");
        abort();
    }
}

unsigned wdk_verify_findings(void)
{
    return __atomic_load_n(&findings, __ATOMIC_SEQ_CST);
}

void wdk_log(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ndkdrv: %s\n", msg);
    fflush(stderr);
}

/* Interned "module!symbol+0xoff" strings, so reports may keep the pointer. sites_lock guards
 * the list; taken with no other kit lock held. */
struct site {
    const void *ra;
    struct site *next;
    char text[];
};
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;
static struct site *sites;
static unsigned nsites;

const char *wdk_site_from_ra(const void *ra)
{
    pthread_mutex_lock(&sites_lock);
    for (struct site *s = sites; s; s = s->next)
        if (s->ra == ra) {
            pthread_mutex_unlock(&sites_lock);
            return s->text;
        }
    pthread_mutex_unlock(&sites_lock);

    char text[256];
    Dl_info info;
    if (ra && dladdr(ra, &info) && info.dli_fname) {
        const char *mod = strrchr(info.dli_fname, '/');
        mod = mod ? mod + 1 : info.dli_fname;
        if (info.dli_sname)
            snprintf(text, sizeof text, "%s!%s+0x%lx", mod, info.dli_sname,
                     (unsigned long)((const char *)ra - (const char *)info.dli_saddr));
        else
            snprintf(text, sizeof text, "%s+0x%lx", mod,
                     (unsigned long)((const char *)ra - (const char *)info.dli_fbase));
    } else {
        snprintf(text, sizeof text, "%p", ra);
    }
    pthread_mutex_lock(&sites_lock);
    if (nsites >= 4096) {   /* bounded: beyond this, reports say "?" */
        pthread_mutex_unlock(&sites_lock);
        return "?";
    }
    struct site *s = malloc(sizeof *s + strlen(text) + 1);
    if (!s) {
        pthread_mutex_unlock(&sites_lock);
        return "?";
    }
    s->ra = ra;
    strcpy(s->text, text);
    s->next = sites;
    sites = s;
    nsites++;
    pthread_mutex_unlock(&sites_lock);
    return s->text;
}

const char *wdk_tag_str(ULONG tag, char buf[8])
{
    for (int i = 0; i < 4; i++) {
        unsigned char c = (unsigned char)(tag >> (8 * i));
        buf[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '.';
    }
    buf[4] = 0;
    return buf;
}

/* Each unsupported API says so once per process. unsupported_lock guards the list. */
static pthread_mutex_t unsupported_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *unsupported_seen[128];
static unsigned unsupported_count;

void wdk_unsupported(const char *api, const char *advice)
{
    pthread_mutex_lock(&unsupported_lock);
    for (unsigned i = 0; i < unsupported_count; i++)
        if (unsupported_seen[i] == api) {
            pthread_mutex_unlock(&unsupported_lock);
            return;
        }
    if (unsupported_count < sizeof unsupported_seen / sizeof unsupported_seen[0])
        unsupported_seen[unsupported_count++] = api;
    pthread_mutex_unlock(&unsupported_lock);
    fprintf(stderr, "ndkdrv: not supported by the OpenNDK kit: %s: %s\n", api, advice);
    fflush(stderr);
}

/* ---- at-unload checks; checks_lock guards the table ---- */
static pthread_mutex_t checks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    wdk_unload_check_fn fn;
    void *ctx;
} checks[16];
static unsigned nchecks;

void wdk_unload_check_register(wdk_unload_check_fn fn, void *ctx)
{
    pthread_mutex_lock(&checks_lock);
    for (unsigned i = 0; i < nchecks; i++)
        if (checks[i].fn == fn && checks[i].ctx == ctx) {
            pthread_mutex_unlock(&checks_lock);
            return;
        }
    if (nchecks < sizeof checks / sizeof checks[0]) {
        checks[nchecks].fn = fn;
        checks[nchecks].ctx = ctx;
        nchecks++;
    }
    pthread_mutex_unlock(&checks_lock);
}

void wdk_unload_checks_run(void)
{
    pthread_mutex_lock(&checks_lock);
    unsigned n = nchecks;
    pthread_mutex_unlock(&checks_lock);
    for (unsigned i = 0; i < n; i++)
        checks[i].fn(checks[i].ctx);
}

/* ---- assertions and bug checks ---- */
BOOLEAN wdk_assert_failed(const char *expr, const char *site)
{
    wdk_verify_report("ASSERTION_FAILED", site, "%s", expr);
    return FALSE;
}

VOID RtlAssert(PVOID VoidFailedAssertion, PVOID VoidFileName, ULONG LineNumber, PSTR MutableMessage)
{
    char site[256];
    snprintf(site, sizeof site, "%s:%u", (const char *)VoidFileName, LineNumber);
    wdk_verify_report("ASSERTION_FAILED", site, "%s%s%s", (const char *)VoidFailedAssertion,
                      MutableMessage ? ": " : "", MutableMessage ? MutableMessage : "");
}

VOID KeBugCheckEx(ULONG BugCheckCode, ULONG_PTR P1, ULONG_PTR P2, ULONG_PTR P3, ULONG_PTR P4)
{
    fprintf(stderr, "ndkdrv: BUGCHECK 0x%08X (0x%lx, 0x%lx, 0x%lx, 0x%lx) at %s: the system would stop here\n",
            BugCheckCode, (unsigned long)P1, (unsigned long)P2, (unsigned long)P3, (unsigned long)P4, WDK_CALLER);
    fflush(stderr);
    abort();
}

VOID KeBugCheck(ULONG BugCheckCode)
{
    KeBugCheckEx(BugCheckCode, 0, 0, 0, 0);
}

VOID ExRaiseStatus(NTSTATUS Status)
{
    fprintf(stderr, "ndkdrv: ExRaiseStatus(0x%08X) at %s: the kit raises no exceptions (__except blocks never "
            "run), so this stops the process\n", (unsigned)Status, WDK_CALLER);
    fflush(stderr);
    abort();
}

VOID RtlFailFast(ULONG Code)
{
    fprintf(stderr, "ndkdrv: RtlFailFast(%u) at %s\n", Code, WDK_CALLER);
    fflush(stderr);
    abort();
}

/* Breakpoints: no debugger is attached; a breakpoint is logged and execution continues. */
VOID DbgBreakPoint(VOID)
{
    wdk_log("DbgBreakPoint at %s (no debugger; continuing)", WDK_CALLER);
}

VOID DbgBreakPointWithStatus(ULONG Status)
{
    wdk_log("DbgBreakPointWithStatus(0x%x) at %s (no debugger; continuing)", Status, WDK_CALLER);
}
