/*
 * ndksmb - reads, writes and lists files on an SMB3 server over SMB Direct (the MS-SMBD
 * transport on NDK, iWARP port 5445) or, with --tcp, over SMB2 on TCP (port 445); `bench`
 * measures sequential throughput and per-I/O latency. See man/ndksmb.1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "ndk_sync_time.h"
#include "ndk_tool.h"
#include "ndk_tool_adapter.h"
#include "ndk_tool_addr.h"
#include "ndk_tool_json.h"
#include "ndk_tool_size.h"
#include "ndk_tool_stat.h"
#include "smb2_client.h"
#include "smbd.h"

#define NDKSMB_WINDOW (16u << 20)

typedef struct opts {
    bool tcp, json, quiet, guest, sign, no_rdma, no_invalidate, do_read, do_write, accept_unverified;
    const char *user, *domain, *password_file, *auth_file, *local, *provider;
    char *password;
    uint16_t dialect;
    uint64_t io_size, depth, size;
    int timeout_ms;
} opts;

typedef struct target {
    char host[256];
    uint16_t port;
    char share[256];
    char path[1024];
} target;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ndksmb [options] get //SERVER[:PORT]/SHARE/PATH LOCALFILE\n"
            "       ndksmb [options] put LOCALFILE //SERVER[:PORT]/SHARE/PATH\n"
            "       ndksmb [options] ls //SERVER[:PORT]/SHARE[/DIR]\n"
            "       ndksmb [options] bench //SERVER[:PORT]/SHARE/PATH\n"
            "options: --tcp  -U|--user U  --domain D  --password-file F  -A|--auth-file F  --guest\n"
            "         --dialect 3.0.2|3.1.1  --sign  --no-rdma  --no-invalidate  --io-size N  --depth N\n"
            "         --size N (bench)  --read|--write (bench)  --local ADDR  --provider NAME\n"
            "         --timeout MS  --json  -q|--quiet  --accept-unverified-setup\n"
            "credentials: NDKSMB_USER, NDKSMB_PASSWORD, NDKSMB_DOMAIN; the password is never echoed\n");
}

static int parse_target(const char *url, target *t)
{
    memset(t, 0, sizeof *t);
    if (strncmp(url, "//", 2) && strncmp(url, "\\\\", 2))
        return -1;
    const char *p = url + 2;
    const char *hend;
    if (*p == '[') {
        hend = strchr(p, ']');
        if (!hend)
            return -1;
        snprintf(t->host, sizeof t->host, "%.*s", (int)(hend - p - 1), p + 1);
        hend++;
    } else {
        hend = p + strcspn(p, ":/\\");
        snprintf(t->host, sizeof t->host, "%.*s", (int)(hend - p), p);
    }
    if (*hend == ':') {
        char *e;
        unsigned long port = strtoul(hend + 1, &e, 10);
        if (port == 0 || port > 65535)
            return -1;
        t->port = (uint16_t)port;
        hend = e;
    }
    if (*hend != '/' && *hend != '\\')
        return -1;
    p = hend + 1;
    size_t sl = strcspn(p, "/\\");
    if (sl == 0)
        return -1;
    snprintf(t->share, sizeof t->share, "%.*s", (int)sl, p);
    p += sl;
    while (*p == '/' || *p == '\\')
        p++;
    snprintf(t->path, sizeof t->path, "%s", p);
    return t->host[0] ? 0 : -1;
}

static int resolve(const char *host, uint16_t port, SOCKADDR_INET *out)
{
    if (ndk_tool_addr_parse_ip(host, out) == 0) {
        ndk_tool_addr_set_port(out, port);
        return 0;
    }
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return -1;
    memset(out, 0, sizeof *out);
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    ndk_tool_addr_set_port(out, port);
    return 0;
}

static char *read_line_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char buf[1024];
    char *r = fgets(buf, sizeof buf, f) ? strdup(buf) : strdup("");
    fclose(f);
    if (r)
        r[strcspn(r, "\r\n")] = 0;
    memset(buf, 0, sizeof buf);
    return r;
}

/* smbclient-style: username = U, password = P, domain = D. */
static int read_auth_file(opts *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    static char user[256], dom[256];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        char *k = line, *v = eq + 1;
        while (*k == ' ')
            k++;
        for (char *e = k + strlen(k); e > k && e[-1] == ' ';)
            *--e = 0;
        while (*v == ' ')
            v++;
        if (!strcmp(k, "username")) {
            snprintf(user, sizeof user, "%s", v);
            o->user = user;
        } else if (!strcmp(k, "password")) {
            free(o->password);
            o->password = strdup(v);
        } else if (!strcmp(k, "domain")) {
            snprintf(dom, sizeof dom, "%s", v);
            o->domain = dom;
        }
    }
    memset(line, 0, sizeof line);
    fclose(f);
    return 0;
}

