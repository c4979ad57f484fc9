/*
 * ndkconform - the NDKPI provider conformance suite.
 *
 *   ndkconform --provider NAME --list
 *   ndkconform --provider NAME [--addr ADDR] --case NAME      one case, in this process
 *   ndkconform --provider NAME [--addr ADDR] --all [-v]       every case, each in its own process
 *
 * --addr is 127.0.0.1 (default for --case) or ::1, or any local address of an adapter of the
 * provider; --all without --addr runs every case over 127.0.0.1 and ::1. Per-provider exclude
 * file: exclude/<provider>.txt (or --exclude FILE / $NDK_CONFORM_EXCLUDE), one `case-name reason`
 * per line, '#' comments; an excluded case reports notrun with its reason, and an entry without a
 * reason (or naming no case) is an error. Exit status: --case 0 pass, 1 fail, 77 notrun;
 * --all 0 when nothing failed.
 *
 * The case list comes from cases.txt (the same file CMake reads to register one ctest test per
 * case and address family), turned into cf_cases.h at configure time.
 */
#define _GNU_SOURCE
#include "conform.h"
#include "cf_cases.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The source tree's exclude files serve the build tree; an installed ndkconform, whose source
 * tree may be gone, reads the copies `make install` put under the data directory. */
#ifndef CF_EXCLUDE_DIR
#define CF_EXCLUDE_DIR "exclude"
#endif
#ifndef CF_EXCLUDE_INSTALL_DIR
#define CF_EXCLUDE_INSTALL_DIR CF_EXCLUDE_DIR
#endif

struct cf_case {
    const char *name;
    void (*fn)(void);
    int timeout_s;
    const char *what;
};

#define CF_DECL(id, name, timeout, what) void case_##id(void);
CF_CASE_LIST(CF_DECL)
#define CF_ENTRY(id, name, timeout, what) { name, case_##id, timeout, what },
static const struct cf_case cases[] = { CF_CASE_LIST(CF_ENTRY) };
#define NCASES (sizeof cases / sizeof cases[0])

struct exclusion {
    char name[96];
    char reason[256];
};
static struct exclusion excl[256];
static int nexcl;

static const struct cf_case *find_case(const char *name)
{
    for (size_t i = 0; i < NCASES; i++)
        if (strcmp(cases[i].name, name) == 0)
            return &cases[i];
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: ndkconform --provider NAME (--list | --case NAME | --all) [--addr ADDR] [--exclude FILE] "
                    "[-v]\n");
    exit(2);
}

/* Loads the exclude file; malformed entries are errors (exit 2). A missing file is no exclusions. */
static void load_excludes(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno != ENOENT) {
            fprintf(stderr, "ndkconform: %s: %s\n", path, strerror(errno));
            exit(2);
        }
        return;
    }
    char line[512];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            continue;
        char *name = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (*p)
            *p++ = 0;
        while (isspace((unsigned char)*p))
            p++;
        char *end = p + strlen(p);
        while (end > p && isspace((unsigned char)end[-1]))
            *--end = 0;
        if (!*p) {
            fprintf(stderr, "ndkconform: %s:%d: exclusion of '%s' gives no reason (every entry must say why)\n", path,
                    lineno, name);
            exit(2);
        }
        if (!find_case(name)) {
            fprintf(stderr, "ndkconform: %s:%d: '%s' is not a case of this suite\n", path, lineno, name);
            exit(2);
        }
        if (nexcl == (int)(sizeof excl / sizeof excl[0])) {
            fprintf(stderr, "ndkconform: %s: too many entries\n", path);
            exit(2);
        }
        snprintf(excl[nexcl].name, sizeof excl[nexcl].name, "%.95s", name);
        snprintf(excl[nexcl].reason, sizeof excl[nexcl].reason, "%.255s", p);
        nexcl++;
    }
    fclose(f);
}

static const char *excluded(const char *name)
{
    for (int i = 0; i < nexcl; i++)
        if (strcmp(excl[i].name, name) == 0)
            return excl[i].reason;
    return NULL;
}

