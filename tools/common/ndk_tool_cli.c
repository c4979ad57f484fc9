/* ndk_tool_cli.c - the shared command-line options of the tools and their parser
 * (ndk_tool_cli.h). Runs on the main thread before anything else. */
#include "ndk_tool_cli.h"

#include <stdlib.h>
#include <string.h>

#include "ndk_tool.h"

#define CLI_MAX_LONGS 32

static const struct option cli_shared[] = {
    { "provider", required_argument, NULL, NDK_TOOL_CLI_OPT_PROVIDER },
    { "poll", no_argument, NULL, NDK_TOOL_CLI_OPT_POLL },
    { "help", no_argument, NULL, NDK_TOOL_CLI_OPT_HELP },
    { "json", no_argument, NULL, NDK_TOOL_CLI_OPT_JSON },
    { "crc", no_argument, NULL, NDK_TOOL_CLI_OPT_CRC },
};

/* The shared meaning of an option the mode left alone: 0 taken, -1 unknown or bad. */
static int cli_shared_opt(const ndk_tool_cli_spec *spec, ndk_tool_cli *o, int c, int argc, char **argv)
{
    switch (c) {
    case 's':
        o->server = true;
        /* -s takes an optional address, also as the next word ("-s 127.0.0.1"). */
        if (optarg)
            o->addr = optarg;
        else if (optind < argc && argv[optind][0] != '-')
            o->addr = argv[optind++];
        return 0;
    case 'c': o->client = true; o->addr = optarg; return 0;
    case 'I': o->local = optarg; return 0;
    case 'v': o->verbose++; return 0;
    case NDK_TOOL_CLI_OPT_PROVIDER: o->provider = optarg; return 0;
    case NDK_TOOL_CLI_OPT_POLL: o->poll = true; return 0;
    case NDK_TOOL_CLI_OPT_JSON: o->json = true; return 0;
    case NDK_TOOL_CLI_OPT_CRC: o->crc = true; return 0;
    case 'h':
    case NDK_TOOL_CLI_OPT_HELP:
        spec->usage(stdout);
        exit(0);
    default:
        spec->usage(stderr);
        return -1;
    }
}

int ndk_tool_cli_parse(const ndk_tool_cli_spec *spec, int argc, char **argv, ndk_tool_cli *o)
{
    struct option longs[CLI_MAX_LONGS];
    size_t n = 0;
    memset(o, 0, sizeof *o);
    for (const struct option *l = spec->longs; l && l->name && n < CLI_MAX_LONGS - 6; l++)
        longs[n++] = *l;
    for (size_t i = 0; i < sizeof cli_shared / sizeof cli_shared[0]; i++) {
        int v = cli_shared[i].val;
        if ((v == NDK_TOOL_CLI_OPT_JSON && !(spec->flags & NDK_TOOL_CLI_JSON)) ||
            (v == NDK_TOOL_CLI_OPT_CRC && !(spec->flags & NDK_TOOL_CLI_CRC)))
            continue;
        longs[n++] = cli_shared[i];
    }
    memset(&longs[n], 0, sizeof longs[n]);

    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, spec->shortopts, longs, NULL)) != -1) {
        int r = spec->fn && c != '?' ? spec->fn(spec->ctx, o, c, optarg) : 1;
        if (r < 0)
            return -1;
        if (r > 0 && cli_shared_opt(spec, o, c, argc, argv) != 0)
            return -1;
    }
    if (optind < argc || ((spec->flags & NDK_TOOL_CLI_ROLE) && o->server == o->client)) {
        spec->usage(stderr);
        return -1;
    }
    return 0;
}

int ndk_tool_cli_u64(const char *text, uint64_t min, uint64_t max, const char *what, uint64_t *out)
{
    char *end;
    uint64_t v = text && *text && *text != '-' ? strtoull(text, &end, 10) : 0;
    if (!text || !*text || *text == '-' || *end || v < min || v > max) {
        if (max == UINT64_MAX)
            ndk_tool_err("bad %s '%s'", what, text ? text : "");
        else
            ndk_tool_err("bad %s '%s' (%llu..%llu)", what, text ? text : "", (unsigned long long)min,
                         (unsigned long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

int ndk_tool_cli_port(const char *text, uint16_t *out)
{
    char *end;
    unsigned long v = text && *text && *text != '-' ? strtoul(text, &end, 10) : 0;
    if (!text || !*text || *text == '-' || *end || v > 65535) {
        ndk_tool_err("bad port '%s'", text ? text : "");
        return -1;
    }
    *out = (uint16_t)v;
    return 0;
}

int ndk_tool_cli_secs(const char *text, double max, bool allow_zero, const char *what, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (*end || v < 0 || (v == 0 && !allow_zero) || v > max) {
        ndk_tool_err("bad %s '%s'", what, text);
        return -1;
    }
    *out = v;
    return 0;
}
