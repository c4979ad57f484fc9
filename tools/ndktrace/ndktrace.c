/* ndktrace - summarises traces written by the trace filter (NDK_FILTERS=trace): per call the
 * count, the errors by status and the call's duration p50/p99/max; per completion kind the
 * latency from post; the requests still outstanding at the end of each trace with their QP and
 * age; the objects created and never closed; the callbacks that ran longer than a threshold;
 * and the stall reports. See ndktrace(1). */
#define _GNU_SOURCE
#include "ndktrace.h"

#include <getopt.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nt_post {
    int      file;
    uint64_t wr;
    uint64_t ts;
    int      silent;
    char     qp[40], fn[40], ctx[24];
};

struct nt_obj {
    int      file;
    uint64_t ts;
    char     name[40], parent[40];
};

struct nt_state {
    void       *calls, *cqes, *posts, *objs;
    uint64_t    records, skipped, stalls, slow, empty_polls;
    uint64_t    slow_ns;
    uint64_t   *end_ts;       /* per file: the last timestamp */
    FILE       *slow_out, *stall_out;   /* lines of those sections, printed at the end */
    char       *slow_buf, *stall_buf;
    size_t      slow_len, stall_len;
    const char **files;
};

static int cmp_post(const void *a, const void *b)
{
    const struct nt_post *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return x->wr < y->wr ? -1 : x->wr > y->wr;
}

static int cmp_obj(const void *a, const void *b)
{
    const struct nt_obj *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "-");
}

static int is_error(const char *status)
{
    return status && strcmp(status, "STATUS_SUCCESS") != 0 && strcmp(status, "STATUS_PENDING") != 0;
}

static void on_call(struct nt_state *st, int file, const struct nt_rec *r)
{
    const char *fn = nt_get(r, "fn"), *status = nt_get(r, "status");
    if (!fn)
        return;
    struct nt_stat *s = nt_stat_get(&st->calls, fn);
    s->count++;
    if (is_error(status)) {
        s->errors++;
        nt_counts_add(&s->by_status, status);
    }
    nt_samples_add(&s->dur, nt_get_u64(r, "dur_ns"));
    const char *wr = nt_get(r, "wr");
    if (wr && status && strcmp(status, "STATUS_SUCCESS") == 0) {
        struct nt_post *p = calloc(1, sizeof *p);
        if (!p)
            return;
        p->file = file;
        p->wr = strtoull(wr, NULL, 0);
        p->ts = nt_get_u64(r, "ts");
        p->silent = (nt_get_u64(r, "flags") & 1) != 0;
        copy(p->qp, sizeof p->qp, nt_get(r, "obj"));
        copy(p->fn, sizeof p->fn, fn);
        copy(p->ctx, sizeof p->ctx, nt_get(r, "ctx"));
        if (*(struct nt_post **)tsearch(p, &st->posts, cmp_post) != p)
            free(p);
    }
}

static void on_cqe(struct nt_state *st, int file, const struct nt_rec *r)
{
    const char *op = nt_get(r, "op"), *status = nt_get(r, "status");
    struct nt_stat *s = nt_stat_get(&st->cqes, op ? op : "(unmatched)");
    s->count++;
    if (is_error(status)) {
        s->errors++;
        nt_counts_add(&s->by_status, status);
    }
    if (nt_get(r, "latency_ns"))
        nt_samples_add(&s->dur, nt_get_u64(r, "latency_ns"));
    const char *wr = nt_get(r, "wr");
    if (wr) {
        struct nt_post key = { .file = file, .wr = strtoull(wr, NULL, 0) };
        struct nt_post **found = tfind(&key, &st->posts, cmp_post);
        if (found) {
            struct nt_post *p = *found;
            tdelete(&key, &st->posts, cmp_post);
            free(p);
        }
    }
}

