/*
 * ndk_tool_size.h - byte counts as the tools read them on command lines ("64K", "1m") and
 * print them in headings.
 */
#ifndef NDK_TOOL_SIZE_H
#define NDK_TOOL_SIZE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "64", "4K", "1M": sizes as perftest prints them are plain numbers; this is for headings. */
const char *ndk_tool_size_str(uint64_t bytes, char *buf, size_t len);
/* Parses "4096", "4k", "64K", "1m", "1M", "1g"; returns 0 or -1. */
int ndk_tool_size_parse(const char *s, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_SIZE_H */