static bool parse_addr(const char *text, SOCKADDR_INET *out)
{
    memset(out, 0, sizeof *out);
    if (inet_pton(AF_INET, text, &out->Ipv4.sin_addr) == 1) {
        out->Ipv4.sin_family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, text, &out->Ipv6.sin6_addr) == 1) {
        out->Ipv6.sin6_family = AF_INET6;
        return true;
    }
    return false;
}

static void set_addr(const char *text)
{
    if (!parse_addr(text, &cf_env.addr)) {
        fprintf(stderr, "ndkconform: '%s' is not an IPv4 or IPv6 address\n", text);
        exit(2);
    }
    cf_env.family = cf_env.addr.si_family;
    snprintf(cf_env.addr_text, sizeof cf_env.addr_text, "%s", text);
}

/* Runs one case in this process. */
static int run_here(const struct cf_case *c)
{
    const char *why = excluded(c->name);
    cf_env.case_name = c->name;
    printf("== %s over %s (%s)\n", c->name, cf_env.addr_text, cf_env.provider);
    fflush(stdout);
    if (why)
        ndk_test_skip("excluded for %s: %s", cf_env.provider, why);
    c->fn();
    printf("PASS %s over %s\n", c->name, cf_env.addr_text);
    fflush(stdout);
    return 0;
}

enum result { R_PASS, R_FAIL, R_NOTRUN };

