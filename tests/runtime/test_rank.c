/* Adapter lookup where two providers serve one interface (issue 16): without a provider named,
 * the adapter of the provider that did not declare NDK_PROVIDER_FLAG_SOFTWARE comes first, even
 * though the software one loaded first; NDK_PREFER_SOFTWARE=1 reverses that; a named provider
 * always gets its own. The declared flag is visible in ndk_rt_provider_info. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "rttest.h"
#include "testlib.h"

static const char *provider_of(ndk_rt *rt, ndk_rt_adapter_id id)
{
    static ndk_rt_adapter_info a;
    CHECK_STATUS(ndk_rt_adapter_query(rt, id, &a), STATUS_SUCCESS);
    return a.provider;
}

static ndk_rt *open_rt(void)
{
    static char dir[1100];
    const char *b = getenv("NDK_TEST_BINARY_DIR");
    snprintf(dir, sizeof dir, "%s/test-providers-rank", b ? b : ".");
    ndk_rt_config cfg = { 0 };
    cfg.provider_path = dir;
    cfg.config_file = "/nonexistent/openndk.conf";
    cfg.log = rttest_log;
    cfg.log_level = NDK_LOG_INFO;
    ndk_rt *rt = NULL;
    CHECK_STATUS(ndk_rt_open(&cfg, &rt), STATUS_SUCCESS);
    return rt;
}

int main(void)
{
    ndk_test_enter_netns();           /* only lo: 127.0.0.1 and ::1 */
    unsetenv("NDK_PREFER_SOFTWARE");
    ndk_rt *rt = open_rt();
    CHECK_EQ(ndk_rt_provider_count(rt), 2);
    ndk_rt_provider_info p;
    CHECK_STATUS(ndk_rt_provider_get(rt, 0, &p), STATUS_SUCCESS);
    CHECK_MSG(strcmp(p.name, "testasoft") == 0, "load order: first provider is %s", p.name);
    CHECK_MSG(p.flags & NDK_PROVIDER_FLAG_SOFTWARE, "testasoft's declared flag not reported (flags %#x)", p.flags);
    CHECK_STATUS(ndk_rt_provider_get(rt, 1, &p), STATUS_SUCCESS);
    CHECK_MSG(!(p.flags & NDK_PROVIDER_FLAG_SOFTWARE), "testzhw reported as software (flags %#x)", p.flags);

    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ndk_rt_adapter_id id = 0;
    CHECK_STATUS(ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin, NULL, &id), STATUS_SUCCESS);
    CHECK_MSG(strcmp(provider_of(rt, id), "testzhw") == 0, "by address: %s, not the device-backed testzhw",
              provider_of(rt, id));
    CHECK_STATUS(ndk_rt_find_adapter_by_ifname(rt, "lo", NULL, &id), STATUS_SUCCESS);
    CHECK_MSG(strcmp(provider_of(rt, id), "testzhw") == 0, "by name: %s", provider_of(rt, id));
    CHECK_STATUS(ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin, "testasoft", &id), STATUS_SUCCESS);
    CHECK_MSG(strcmp(provider_of(rt, id), "testasoft") == 0, "named provider: %s", provider_of(rt, id));
    ndk_rt_close(rt);

    setenv("NDK_PREFER_SOFTWARE", "1", 1);
    rt = open_rt();
    CHECK_STATUS(ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin, NULL, &id), STATUS_SUCCESS);
    CHECK_MSG(strcmp(provider_of(rt, id), "testasoft") == 0, "NDK_PREFER_SOFTWARE=1: %s", provider_of(rt, id));
    ndk_rt_close(rt);
    printf("ok: lookups rank by NDK_PROVIDER_FLAG_SOFTWARE, not by load order or name\n");
    return 0;
}
