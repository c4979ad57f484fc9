/* test_verbs_nodevice: ndk-verbs.so loads through the runtime; with no RDMA device it offers
 * no adapter and its description (what ndkinfo prints) says why in one line. With RDMA devices
 * present, every adapter it offers must name one of them and carry sane limits. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ndk/runtime.h>

#include "testlib.h"

/* Names under /sys/class/infiniband, space separated; 0 when there are none. */
static int rdma_devices(char *names, size_t len)
{
    DIR *d = opendir("/sys/class/infiniband");
    struct dirent *de;
    int n = 0;

    names[0] = '\0';
    if (!d)
        return 0;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        n++;
        strncat(names, de->d_name, len - strlen(names) - 2);
        strcat(names, " ");
    }
    closedir(d);
    return n;
}

int main(void)
{
    ndk_rt_config cfg = { .providers = "verbs", .no_monitor = TRUE };
    ndk_rt_provider_info p;
    static ndk_rt_adapter_info ads[64];
    ULONG count = 64, nverbs = 0;
    char devs[512];
    int ndev = rdma_devices(devs, sizeof devs);
    ndk_rt *rt;
    bool found = false;

    CHECK_MSG(ndk_rt_open(&cfg, &rt) == STATUS_SUCCESS, "ndk_rt_open failed");
    for (ULONG i = 0; i < ndk_rt_provider_count(rt); i++) {
        CHECK_MSG(ndk_rt_provider_get(rt, i, &p) == STATUS_SUCCESS, "provider %u", i);
        if (strcmp(p.name, "verbs") != 0)
            continue;
        found = true;
        CHECK_MSG(p.status == STATUS_SUCCESS, "verbs provider did not load: %s: %s", ndk_rt_status_name(p.status),
                  p.message);
        CHECK_MSG(p.description[0] && !strchr(p.description, '\n'), "description is not one line: '%s'",
                  p.description);
        printf("verbs: %u adapter(s), \"%s\"\n", p.adapter_count, p.description);
        break;
    }
    CHECK_MSG(found, "no provider named verbs in %s", getenv("NDK_PROVIDER_PATH") ? getenv("NDK_PROVIDER_PATH") : "?");
    CHECK_MSG(ndk_rt_adapter_list(rt, ads, &count) == STATUS_SUCCESS, "adapter list");
    for (ULONG i = 0; i < count; i++)
        nverbs += strcmp(ads[i].provider, "verbs") == 0;
    CHECK_MSG(nverbs == p.adapter_count, "adapter list has %u verbs adapters, provider says %u", nverbs,
              p.adapter_count);
    if (ndev == 0) {
        CHECK_MSG(p.adapter_count == 0, "no RDMA device, yet verbs offers %u adapter(s)", p.adapter_count);
        CHECK_MSG(strstr(p.description, "no RDMA device") != NULL, "description does not say why: '%s'",
                  p.description);
        ndk_rt_close(rt);
        printf("ok: no RDMA device here; the provider loaded and offered nothing\n");
        return 0;
    }
    /* Devices exist: each adapter must be a real port with a technology and limits. */
    for (ULONG i = 0; i < count; i++) {
        if (strcmp(ads[i].provider, "verbs") != 0)
            continue;
        const NDK_ADAPTER_INFO *in = &ads[i].info;
        CHECK_MSG(!ads[i].is_loopback, "verbs offers an adapter on loopback %s", ads[i].ifname);
        CHECK_MSG(in->RdmaTechnology > NdkUndefined && in->RdmaTechnology < NdkMaxTechnology, "%s: technology %d",
                  ads[i].ifname, in->RdmaTechnology);
        CHECK_MSG(in->MaxInitiatorRequestSge && in->MaxCqDepth && in->MaxInitiatorQueueDepth, "%s: zero limits",
                  ads[i].ifname);
    }
    ndk_rt_close(rt);
    printf("ok: RDMA devices %s: %u verbs adapter(s) checked\n", devs, nverbs);
    return 0;
}