static char *prompt_password(void)
{
    if (!isatty(STDIN_FILENO))
        return NULL;
    struct termios t, saved;
    tcgetattr(STDIN_FILENO, &saved);
    t = saved;
    t.c_lflag &= ~(tcflag_t)ECHO;
    fprintf(stderr, "Password: ");
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &t);
    char buf[512];
    char *r = fgets(buf, sizeof buf, stdin) ? strdup(buf) : NULL;
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    fprintf(stderr, "\n");
    if (r)
        r[strcspn(r, "\r\n")] = 0;
    memset(buf, 0, sizeof buf);
    return r;
}

static int credentials(opts *o)
{
    if (o->auth_file && read_auth_file(o, o->auth_file) < 0) {
        ndk_tool_err("cannot read %s: %s", o->auth_file, strerror(errno));
        return -1;
    }
    if (!o->user)
        o->user = getenv("NDKSMB_USER");
    if (!o->domain)
        o->domain = getenv("NDKSMB_DOMAIN");
    if (o->guest) {
        o->user = NULL;
        return 0;
    }
    if (!o->password && o->password_file) {
        o->password = read_line_file(o->password_file);
        if (!o->password) {
            ndk_tool_err("cannot read %s: %s", o->password_file, strerror(errno));
            return -1;
        }
    }
    if (!o->password && getenv("NDKSMB_PASSWORD"))
        o->password = strdup(getenv("NDKSMB_PASSWORD"));
    if (o->user && *o->user && !o->password)
        o->password = prompt_password();
    if (o->user && *o->user && !o->password) {
        ndk_tool_err("no password for %s (use --password-file, --auth-file or NDKSMB_PASSWORD)", o->user);
        return -1;
    }
    return 0;
}

/* ---- session set-up ---- */

typedef struct session {
    ndk_rt          *rt;
    ndk_tool_adapter ad;
    bool             ad_open;
    smb2_client     *cli;
    smb2_fid         fid;
    bool             fid_open;
    char             transport[64];
} session;

static int fail_smb(session *s, int rc, const char *what)
{
    ndk_tool_err("%s: %s", what, s->cli ? smb2_error_text(s->cli) : strerror(-rc));
    return 1;
}

