/* ndk_tool_json.c - the tools' one JSON writer (ndkinfo --json, ndkperf --json, ndkping and
 * ndksmb --json): objects and arrays, escaped strings, numbers, booleans (ndk_tool_json.h). */
#include "ndk_tool_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void ndk_tool_json_init(ndk_tool_json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->first[0] = true;
}

static void tool_json_sep(ndk_tool_json *j)
{
    if (!j->first[j->depth])
        fputc(',', j->f);
    j->first[j->depth] = false;
}

static void tool_json_raw_str(ndk_tool_json *j, const char *v)
{
    fputc('"', j->f);
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(j->f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(j->f, "\\u%04x", *c);
        else
            fputc(*c, j->f);
    }
    fputc('"', j->f);
}

static void tool_json_key(ndk_tool_json *j, const char *key)
{
    tool_json_sep(j);
    if (key) {
        tool_json_raw_str(j, key);
        fputc(':', j->f);
    }
}

void ndk_tool_json_open(ndk_tool_json *j, const char *key, char bracket)
{
    tool_json_key(j, key);
    fputc(bracket, j->f);
    if (j->depth < 31)
        j->depth++;
    j->first[j->depth] = true;
}

void ndk_tool_json_close(ndk_tool_json *j, char bracket)
{
    fputc(bracket, j->f);
    if (j->depth > 0)
        j->depth--;
    if (j->depth == 0)
        fputc('\n', j->f);
}

void ndk_tool_json_str(ndk_tool_json *j, const char *key, const char *v)
{
    tool_json_key(j, key);
    tool_json_raw_str(j, v ? v : "");
}

void ndk_tool_json_u64(ndk_tool_json *j, const char *key, uint64_t v)
{
    tool_json_key(j, key);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void ndk_tool_json_dbl(ndk_tool_json *j, const char *key, double v)
{
    tool_json_key(j, key);
    if (v != v || v > 1e300 || v < -1e300)
        fputs("null", j->f);
    else
        fprintf(j->f, "%.6g", v);
}

void ndk_tool_json_bool(ndk_tool_json *j, const char *key, bool v)
{
    tool_json_key(j, key);
    fputs(v ? "true" : "false", j->f);
}