static void on_obj(struct nt_state *st, int file, const struct nt_rec *r, int made)
{
    struct nt_obj key = { .file = file };
    copy(key.name, sizeof key.name, nt_get(r, "obj"));
    if (made) {
        struct nt_obj *o = malloc(sizeof *o);
        if (!o)
            return;
        *o = key;
        o->ts = nt_get_u64(r, "ts");
        copy(o->parent, sizeof o->parent, nt_get(r, "parent"));
        if (*(struct nt_obj **)tsearch(o, &st->objs, cmp_obj) != o)
            free(o);
        return;
    }
    struct nt_obj **found = tfind(&key, &st->objs, cmp_obj);
    if (found) {
        struct nt_obj *o = *found;
        tdelete(&key, &st->objs, cmp_obj);
        free(o);
    }
}

static void on_record(struct nt_state *st, int file, const struct nt_rec *r)
{
    const char *ev = nt_get(r, "ev");
    uint64_t ts = nt_get_u64(r, "ts");
    if (ts > st->end_ts[file])
        st->end_ts[file] = ts;
    st->records++;
    if (strcmp(ev, "call") == 0) {
        on_call(st, file, r);
    } else if (strcmp(ev, "cqe") == 0) {
        on_cqe(st, file, r);
    } else if (strcmp(ev, "new") == 0) {
        on_obj(st, file, r, 1);
    } else if (strcmp(ev, "end") == 0) {
        on_obj(st, file, r, 0);
    } else if (strcmp(ev, "cb") == 0) {
        uint64_t dur = nt_get_u64(r, "dur_ns");
        if (dur > st->slow_ns) {
            st->slow++;
            const char *call = nt_get(r, "call");
            fprintf(st->slow_out, "  %s %s %s%s%s %.3f ms (ts=%" PRIu64 ")\n", st->files[file], nt_get(r, "obj"), nt_get(r, "fn"),
                   call ? " for " : "", call ? call : "", (double)dur / 1e6, ts);
        }
    } else if (strcmp(ev, "stall") == 0) {
        st->stalls++;
        fprintf(st->stall_out, "  %s %s: %s outstanding, no completion for %s ms; %s %s; rcq %s %s, icq %s %s\n", st->files[file],
               nt_get(r, "obj"), nt_get(r, "outstanding"), nt_get(r, "idle_ms"), nt_get(r, "conn"),
               nt_get(r, "conn_state"), nt_get(r, "rcq"), nt_get(r, "rcq_arm"), nt_get(r, "icq"), nt_get(r, "icq_arm"));
    } else if (strcmp(ev, "unload") == 0) {
        st->empty_polls += nt_get_u64(r, "empty_polls");
    }
}

static int read_file(struct nt_state *st, int file, const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    struct nt_rec r;
    while (getline(&line, &cap, f) > 0) {
        if (nt_parse(line, &r) == 0)
            on_record(st, file, &r);
        else
            st->skipped++;
    }
    free(line);
    if (f != stdin)
        fclose(f);
    return 0;
}

static void print_stat(struct nt_stat *s, void *arg)
{
    (void)arg;
    printf("  %-34s %9" PRIu64 " %7" PRIu64 " %10.1f %10.1f %10.1f\n", s->name, s->count, s->errors,
           (double)nt_samples_quantile(&s->dur, 0.50) / 1e3, (double)nt_samples_quantile(&s->dur, 0.99) / 1e3,
           (double)nt_samples_max(&s->dur) / 1e3);
    for (size_t i = 0; i < s->by_status.n; i++)
        printf("      %s: %" PRIu64 "\n", s->by_status.name[i], s->by_status.count[i]);
}

static struct nt_state *walk_state;
static uint64_t walk_count;

static void print_post(const void *node, VISIT which, int depth)
{
    (void)depth;
    if (which != postorder && which != leaf)
        return;
    const struct nt_post *p = *(struct nt_post *const *)node;
    if (p->silent)
        return;   /* a silent success never completes: not outstanding */
    walk_count++;
    printf("  %s %s %s wr=%" PRIu64 " ctx=%s age %.3f ms\n", walk_state->files[p->file], p->qp, p->fn, p->wr, p->ctx,
           (double)(walk_state->end_ts[p->file] - p->ts) / 1e6);
}

