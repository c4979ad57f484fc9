/*
 * ndkinfo_sv.h - ndkinfo's machine-wide part: the connections, endpoints, per-process counters
 * and resources every OpenNDK process publishes in the system view (ndk-sysview(7)).
 */
#ifndef NDKINFO_SV_H
#define NDKINFO_SV_H

#include "ndk_tool_json.h"

struct ndkinfo_sv_opts {
    int  json, connections, endpoints, stats, resources;
    long pid;                         /* --pid: only this process (0: every process) */
};

/* Reads the registry and prints the sections the options ask for (text, or members of the JSON
 * object open in json). Returns ndkinfo's exit status for this part: 0, or 1 when the registry
 * could not be read or --pid names no publishing process. May block (file I/O). */
int ndkinfo_sv_show(const struct ndkinfo_sv_opts *o, ndk_tool_json *json);

/* The NDK performance counters' names, by their index in NDIS_NDK_PERFORMANCE_COUNTERS (NULL for
 * the reserved words), for both parts' counters. */
extern const char *const ndkinfo_counter_names[30];
/* The names of the counters set in mask (a MissingCounterMask), separated by spaces, in buf. */
void ndkinfo_counters_missing(uint64_t mask, char *buf, size_t len);

#endif /* NDKINFO_SV_H */