/* Runs one case in a child process with a timeout; captures its output. */
static enum result run_child(const struct cf_case *c, char *reason, size_t rlen, char **out_text)
{
    int pfd[2];
    if (pipe(pfd) != 0) {
        snprintf(reason, rlen, "pipe: %s", strerror(errno));
        return R_FAIL;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(reason, rlen, "fork: %s", strerror(errno));
        return R_FAIL;
    }
    if (pid == 0) {
        setpgid(0, 0);
        close(pfd[0]);
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        close(pfd[1]);
        _exit(run_here(c));
    }
    setpgid(pid, pid);
    close(pfd[1]);
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    uint64_t deadline = cf_now_ms() + (uint64_t)cf_ms(c->timeout_s * 1000);
    bool timed_out = false, eof = false;
    while (!eof) {
        int64_t left = (int64_t)(deadline - cf_now_ms());
        if ((int64_t)deadline - (int64_t)cf_now_ms() <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = { .fd = pfd[0], .events = POLLIN };
        int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        if (len + 4096 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t n = read(pfd[0], buf + len, cap - len - 1);
        if (n <= 0)
            eof = true;
        else
            len += (size_t)n;
    }
    close(pfd[0]);
    if (timed_out)
        kill(-pid, SIGKILL);
    int status = 0;
    /* Output closed: the case is ending; bound the wait anyway (a child may hold no pipe end). */
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (!timed_out && (int64_t)deadline - (int64_t)cf_now_ms() <= 0) {
            timed_out = true;
            kill(-pid, SIGKILL);
        }
        cf_sleep_ms(5);
    }
    kill(-pid, SIGKILL);   /* leftovers of the case's process group */
    buf[len] = 0;
    *out_text = buf;
    if (timed_out) {
        snprintf(reason, rlen, "timed out after %d s", cf_ms(c->timeout_s * 1000) / 1000);
        return R_FAIL;
    }
    if (WIFSIGNALED(status)) {
        snprintf(reason, rlen, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
        return R_FAIL;
    }
    int code = WEXITSTATUS(status);
    if (code == 0)
        return R_PASS;
    if (code == NDK_TEST_SKIP_CODE) {
        const char *s = strstr(buf, "SKIP: ");
        snprintf(reason, rlen, "%s", s ? s + 6 : "(no reason printed)");
        char *nl = strchr(reason, '\n');
        if (nl)
            *nl = 0;
        return R_NOTRUN;
    }
    const char *s = strstr(buf, "FAIL ");
    snprintf(reason, rlen, "%s", s ? s + 5 : "exit status");
    char *nl = strchr(reason, '\n');
    if (nl)
        *nl = 0;
    return R_FAIL;
}

static bool have_ipv6(void)
{
    SOCKADDR_INET a;
    parse_addr("::1", &a);
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    bool ok = bind(fd, (struct sockaddr *)&a.Ipv6, sizeof a.Ipv6) == 0;
    close(fd);
    return ok;
}

static int run_all(const char *addr_opt)
{
    const char *addrs[2] = { "127.0.0.1", "::1" };
    int naddr = 2;
    if (addr_opt) {
        addrs[0] = addr_opt;
        naddr = 1;
    }
    int npass = 0, nfail = 0, nnot = 0;
    for (int ai = 0; ai < naddr; ai++) {
        set_addr(addrs[ai]);
        bool v6_missing = cf_env.family == AF_INET6 && !have_ipv6();
        for (size_t i = 0; i < NCASES; i++) {
            const struct cf_case *c = &cases[i];
            char reason[512] = "";
            char *text = NULL;
            enum result r;
            uint64_t t0 = cf_now_ms();
            if (v6_missing) {
                r = R_NOTRUN;
                snprintf(reason, sizeof reason, "::1 is not available on this host");
            } else {
                r = run_child(c, reason, sizeof reason, &text);
            }
            double secs = (double)(cf_now_ms() - t0) / 1000.0;
            const char *tag = r == R_PASS ? "pass  " : r == R_FAIL ? "FAIL  " : "notrun";
            printf("%s %-28s %-10s %6.2fs%s%s\n", tag, c->name, cf_env.addr_text, secs, reason[0] ? "  " : "",
                   reason);
            if (text && (cf_env.verbose || r == R_FAIL)) {
                printf("---- output of %s over %s ----\n%s---- end ----\n", c->name, cf_env.addr_text, text);
            }
            fflush(stdout);
            free(text);
            npass += r == R_PASS;
            nfail += r == R_FAIL;
            nnot += r == R_NOTRUN;
        }
    }
    printf("%d passed, %d failed, %d notrun\n", npass, nfail, nnot);
    return nfail ? 1 : 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "provider", required_argument, NULL, 'p' }, { "list", no_argument, NULL, 'l' },
        { "case", required_argument, NULL, 'c' },     { "all", no_argument, NULL, 'a' },
        { "addr", required_argument, NULL, 'A' },     { "exclude", required_argument, NULL, 'x' },
        { "verbose", no_argument, NULL, 'v' },        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *provider = NULL, *case_name = NULL, *addr = NULL, *exclude = getenv("NDK_CONFORM_EXCLUDE");
    bool list = false, all = false;
    int o;
    while ((o = getopt_long(argc, argv, "p:lc:aA:x:vh", opts, NULL)) != -1) {
        switch (o) {
        case 'p': provider = optarg; break;
        case 'l': list = true; break;
        case 'c': case_name = optarg; break;
        case 'a': all = true; break;
        case 'A': addr = optarg; break;
        case 'x': exclude = optarg; break;
        case 'v': cf_env.verbose = true; break;
        default: usage();
        }
    }
    if (optind != argc || list + all + (case_name != NULL) != 1)
        usage();
    if (!provider && !list)
        usage();
    cf_env.provider = provider;
    const char *scale = getenv("NDK_CONFORM_TIMEOUT_SCALE");
    if (scale && atof(scale) > 0)
        cf_env.tscale = atof(scale);
    char path[1024];
    if (!exclude && provider) {
        snprintf(path, sizeof path, "%s/%s.txt", CF_EXCLUDE_DIR, provider);
        if (access(CF_EXCLUDE_DIR, R_OK) != 0)
            snprintf(path, sizeof path, "%s/%s.txt", CF_EXCLUDE_INSTALL_DIR, provider);
        exclude = path;
    }
    if (provider)
        load_excludes(exclude);
    if (list) {
        for (size_t i = 0; i < NCASES; i++) {
            const char *why = excluded(cases[i].name);
            printf("%-28s %4ds  %s%s%s%s\n", cases[i].name, cases[i].timeout_s, cases[i].what,
                   why ? "  [excluded: " : "", why ? why : "", why ? "]" : "");
        }
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (all)
        return run_all(addr);
    const struct cf_case *c = find_case(case_name);
    if (!c) {
        fprintf(stderr, "ndkconform: no case '%s' (see --list)\n", case_name);
        return 2;
    }
    set_addr(addr ? addr : "127.0.0.1");
    if (cf_env.family == AF_INET6 && !have_ipv6())
        ndk_test_skip("::1 is not available on this host");
    return run_here(c);
}