static int session_open(session *s, opts *o, const target *t)
{
    memset(s, 0, sizeof *s);
    SOCKADDR_INET dst;
    uint16_t port = t->port ? t->port : o->tcp ? 445 : SMBD_DEFAULT_PORT;
    if (resolve(t->host, port, &dst) < 0) {
        ndk_tool_err("cannot resolve %s", t->host);
        return 1;
    }
    smb2_transport tr;
    int rc;
    if (o->tcp) {
        rc = smb2_transport_tcp(&dst, o->timeout_ms, &tr);
        if (rc) {
            ndk_tool_err("TCP connect to %s:%u: %s", t->host, port, strerror(-rc));
            return 1;
        }
        snprintf(s->transport, sizeof s->transport, "tcp");
    } else {
        char why[256];
        NTSTATUS st = ndk_tool_rt_open(&s->rt);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("NDK runtime: %s", ndk_tool_status(st));
            return 1;
        }
        SOCKADDR_INET local, src;
        if (o->local && ndk_tool_addr_parse_ip(o->local, &local) < 0) {
            ndk_tool_err("bad --local address %s", o->local);
            return 1;
        }
        ndk_rt_adapter_id id;
        st = ndk_tool_adapter_pick(s->rt, o->local ? &local : NULL, &dst, o->provider, 0, &id, &src, why, sizeof why);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("no NDK adapter for %s: %s", t->host, why);
            return 1;
        }
        st = ndk_tool_adapter_open(s->rt, id, &s->ad);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("opening the adapter: %s", ndk_tool_status(st));
            return 1;
        }
        s->ad_open = true;
        smbd_params sp;
        smbd_params_default(&sp);
        sp.timeout_ms = o->timeout_ms;
        sp.no_invalidate = o->no_invalidate;
        smbd_conn *conn;
        rc = smbd_connect(s->ad.adapter, &src, &dst, &sp, &conn);
        if (rc) {
            ndk_tool_err("SMB Direct to %s:%u: %s", t->host, port, conn ? smbd_error_text(conn) : strerror(-rc));
            smbd_close(conn);
            return 1;
        }
        smb2_transport_smbd(conn, &tr);
        snprintf(s->transport, sizeof s->transport, "smbdirect (%s)", s->ad.provider);
    }
    smb2_options so = { .max_dialect = o->dialect, .sign = o->sign, .no_rdma = o->no_rdma, .timeout_ms = o->timeout_ms,
                        .accept_unverified_setup = o->accept_unverified };
    if ((rc = smb2_open(&tr, &so, &s->cli))) {
        tr.close(tr.ctx);
        return fail_smb(s, rc, "client");
    }
    if ((rc = smb2_negotiate(s->cli)))
        return fail_smb(s, rc, "negotiate");
    rc = smb2_session_setup(s->cli, o->user, o->domain ? o->domain : "", o->password);
    if (o->password)
        memset(o->password, 0, strlen(o->password));
    if (rc)
        return fail_smb(s, rc, "session setup");
    if (o->accept_unverified && !smb2_get_info(s->cli)->final_signature_ok && !smb2_get_info(s->cli)->guest &&
        !o->quiet && !o->json)
        ndk_tool_err("warning: %s", smb2_error_text(s->cli));
    if ((rc = smb2_tree_connect(s->cli, t->host, t->share)))
        return fail_smb(s, rc, "tree connect");
    if (o->io_size)
        smb2_set_io_size(s->cli, (uint32_t)o->io_size);
    return 0;
}

static void session_close(session *s)
{
    if (s->cli) {
        if (s->fid_open)
            smb2_close_file(s->cli, &s->fid);
        smb2_logoff(s->cli);
        smb2_close(s->cli);
    }
    if (s->ad_open)
        ndk_tool_adapter_close(&s->ad);
    if (s->rt)
        ndk_rt_close(s->rt);
}

/* ---- progress ---- */

typedef struct progress {
    bool     on;
    uint64_t start, last, total;
} progress;

static void progress_init(progress *p, const opts *o, uint64_t total)
{
    p->on = !o->quiet && !o->json && isatty(STDERR_FILENO);
    p->start = p->last = ndk_sync_time_now_ns();
    p->total = total;
}

static void progress_tick(progress *p, uint64_t done, bool final)
{
    if (!p->on)
        return;
    uint64_t now = ndk_sync_time_now_ns();
    if (!final && (now - p->last < 250000000u || now - p->start < 500000000u))
        return;
    p->last = now;
    double secs = (double)(now - p->start) / 1e9;
    fprintf(stderr, "\r%10.1f MiB / %.1f MiB  %7.1f MB/s  %5.1f%%", (double)done / 1048576.0,
            (double)p->total / 1048576.0, secs > 0 ? (double)done / secs / 1e6 : 0.0,
            p->total ? 100.0 * (double)done / (double)p->total : 100.0);
    if (final)
        fprintf(stderr, "\n");
}

static void *alloc_window(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n ? n : 4096))
        return NULL;
    return p;
}