static void print_obj(const void *node, VISIT which, int depth)
{
    (void)depth;
    if (which != postorder && which != leaf)
        return;
    const struct nt_obj *o = *(struct nt_obj *const *)node;
    walk_count++;
    printf("  %s %s (from %s), created %.3f ms before the end\n", walk_state->files[o->file], o->name, o->parent,
           (double)(walk_state->end_ts[o->file] - o->ts) / 1e6);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ndktrace [--slow-callback-ms MS] FILE...\n"
               "Summarises traces of the trace filter (NDK_FILTERS=trace; text or JSON lines; - reads stdin):\n"
               "calls (count, errors by status, duration p50/p99/max), completions (latency from post),\n"
               "requests still outstanding at the end, objects never closed, slow callbacks, stall reports.\n"
               "  --slow-callback-ms MS  list callbacks that ran longer than MS milliseconds (default 10)\n"
               "  --help                 this text\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "slow-callback-ms", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct nt_state st;
    memset(&st, 0, sizeof st);
    st.slow_ns = 10 * 1000000ull;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        if (c == 's') {
            char *end;
            double ms = strtod(optarg, &end);
            if (*end || ms < 0) {
                fprintf(stderr, "ndktrace: --slow-callback-ms wants a number of milliseconds\n");
                return 2;
            }
            st.slow_ns = (uint64_t)(ms * 1e6);
            continue;
        }
        usage(stderr);
        return 2;
    }
    int nfiles = argc - optind;
    if (nfiles < 1) {
        usage(stderr);
        return 2;
    }
    st.files = (const char **)(argv + optind);
    st.end_ts = calloc((size_t)nfiles, sizeof *st.end_ts);
    if (!st.end_ts)
        return 1;
    st.slow_out = open_memstream(&st.slow_buf, &st.slow_len);
    st.stall_out = open_memstream(&st.stall_buf, &st.stall_len);
    if (!st.slow_out || !st.stall_out)
        return 1;
    int rc = 0;
    for (int i = 0; i < nfiles; i++)
        if (read_file(&st, i, st.files[i]) < 0)
            rc = 1;

    printf("%" PRIu64 " records in %d file%s", st.records, nfiles, nfiles == 1 ? "" : "s");
    if (st.skipped)
        printf(" (%" PRIu64 " other lines skipped)", st.skipped);
    printf("\n\nCalls                                    count  errors    p50_us     p99_us     max_us\n");
    nt_stat_walk(st.calls, print_stat, NULL);
    if (st.empty_polls)
        printf("  (and %" PRIu64 " polls that returned nothing, not listed)\n", st.empty_polls);
    printf("\nCompletions (latency from post)          count  errors    p50_us     p99_us     max_us\n");
    nt_stat_walk(st.cqes, print_stat, NULL);
    walk_state = &st;
    walk_count = 0;
    printf("\nRequests outstanding at the end:\n");
    twalk(st.posts, print_post);
    printf("  %" PRIu64 " outstanding\n", walk_count);
    walk_count = 0;
    printf("\nObjects created and never closed:\n");
    twalk(st.objs, print_obj);
    printf("  %" PRIu64 " never closed\n", walk_count);
    fclose(st.slow_out);
    fclose(st.stall_out);
    printf("\nCallbacks longer than %.3f ms:\n%s  %" PRIu64 " slow\n", (double)st.slow_ns / 1e6, st.slow_buf, st.slow);
    printf("\nStall reports:\n%s  %" PRIu64 " stalls\n", st.stall_buf, st.stalls);
    free(st.slow_buf);
    free(st.stall_buf);
    nt_stat_free_all(st.calls);
    nt_stat_free_all(st.cqes);
    tdestroy(st.posts, free);
    tdestroy(st.objs, free);
    free(st.end_ts);
    return rc;
}
