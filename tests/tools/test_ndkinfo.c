/* ndkinfo end to end, in a private network namespace with only lo: it lists the providers
 * (loaded and skipped, with the reason), the loopback adapter with 127.0.0.1 and ::1 and every
 * NDK_ADAPTER_INFO field; --stats/--connections/--endpoints reach the provider; --json is one
 * valid JSON document. Runs against the provider directory named by argv[2] (the real iwarp
 * provider, or the runtime's test providers). */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static char out[1 << 20];

static void run(const char *ndkinfo, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", ndkinfo, args);
    FILE *p = popen(cmd, "r");
    CHECK(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    CHECK_MSG(rc == 0, "%s exited with %d:\n%s", cmd, rc, out);
}

#define HAS(s) CHECK_MSG(strstr(out, s), "ndkinfo output lacks '%s':\n%s", s, out)

/* A strict recursive-descent JSON checker: enough to prove the document parses. */
static const char *ws(const char *s) { while (isspace((unsigned char)*s)) s++; return s; }
static const char *value(const char *s);
static const char *string(const char *s)
{
    if (*s != '"') return NULL;
    for (s++; *s && *s != '"'; s++) {
        if ((unsigned char)*s < 0x20) return NULL;
        if (*s == '\\') { s++; if (!*s) return NULL; }
    }
    return *s == '"' ? s + 1 : NULL;
}
static const char *value(const char *s)
{
    s = ws(s);
    if (*s == '{' || *s == '[') {
        char close = *s == '{' ? '}' : ']';
        s = ws(s + 1);
        if (*s == close) return s + 1;
        for (;;) {
            if (close == '}') {
                if (!(s = string(ws(s)))) return NULL;
                s = ws(s);
                if (*s++ != ':') return NULL;
            }
            if (!(s = value(s))) return NULL;
            s = ws(s);
            if (*s == ',') { s++; continue; }
            return *s == close ? s + 1 : NULL;
        }
    }
    if (*s == '"') return string(s);
    if (!strncmp(s, "true", 4)) return s + 4;
    if (!strncmp(s, "false", 5)) return s + 5;
    if (!strncmp(s, "null", 4)) return s + 4;
    if (*s == '-' || isdigit((unsigned char)*s)) { s++; while (isdigit((unsigned char)*s) || *s == '.') s++; return s; }
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK_MSG(argc == 4, "usage: test_ndkinfo NDKINFO PROVIDER_DIR PROVIDER_NAME");
    const char *ndkinfo = argv[1], *dir = argv[2], *provider = argv[3];
    ndk_test_enter_netns();
    setenv("NDK_PROVIDER_PATH", dir, 1);
    setenv("NDK_CONFIG", "/nonexistent/openndk.conf", 1);
    /* The system view of this test's processes only: nobody else publishes in its own directory. */
    char rtdir[] = "/tmp/ndkinfo-test-XXXXXX";
    CHECK(mkdtemp(rtdir));
    setenv("NDK_RUNTIME_DIR", rtdir, 1);

    run(ndkinfo, "");
    HAS("Providers:");
    HAS(provider);
    HAS("Adapter 1:");
    HAS(" on lo ");
    HAS("IPv4  127.0.0.1");
    HAS("IPv6  ::1");
    HAS("NDK_ADAPTER_INFO (NdkQueryAdapterInfo)");
    static const char *fields[] = { "Version", "VendorId", "DeviceId", "MaxRegistrationSize", "MaxWindowSize",
        "FRMRPageCount", "MaxInitiatorRequestSge", "MaxReceiveRequestSge", "MaxReadRequestSge", "MaxTransferLength",
        "MaxInlineDataSize", "MaxInboundReadLimit", "MaxOutboundReadLimit", "MaxReceiveQueueDepth",
        "MaxInitiatorQueueDepth", "MaxSrqDepth", "MaxCqDepth", "LargeRequestThreshold", "MaxCallerData",
        "MaxCalleeData", "AdapterFlags", "RdmaTechnology" };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        HAS(fields[i]);

    /* The test provider says it does not keep RDMAInFrames (MissingCounterMask): no count is shown
     * for it. The iwarp provider keeps every counter. */
    bool testprov = strcmp(provider, "iwarp") != 0;
    run(ndkinfo, "--stats --connections --endpoints");
    HAS("NDK performance counters (OID_NDK_STATISTICS)");
    HAS("ActiveConnection");
    HAS("RDMAOutFrames");
    if (testprov)
        HAS("RDMAInFrames             not kept by the provider");
    else
        CHECK_MSG(!strstr(out, "not kept by the provider"), "a counter of iwarp shown as not kept:\n%s", out);
    HAS("ND connections (OID_NDK_CONNECTIONS)");
    HAS("ND local endpoints (OID_NDK_LOCAL_ENDPOINTS)");
    /* Nobody else publishes here: the system view says so instead of an empty list. */
    HAS("System view (ndk-sysview(7))");
    HAS("no other OpenNDK process publishes here");

    run(ndkinfo, "--json --stats --connections --endpoints");
    const char *end = value(out);
    CHECK_MSG(end && *ws(end) == '\0', "--json output is not one valid JSON document:\n%s", out);
    HAS("\"interface\":\"lo\"");
    HAS("\"127.0.0.1\"");
    HAS("\"::1\"");
    HAS("\"MaxCqDepth\":");
    if (testprov) {
        HAS("\"MissingCounterMask\":268435456");
        HAS("\"missing\":\"RDMAInFrames\"");
        CHECK_MSG(!strstr(out, "\"RDMAInFrames\":"), "a count for a counter the provider does not keep:\n%s", out);
    } else {
        HAS("\"MissingCounterMask\":0");
        HAS("\"RDMAInFrames\":");
        CHECK_MSG(!strstr(out, "\"missing\":"), "iwarp's counters said missing:\n%s", out);
    }

    /* Selecting an adapter that does not exist is an error with a clear line. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --adapter nosuch0 >/dev/null 2>&1", ndkinfo);
    CHECK(system(cmd) != 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", rtdir);
    CHECK(system(cmd) == 0);
    printf("ndkinfo: lo with 127.0.0.1 and ::1, all adapter info fields, OIDs and JSON ok (%s)\n", provider);
    return 0;
}