static void report(const opts *o, session *s, const char *op, const char *remote, uint64_t bytes, uint64_t ns)
{
    const smb2_info *in = smb2_get_info(s->cli);
    double secs = (double)ns / 1e9;
    if (o->json) {
        ndk_tool_json j;
        ndk_tool_json_init(&j, stdout);
        ndk_tool_json_open(&j, NULL, '{');
        ndk_tool_json_str(&j, "op", op);
        ndk_tool_json_str(&j, "remote", remote);
        ndk_tool_json_str(&j, "transport", s->transport);
        ndk_tool_json_str(&j, "dialect", in->dialect == 0x0311 ? "3.1.1" : "3.0.2");
        ndk_tool_json_u64(&j, "bytes", bytes);
        ndk_tool_json_dbl(&j, "seconds", secs);
        ndk_tool_json_dbl(&j, "mb_per_s", secs > 0 ? (double)bytes / secs / 1e6 : 0);
        ndk_tool_json_u64(&j, "max_read", in->max_read);
        ndk_tool_json_u64(&j, "max_write", in->max_write);
        ndk_tool_json_u64(&j, "io_size", smb2_io_size(s->cli, strcmp(op, "put") == 0));
        ndk_tool_json_u64(&j, "rdma_reads", in->rdma_reads);
        ndk_tool_json_u64(&j, "rdma_writes", in->rdma_writes);
        ndk_tool_json_u64(&j, "inline_reads", in->inline_reads);
        ndk_tool_json_u64(&j, "inline_writes", in->inline_writes);
        ndk_tool_json_bool(&j, "signed", in->signing);
        ndk_tool_json_bool(&j, "guest", in->guest || in->anonymous);
        ndk_tool_json_bool(&j, "setup_signature_verified", in->final_signature_ok);
        ndk_tool_json_close(&j, '}');
        fputc('\n', stdout);
    } else if (!o->quiet) {
        fprintf(stderr, "%s %s: %llu bytes in %.3f s (%.1f MB/s) over %s, SMB %s%s\n", op, remote,
                (unsigned long long)bytes, secs, secs > 0 ? (double)bytes / secs / 1e6 : 0.0, s->transport,
                in->dialect == 0x0311 ? "3.1.1" : "3.0.2", in->signing ? ", signed" : "");
    }
}

/* session_open, undone again where it fails: 0 with s open, or the exit status. */
static int session_start(session *s, opts *o, const target *t)
{
    int rc = session_open(s, o, t);
    if (rc)
        session_close(s);
    return rc;
}

/* The command line's //SERVER[:PORT]/SHARE/PATH (a file: with a path) or
 * //SERVER[:PORT]/SHARE[/DIR]; 0, or -1 after saying what is wrong. */
static int parse_remote(const char *url, target *t, bool file)
{
    if (parse_target(url, t) < 0 || (file && !t->path[0])) {
        ndk_tool_err("bad remote path %s (//SERVER[:PORT]/SHARE%s)", url, file ? "/PATH" : "[/DIR]");
        return -1;
    }
    return 0;
}

/* ---- commands ---- */

