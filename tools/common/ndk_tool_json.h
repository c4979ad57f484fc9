/*
 * ndk_tool_json.h - the tools' one JSON writer (ndkinfo --json, ndkperf --json, ndkping and
 * ndksmb --json): objects and arrays, escaped strings, numbers, booleans.
 */
#ifndef NDK_TOOL_JSON_H
#define NDK_TOOL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ndk_tool_json {
    FILE *f;
    int   depth;
    bool  first[32];
} ndk_tool_json;

void ndk_tool_json_init(ndk_tool_json *j, FILE *f);
void ndk_tool_json_open(ndk_tool_json *j, const char *key, char bracket);   /* key NULL inside arrays */
void ndk_tool_json_close(ndk_tool_json *j, char bracket);
void ndk_tool_json_str(ndk_tool_json *j, const char *key, const char *v);
void ndk_tool_json_u64(ndk_tool_json *j, const char *key, uint64_t v);
void ndk_tool_json_dbl(ndk_tool_json *j, const char *key, double v);
void ndk_tool_json_bool(ndk_tool_json *j, const char *key, bool v);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_JSON_H */
