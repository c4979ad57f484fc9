/* The loader: a good provider, one without an entry point, one whose entry fails and one with
 * invalid characteristics, all loaded through the real dlopen path. The bad ones are reported
 * with a clear status and message and skipped; the good one binds to lo and works: lookup by
 * address/name/index, open with version negotiation, adapter info, OID routing, close. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rttest.h"
#include "testlib.h"

static void check_provider(ndk_rt *rt, const char *name, NTSTATUS status, const char *message_part)
{
    for (ULONG i = 0; i < ndk_rt_provider_count(rt); i++) {
        ndk_rt_provider_info info;
        CHECK_STATUS(ndk_rt_provider_get(rt, i, &info), STATUS_SUCCESS);
        if (strcmp(info.name, name) != 0)
            continue;
        printf("provider %-12s %-32s %s\n", info.name, ndk_rt_status_name(info.status), info.message);
        CHECK_STATUS(info.status, status);
        CHECK_MSG(!message_part || strstr(info.message, message_part), "message for %s: '%s' lacks '%s'", name,
                  info.message, message_part);
        return;
    }
    ndk_test_fail(__FILE__, __LINE__, "provider %s not listed", name);
}

int main(void)
{
    ndk_test_enter_netns();           /* a namespace with only lo: 127.0.0.1 and ::1 */
    setenv("NDK_TESTGOOD_VENDOR", "0x1234", 1);
    ndk_rt_config cfg = { 0 };
    cfg.provider_path = rttest_provider_dir();
    cfg.config_file = "/nonexistent/openndk.conf";
    cfg.log = rttest_log;
    cfg.log_level = NDK_LOG_INFO;
    ndk_rt *rt = NULL;
    CHECK_STATUS(ndk_rt_open(&cfg, &rt), STATUS_SUCCESS);

    CHECK_EQ(ndk_rt_provider_count(rt), 4);
    check_provider(rt, "testgood", STATUS_SUCCESS, NULL);
    check_provider(rt, "testnoentry", STATUS_ENTRYPOINT_NOT_FOUND, "no NdkProviderEntry entry point");
    check_provider(rt, "testinitfail", STATUS_INSUFFICIENT_RESOURCES, "NdkProviderEntry failed: STATUS_INSUFFICIENT_RESOURCES");
    check_provider(rt, "testbadchars", STATUS_INVALID_PARAMETER, "OpenNDKAdapterHandler");
    CHECK(rttest_log_contains("ndk-testnoentry.so skipped"));
    CHECK(rttest_log_contains("ndk-testinitfail.so skipped"));

    ndk_rt_adapter_info list[8];
    ULONG n = 8;
    CHECK_STATUS(ndk_rt_adapter_list(rt, list, &n), STATUS_SUCCESS);
    CHECK_EQ(n, 1);
    CHECK(strcmp(list[0].ifname, "lo") == 0 && strcmp(list[0].provider, "testgood") == 0);
    CHECK(list[0].is_loopback && list[0].enabled);
    CHECK_EQ(list[0].info.VendorId, 0x1234);           /* provider config from the environment */
    CHECK_EQ(list[0].capabilities.MaxQpCount, 7);
    CHECK(list[0].capabilities.NdkInfo == &list[0].info);
    int have_v4 = 0, have_v6 = 0;
    for (ULONG i = 0; i < list[0].address_count; i++) {
        if (list[0].addresses[i].si_family == AF_INET)
            have_v4 |= list[0].addresses[i].Ipv4.sin_addr.s_addr == htonl(INADDR_LOOPBACK);
        if (list[0].addresses[i].si_family == AF_INET6)
            have_v6 |= IN6_IS_ADDR_LOOPBACK(&list[0].addresses[i].Ipv6.sin6_addr);
    }
    CHECK(have_v4 && have_v6);
    ULONG zero = 0;
    CHECK_STATUS(ndk_rt_adapter_list(rt, NULL, &zero), STATUS_BUFFER_TOO_SMALL);
    CHECK_EQ(zero, 1);

    ndk_rt_adapter_id id = 0, other = 0;
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(445), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
    CHECK_STATUS(ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin, NULL, &id), STATUS_SUCCESS);
    CHECK_EQ(id, list[0].id);
    CHECK_STATUS(ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin6, "testgood", &other), STATUS_SUCCESS);
    CHECK_EQ(other, id);
    CHECK_STATUS(ndk_rt_find_adapter_by_ifname(rt, "lo", NULL, &other), STATUS_SUCCESS);
    CHECK_EQ(other, id);
    CHECK_STATUS(ndk_rt_find_adapter_by_ifindex(rt, list[0].ifindex, NULL, &other), STATUS_SUCCESS);
    CHECK_STATUS(ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin, "iwarp", &other), STATUS_OBJECT_NAME_NOT_FOUND);
    sin.sin_addr.s_addr = htonl(0xC6120909);          /* 198.18.9.9: not ours */
    CHECK_STATUS(ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin, NULL, &other), STATUS_OBJECT_NAME_NOT_FOUND);
    CHECK_STATUS(ndk_rt_find_adapter_by_ifname(rt, "nope0", NULL, &other), STATUS_OBJECT_NAME_NOT_FOUND);

    /* §2.2: request major + lowest minor; the provider answers with its highest minor. */
    NDK_ADAPTER *a1 = NULL, *a2 = NULL, *bad = NULL;
    CHECK_STATUS(ndk_rt_open_adapter(rt, id, (NDK_VERSION){ 2, 0 }, &a1), STATUS_SUCCESS);
    CHECK(a1->Header.ObjectType == NdkObjectTypeAdapter && a1->Header.Version.Major == 2 && a1->Header.Version.Minor == 1);
    CHECK_STATUS(ndk_rt_open_adapter(rt, id, (NDK_VERSION){ 1, 0 }, &a2), STATUS_SUCCESS);
    CHECK(a2->Header.Version.Major == 1 && a2->Header.Version.Minor == 2);
    CHECK_STATUS(ndk_rt_open_adapter(rt, id, (NDK_VERSION){ 3, 0 }, &bad), NDIS_STATUS_BAD_VERSION);
    CHECK_STATUS(ndk_rt_open_adapter(rt, id, (NDK_VERSION){ 2, 2 }, &bad), NDIS_STATUS_BAD_VERSION);
    CHECK(bad == NULL);
    CHECK_STATUS(ndk_rt_open_adapter(rt, 9999, (NDK_VERSION){ 2, 0 }, &bad), STATUS_NO_SUCH_DEVICE);
    ndk_rt_adapter_info q;
    CHECK_STATUS(ndk_rt_adapter_query(rt, id, &q), STATUS_SUCCESS);
    CHECK_EQ(q.open_instances, 2);

    NDK_ADAPTER_INFO info;
    ULONG size = sizeof info;
    CHECK_STATUS(a1->Dispatch->NdkQueryAdapterInfo(a1, &info, &size), STATUS_SUCCESS);
    CHECK_EQ(info.VendorId, 0x1234);
    CHECK(info.Version.Major == 2 && info.Version.Minor == 1);

    /* OIDs reach the provider; short buffers get NDIS_STATUS_BUFFER_TOO_SHORT and the size. */
    NDIS_NDK_STATISTICS_INFO stats;
    ULONG written = 0, needed = 0;
    CHECK_STATUS(ndk_rt_query_oid(rt, id, OID_NDK_STATISTICS, &stats, sizeof stats, &written, &needed), STATUS_SUCCESS);
    CHECK_EQ(written, sizeof stats);
    CHECK_EQ(stats.CounterSet.Connect, 2);
    char small[8];
    CHECK_STATUS(ndk_rt_query_oid(rt, id, OID_NDK_CONNECTIONS, small, sizeof small, &written, &needed),
                 NDIS_STATUS_BUFFER_TOO_SHORT);
    CHECK_EQ(needed, NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(1));
    union { NDIS_NDK_CONNECTIONS c; char raw[256]; } conns;
    CHECK_STATUS(ndk_rt_query_oid(rt, id, OID_NDK_CONNECTIONS, &conns, sizeof conns, &written, &needed), STATUS_SUCCESS);
    CHECK_EQ(conns.c.Count, 1);
    CHECK_EQ(conns.c.Connections[0].OwnerPid, 4242);
    CHECK_STATUS(ndk_rt_query_oid(rt, id, 0x00010101, small, sizeof small, &written, &needed), NDIS_STATUS_INVALID_OID);

    ndk_rt_close_adapter(rt, a1);
    ndk_rt_close_adapter(rt, a2);
    CHECK_STATUS(ndk_rt_adapter_query(rt, id, &q), STATUS_SUCCESS);
    CHECK_EQ(q.open_instances, 0);
    ndk_rt_close(rt);

    /* A provider list in the config file keeps the others out, and says so; config-file
     * provider settings reach the provider. */
    char path[] = "/tmp/ndk-test-conf-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# test configuration\nproviders = testgood\n testgood.vendor = 77 \ninterfaces=lo\n");
    fclose(f);
    unsetenv("NDK_TESTGOOD_VENDOR");
    cfg.config_file = path;
    CHECK_STATUS(ndk_rt_open(&cfg, &rt), STATUS_SUCCESS);
    check_provider(rt, "testnoentry", STATUS_NOT_SUPPORTED, "not in the configured provider list");
    n = 8;
    CHECK_STATUS(ndk_rt_adapter_list(rt, list, &n), STATUS_SUCCESS);
    CHECK_EQ(n, 1);
    CHECK_EQ(list[0].info.VendorId, 77);
    ndk_rt_close(rt);
    unlink(path);

    /* An empty provider directory: the runtime opens with no providers and no adapters. */
    cfg.config_file = "/nonexistent/openndk.conf";
    cfg.provider_path = "/nonexistent-provider-dir";
    CHECK_STATUS(ndk_rt_open(&cfg, &rt), STATUS_SUCCESS);
    CHECK_EQ(ndk_rt_provider_count(rt), 0);
    n = 8;
    CHECK_STATUS(ndk_rt_adapter_list(rt, list, &n), STATUS_SUCCESS);
    CHECK_EQ(n, 0);
    ndk_rt_close(rt);
    printf("loader: good provider works, bad providers reported and skipped\n");
    return 0;
}