static int cmd_get(opts *o, const char *url, const char *local)
{
    target t;
    if (parse_remote(url, &t, true))
        return 2;
    session s;
    int rc = session_start(&s, o, &t);
    if (rc)
        return rc;
    uint64_t size, qsize;
    bool dir;
    if ((rc = smb2_create(s.cli, t.path, SMB2_OPEN_READ, &s.fid, &size, &dir))) {
        rc = fail_smb(&s, rc, t.path);
        session_close(&s);
        return rc;
    }
    s.fid_open = true;
    if (dir) {
        ndk_tool_err("%s is a directory", t.path);
        session_close(&s);
        return 1;
    }
    if ((rc = smb2_query_size(s.cli, &s.fid, &qsize)) == 0)
        size = qsize;
    int fd = strcmp(local, "-") ? open(local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : STDOUT_FILENO;
    if (fd < 0) {
        ndk_tool_err("%s: %s", local, strerror(errno));
        session_close(&s);
        return 1;
    }
    size_t win = size < NDKSMB_WINDOW ? (size_t)size : NDKSMB_WINDOW;
    uint8_t *buf = alloc_window(win);
    progress pr;
    progress_init(&pr, o, size);
    uint64_t t0 = ndk_sync_time_now_ns(), off = 0;
    int ret = 0;
    while (off < size) {
        size_t want = size - off < win ? (size_t)(size - off) : win, got = 0;
        rc = smb2_read(s.cli, &s.fid, off, buf, want, (unsigned)o->depth, &got);
        if (rc) {
            ret = fail_smb(&s, rc, "read");
            break;
        }
        if (got && write(fd, buf, got) != (ssize_t)got) {
            ndk_tool_err("%s: %s", local, strerror(errno));
            ret = 1;
            break;
        }
        off += got;
        progress_tick(&pr, off, false);
        if (got < want)
            break;                    /* the file shrank */
    }
    progress_tick(&pr, off, true);
    uint64_t ns = ndk_sync_time_now_ns() - t0;
    free(buf);
    if (fd != STDOUT_FILENO && close(fd) < 0 && !ret) {
        ndk_tool_err("%s: %s", local, strerror(errno));
        ret = 1;
    }
    if (!ret)
        report(o, &s, "get", url, off, ns);
    session_close(&s);
    return ret;
}

static int cmd_put(opts *o, const char *local, const char *url)
{
    target t;
    if (parse_remote(url, &t, true))
        return 2;
    int fd = strcmp(local, "-") ? open(local, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
    struct stat stt;
    if (fd < 0 || fstat(fd, &stt) < 0) {
        ndk_tool_err("%s: %s", local, strerror(errno));
        return 1;
    }
    session s;
    int rc = session_start(&s, o, &t);
    if (rc) {
        close(fd);
        return rc;
    }
    if ((rc = smb2_create(s.cli, t.path, SMB2_OPEN_WRITE, &s.fid, NULL, NULL))) {
        rc = fail_smb(&s, rc, t.path);
        session_close(&s);
        close(fd);
        return rc;
    }
    s.fid_open = true;
    uint8_t *buf = alloc_window(NDKSMB_WINDOW);
    progress pr;
    progress_init(&pr, o, S_ISREG(stt.st_mode) ? (uint64_t)stt.st_size : 0);
    uint64_t t0 = ndk_sync_time_now_ns(), off = 0;
    int ret = 0;
    for (;;) {
        size_t have = 0;
        while (have < NDKSMB_WINDOW) {
            ssize_t n = read(fd, buf + have, NDKSMB_WINDOW - have);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                ndk_tool_err("%s: %s", local, strerror(errno));
                ret = 1;
                break;
            }
            if (n == 0)
                break;
            have += (size_t)n;
        }
        if (ret || have == 0)
            break;
        size_t done = 0;
        rc = smb2_write(s.cli, &s.fid, off, buf, have, (unsigned)o->depth, &done);
        if (rc) {
            ret = fail_smb(&s, rc, "write");
            break;
        }
        off += done;
        progress_tick(&pr, off, false);
        if (have < NDKSMB_WINDOW)
            break;
    }
    progress_tick(&pr, off, true);
    uint64_t ns = ndk_sync_time_now_ns() - t0;
    free(buf);
    if (fd != STDIN_FILENO)
        close(fd);
    if (!ret) {
        uint64_t size;
        if (smb2_query_size(s.cli, &s.fid, &size) == 0 && size != off) {
            ndk_tool_err("the server reports %llu bytes after writing %llu", (unsigned long long)size,
                         (unsigned long long)off);
            ret = 1;
        }
    }
    if (!ret && smb2_close_file(s.cli, &s.fid)) {
        ret = fail_smb(&s, -EIO, "close");
    }
    s.fid_open = false;
    if (!ret)
        report(o, &s, "put", url, off, ns);
    session_close(&s);
    return ret;
}

typedef struct ls_ctx {
    const opts    *o;
    ndk_tool_json *j;
    unsigned       count;
} ls_ctx;

static void ls_entry(void *ctx, const smb2_dirent *e)
{
    ls_ctx *l = ctx;
    if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
        return;
    l->count++;
    if (l->j) {
        ndk_tool_json_open(l->j, NULL, '{');
        ndk_tool_json_str(l->j, "name", e->name);
        ndk_tool_json_u64(l->j, "size", e->size);
        ndk_tool_json_bool(l->j, "dir", e->is_dir);
        ndk_tool_json_u64(l->j, "mtime", e->mtime >= 116444736000000000ull
                                             ? (e->mtime - 116444736000000000ull) / 10000000u : 0);
        ndk_tool_json_close(l->j, '}');
    } else {
        printf("%c %12llu  %s\n", e->is_dir ? 'd' : '-', (unsigned long long)e->size, e->name);
    }
}

static int cmd_ls(opts *o, const char *url)
{
    target t;
    if (parse_remote(url, &t, false))
        return 2;
    session s;
    int rc = session_start(&s, o, &t);
    if (rc)
        return rc;
    if ((rc = smb2_create(s.cli, t.path, SMB2_OPEN_DIR, &s.fid, NULL, NULL))) {
        rc = fail_smb(&s, rc, t.path[0] ? t.path : "share root");
        session_close(&s);
        return rc;
    }
    s.fid_open = true;
    ndk_tool_json j;
    ls_ctx l = { o, o->json ? &j : NULL, 0 };
    if (o->json) {
        ndk_tool_json_init(&j, stdout);
        ndk_tool_json_open(&j, NULL, '[');
    }
    rc = smb2_query_directory(s.cli, &s.fid, ls_entry, &l);
    if (o->json) {
        ndk_tool_json_close(&j, '[');
        fputc('\n', stdout);
    }
    int ret = rc ? fail_smb(&s, rc, "list") : 0;
    session_close(&s);
    return ret;
}

static void bench_json_or_print(const opts *o, ndk_tool_json *j, const char *name, uint64_t bytes, uint64_t ns,
                                uint64_t *lat, size_t n)
{
    static const double q[] = { 0.5, 0.99 };
    uint64_t at[2];
    ndk_tool_stat_percentiles(lat, n, q, 2, at);
    double secs = (double)ns / 1e9, mbs = secs > 0 ? (double)bytes / secs / 1e6 : 0;
    double p50 = (double)at[0] / 1e3, p99 = (double)at[1] / 1e3;
    if (o->json) {
        ndk_tool_json_open(j, name, '{');
        ndk_tool_json_u64(j, "bytes", bytes);
        ndk_tool_json_dbl(j, "seconds", secs);
        ndk_tool_json_dbl(j, "mb_per_s", mbs);
        ndk_tool_json_u64(j, "ios", n);
        ndk_tool_json_dbl(j, "lat_p50_us", p50);
        ndk_tool_json_dbl(j, "lat_p99_us", p99);
        ndk_tool_json_close(j, '}');
    } else {
        printf("%-6s %10llu B %8.3f s %10.1f MB/s %8zu I/Os  p50 %9.1f us  p99 %9.1f us\n", name,
               (unsigned long long)bytes, secs, mbs, n, p50, p99);
    }
}

static int cmd_bench(opts *o, const char *url)
{
    target t;
    if (parse_remote(url, &t, true))
        return 2;
    session s;
    int rc = session_start(&s, o, &t);
    if (rc)
        return rc;
    uint64_t size = o->size ? o->size : 64u << 20;
    uint32_t io = smb2_io_size(s.cli, true);
    size_t nlat = (size_t)(size / (io ? io : 1)) + 16, count = 0;
    uint64_t *lat = calloc(nlat, sizeof *lat);
    size_t win = size < NDKSMB_WINDOW ? (size_t)size : NDKSMB_WINDOW;
    uint8_t *buf = alloc_window(win);
    for (size_t i = 0; i < win; i++)
        buf[i] = (uint8_t)(i * 7 + 1);
    ndk_tool_json j;
    if (o->json) {
        ndk_tool_json_init(&j, stdout);
        ndk_tool_json_open(&j, NULL, '{');
        ndk_tool_json_str(&j, "transport", s.transport);
        ndk_tool_json_u64(&j, "io_size", io);
        ndk_tool_json_u64(&j, "depth", o->depth);
        ndk_tool_json_u64(&j, "size", size);
    } else {
        printf("ndksmb bench %s over %s: %llu bytes, I/O %u B, depth %llu\n", url, s.transport,
               (unsigned long long)size, io, (unsigned long long)o->depth);
    }
    int ret = 0;
    bool both = !o->do_read && !o->do_write;
    if (o->do_write || both) {
        rc = smb2_create(s.cli, t.path, SMB2_OPEN_WRITE, &s.fid, NULL, NULL);
        if (rc)
            ret = fail_smb(&s, rc, t.path);
        s.fid_open = !rc;
        smb2_set_latency_sink(s.cli, lat, nlat, &count);
        uint64_t t0 = ndk_sync_time_now_ns(), off = 0;
        while (!ret && off < size) {
            size_t n = size - off < win ? (size_t)(size - off) : win, done;
            if ((rc = smb2_write(s.cli, &s.fid, off, buf, n, (unsigned)o->depth, &done)))
                ret = fail_smb(&s, rc, "write");
            off += n;
        }
        uint64_t ns = ndk_sync_time_now_ns() - t0;
        smb2_set_latency_sink(s.cli, NULL, 0, NULL);
        if (!ret)
            bench_json_or_print(o, &j, "write", off, ns, lat, count < nlat ? count : nlat);
        if (s.fid_open)
            smb2_close_file(s.cli, &s.fid);
        s.fid_open = false;
    }
    if (!ret && (o->do_read || both)) {
        uint64_t fsize = 0;
        rc = smb2_create(s.cli, t.path, SMB2_OPEN_READ, &s.fid, &fsize, NULL);
        if (rc)
            ret = fail_smb(&s, rc, t.path);
        s.fid_open = !rc;
        if (fsize < size)
            size = fsize;
        count = 0;
        smb2_set_latency_sink(s.cli, lat, nlat, &count);
        uint64_t t0 = ndk_sync_time_now_ns(), off = 0;
        while (!ret && off < size) {
            size_t n = size - off < win ? (size_t)(size - off) : win, done;
            if ((rc = smb2_read(s.cli, &s.fid, off, buf, n, (unsigned)o->depth, &done)))
                ret = fail_smb(&s, rc, "read");
            off += done;
            if (done < n)
                break;
        }
        uint64_t ns = ndk_sync_time_now_ns() - t0;
        smb2_set_latency_sink(s.cli, NULL, 0, NULL);
        if (!ret)
            bench_json_or_print(o, &j, "read", off, ns, lat, count < nlat ? count : nlat);
    }
    if (o->json) {
        ndk_tool_json_close(&j, '}');
        fputc('\n', stdout);
    }
    free(buf);
    free(lat);
    session_close(&s);
    return ret;
}

int main(int argc, char **argv)
{
    ndk_tool_set_progname("ndksmb");
    opts o = { .dialect = 0x0311, .depth = 1, .timeout_ms = 30000 };
    enum { O_TCP = 256, O_USER, O_DOMAIN, O_PWFILE, O_AUTHFILE, O_GUEST, O_DIALECT, O_SIGN, O_NORDMA, O_NOINV,
           O_IOSIZE, O_DEPTH, O_SIZE, O_READ, O_WRITE, O_LOCAL, O_PROVIDER, O_TIMEOUT, O_JSON, O_QUIET, O_HELP, O_ACCEPT };
    static const struct option lo[] = {
        { "tcp", no_argument, 0, O_TCP }, { "user", required_argument, 0, O_USER },
        { "domain", required_argument, 0, O_DOMAIN }, { "password-file", required_argument, 0, O_PWFILE },
        { "auth-file", required_argument, 0, O_AUTHFILE }, { "guest", no_argument, 0, O_GUEST },
        { "dialect", required_argument, 0, O_DIALECT }, { "sign", no_argument, 0, O_SIGN },
        { "no-rdma", no_argument, 0, O_NORDMA }, { "no-invalidate", no_argument, 0, O_NOINV },
        { "io-size", required_argument, 0, O_IOSIZE }, { "depth", required_argument, 0, O_DEPTH },
        { "size", required_argument, 0, O_SIZE }, { "read", no_argument, 0, O_READ },
        { "write", no_argument, 0, O_WRITE }, { "local", required_argument, 0, O_LOCAL },
        { "provider", required_argument, 0, O_PROVIDER }, { "timeout", required_argument, 0, O_TIMEOUT },
        { "json", no_argument, 0, O_JSON }, { "accept-unverified-setup", no_argument, 0, O_ACCEPT }, { "quiet", no_argument, 0, O_QUIET }, { "help", no_argument, 0, O_HELP },
        { 0, 0, 0, 0 } };
    int ch;
    while ((ch = getopt_long(argc, argv, "U:A:qh", lo, NULL)) != -1) {
        switch (ch) {
        case O_TCP: o.tcp = true; break;
        case 'U':
        case O_USER: o.user = optarg; break;
        case O_DOMAIN: o.domain = optarg; break;
        case O_PWFILE: o.password_file = optarg; break;
        case 'A':
        case O_AUTHFILE: o.auth_file = optarg; break;
        case O_GUEST: o.guest = true; break;
        case O_DIALECT:
            if (!strcmp(optarg, "3.1.1"))
                o.dialect = 0x0311;
            else if (!strcmp(optarg, "3.0.2"))
                o.dialect = 0x0302;
            else {
                ndk_tool_err("--dialect is 3.0.2 or 3.1.1");
                return 2;
            }
            break;
        case O_SIGN: o.sign = true; break;
        case O_NORDMA: o.no_rdma = true; break;
        case O_NOINV: o.no_invalidate = true; break;
        case O_IOSIZE:
            if (ndk_tool_size_parse(optarg, &o.io_size) < 0 || o.io_size == 0 || o.io_size > (64u << 20)) {
                ndk_tool_err("bad --io-size %s", optarg);
                return 2;
            }
            break;
        case O_DEPTH:
            o.depth = strtoull(optarg, NULL, 10);
            if (o.depth < 1 || o.depth > 64) {
                ndk_tool_err("--depth is 1..64");
                return 2;
            }
            break;
        case O_SIZE:
            if (ndk_tool_size_parse(optarg, &o.size) < 0) {
                ndk_tool_err("bad --size %s", optarg);
                return 2;
            }
            break;
        case O_READ: o.do_read = true; break;
        case O_WRITE: o.do_write = true; break;
        case O_LOCAL: o.local = optarg; break;
        case O_PROVIDER: o.provider = optarg; break;
        case O_TIMEOUT: o.timeout_ms = atoi(optarg); break;
        case O_JSON: o.json = true; break;
        case O_ACCEPT: o.accept_unverified = true; break;
        case 'q':
        case O_QUIET: o.quiet = true; break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (o.timeout_ms <= 0)
        o.timeout_ms = 30000;
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[optind++];
    int nargs = argc - optind;
    if (credentials(&o) < 0)
        return 2;
    int rc;
    if (!strcmp(cmd, "get") && nargs == 2)
        rc = cmd_get(&o, argv[optind], argv[optind + 1]);
    else if (!strcmp(cmd, "put") && nargs == 2)
        rc = cmd_put(&o, argv[optind], argv[optind + 1]);
    else if (!strcmp(cmd, "ls") && nargs == 1)
        rc = cmd_ls(&o, argv[optind]);
    else if (!strcmp(cmd, "bench") && nargs == 1)
        rc = cmd_bench(&o, argv[optind]);
    else {
        usage(stderr);
        rc = 2;
    }
    if (o.password) {
        memset(o.password, 0, strlen(o.password));
        free(o.password);
    }
    return rc;
}
