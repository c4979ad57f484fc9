/*
 * ndk_tool_cli.h - the command-line options every mode of ndkping and ndkperf shares, and the
 * one parser that reads them:
 *   -s [ADDR][:PORT]  serve (the address is optional, also as the next word)
 *   -c ADDR[:PORT]    connect to a server
 *   -I LOCAL          local address (picks the adapter)
 *   --provider NAME   only adapters of this provider
 *   --poll            busy-poll the CQs
 *   --json            one JSON document on stdout      (tools that ask for NDK_TOOL_CLI_JSON)
 *   --crc             ask for MPA CRC                   (tools that ask for NDK_TOOL_CLI_CRC)
 *   -v                more detail; -h / --help          usage on stdout, exit 0
 * A mode sees each option first (its own letters, or another meaning of a shared one, as the
 * rdma-core compatible modes need) and leaves the rest to the shared handling.
 */
#ifndef NDK_TOOL_CLI_H
#define NDK_TOOL_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ndk_tool_cli {
    bool        server, client, poll, json, crc;
    const char *addr;           /* -s / -c argument */
    const char *local;          /* -I */
    const char *provider;
    int         verbose;
} ndk_tool_cli;

/* Which of the optional shared options the tool offers. */
enum {
    NDK_TOOL_CLI_JSON = 1u << 0,
    NDK_TOOL_CLI_CRC  = 1u << 1,
    NDK_TOOL_CLI_ROLE = 1u << 2,    /* exactly one of server and client is required */
};

/* Long-option values of the shared options (a mode's own long options use other values). */
enum { NDK_TOOL_CLI_OPT_PROVIDER = 0x1000, NDK_TOOL_CLI_OPT_POLL, NDK_TOOL_CLI_OPT_JSON, NDK_TOOL_CLI_OPT_CRC,
       NDK_TOOL_CLI_OPT_HELP };

/* Called for every option before the shared handling: 0 taken, 1 not the mode's, -1 bad (the
 * mode printed why). */
typedef int (*ndk_tool_cli_fn)(void *ctx, ndk_tool_cli *o, int opt, const char *arg);

typedef struct ndk_tool_cli_spec {
    const char          *shortopts;     /* getopt letters of the mode, shared ones included */
    const struct option *longs;         /* the mode's own long options, NULL-terminated; may be NULL */
    unsigned             flags;         /* NDK_TOOL_CLI_* */
    ndk_tool_cli_fn      fn;            /* may be NULL */
    void                *ctx;
    void               (*usage)(FILE *f);
} ndk_tool_cli_spec;

/* Parses argv into o (zeroed first) and the mode's own state. Returns 0, or -1 after printing
 * the reason or the usage on stderr; prints the usage and exits 0 for -h / --help. */
int ndk_tool_cli_parse(const ndk_tool_cli_spec *spec, int argc, char **argv, ndk_tool_cli *o);

/* Number parsers that print "bad <what> '<text>'" and return -1 on failure. */
int ndk_tool_cli_u64(const char *text, uint64_t min, uint64_t max, const char *what, uint64_t *out);
int ndk_tool_cli_port(const char *text, uint16_t *out);
/* Seconds: 0 < v <= max (min_zero: 0 <= v). */
int ndk_tool_cli_secs(const char *text, double max, bool allow_zero, const char *what, double *out);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_CLI_H */
