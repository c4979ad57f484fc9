/* trace_out.c - the trace's records: `key=value` text or JSON lines, one write(2) per record so
 * that records of concurrent threads never interleave (no lock). Values are numbers, object
 * names, status names and addresses: none needs quoting in text, and in JSON every value is a
 * number or a plain string. */
#define _GNU_SOURCE
#include "trace.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

uint64_t flt_trace_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void put(struct flt_trace_rec *r, const char *key, const char *value, int quote)
{
    if (r->len >= sizeof r->buf - 2)
        return;
    size_t room = sizeof r->buf - 2 - r->len;   /* keep room for the closing brace and newline */
    int n;
    if (r->mod->format == FLT_TRACE_JSON)
        n = snprintf(r->buf + r->len, room, quote ? ",\"%s\":\"%s\"" : ",\"%s\":%s", key, value);
    else
        n = snprintf(r->buf + r->len, room, " %s=%s", key, value);
    if (n > 0)
        r->len += (size_t)n < room ? (size_t)n : room - 1;
}

void flt_trace_rec_begin(struct flt_trace_rec *r, struct flt_trace_module *mod, const char *ev, uint64_t ts)
{
    r->mod = mod;
    if (mod->format == FLT_TRACE_JSON)
        r->len = (size_t)snprintf(r->buf, sizeof r->buf, "{\"ts\":%llu,\"tid\":%d,\"ev\":\"%s\"",
                                  (unsigned long long)ts, (int)gettid(), ev);
    else
        r->len = (size_t)snprintf(r->buf, sizeof r->buf, "ts=%llu tid=%d ev=%s", (unsigned long long)ts,
                                  (int)gettid(), ev);
}

void flt_trace_rec_str(struct flt_trace_rec *r, const char *key, const char *value)
{
    put(r, key, value && *value ? value : "-", 1);
}

void flt_trace_rec_u64(struct flt_trace_rec *r, const char *key, uint64_t value)
{
    char v[24];
    snprintf(v, sizeof v, "%llu", (unsigned long long)value);
    put(r, key, v, 0);
}

void flt_trace_rec_hex(struct flt_trace_rec *r, const char *key, uint64_t value)
{
    char v[24];
    snprintf(v, sizeof v, "0x%llx", (unsigned long long)value);
    put(r, key, v, 1);
}

void flt_trace_rec_obj(struct flt_trace_rec *r, const char *key, const ndk_filter_obj *obj)
{
    char v[48];
    put(r, key, obj ? ndk_filter_obj_name(obj, v, sizeof v) : "-", 1);
}

void flt_trace_rec_status(struct flt_trace_rec *r, const char *key, NTSTATUS status)
{
    put(r, key, ndk_rt_status_name(status), 1);
}

void flt_trace_rec_addr(struct flt_trace_rec *r, const char *key, const void *address)
{
    const struct sockaddr *sa = address;
    char host[INET6_ADDRSTRLEN], v[INET6_ADDRSTRLEN + 10];
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = address;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(v, sizeof v, "%s:%u", host, ntohs(in->sin_port));
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = address;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(v, sizeof v, "[%s]:%u", host, ntohs(in6->sin6_port));
    } else {
        snprintf(v, sizeof v, "-");
    }
    put(r, key, v, 1);
}

void flt_trace_rec_end(struct flt_trace_rec *r)
{
    if (r->mod->format == FLT_TRACE_JSON)
        r->buf[r->len++] = '}';
    r->buf[r->len++] = '\n';
    const char *p = r->buf;
    size_t left = r->len;
    while (left) {
        ssize_t n = write(r->mod->fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;   /* a full disk or a closed pipe loses records; the consumer goes on */
        p += n;
        left -= (size_t)n;
    }
}

/* trace.path: "-" or unset is stderr; %p becomes the process id. May block (open). */
int flt_trace_out_open(struct flt_trace_module *mod, const char *path)
{
    int fd = ndk_filter_open_path(path);
    if (fd < 0)
        return fd;
    mod->fd = fd;
    mod->own_fd = fd != STDERR_FILENO;
    return 0;
}
