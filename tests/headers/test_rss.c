/* The NDK RSS extension through the runtime and the iwarp provider: asked for by its GUID, at
 * every version and on the adapter and a child object, the provider answers STATUS_NOT_SUPPORTED
 * (its progress threads are not bound to processors, so it has none to report) and leaves the
 * caller's NDK_EXTENSION_INTERFACE alone. The header's shapes are pinned too. */
#include <ndkrss.h>
#include <ndisNDK.h>

#include "iwtest.h"
#include "testlib.h"

_Static_assert(sizeof(NDK_EXTENSION_ADAPTER_RSS_DISPATCH) == sizeof(void *), "one slot");
_Static_assert(_Generic(((NDK_EXTENSION_ADAPTER_RSS_DISPATCH *)0)->NdkGetRssProcessorInfo,
                        NDIS_STATUS (*)(NDK_ADAPTER *, PNDIS_RSS_PROCESSOR_INFO, PSIZE_T): 1, default: 0),
               "NdkGetRssProcessorInfo's shape");

static void expect_unsupported(NDK_OBJECT_HEADER *obj, NDK_FN_QUERY_EXTENSION_INTERFACE query, NDK_VERSION v)
{
    GUID id = NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH_INIT;
    static const char sentinel;
    NDK_EXTENSION_INTERFACE ext = { &sentinel };
    NTSTATUS st = query(obj, &id, v, &ext);
    CHECK_MSG(st == STATUS_NOT_SUPPORTED, "RSS extension %u.%u: %s, expected STATUS_NOT_SUPPORTED", v.Major, v.Minor,
              ndk_rt_status_name(st));
    CHECK(ext.Dispatch == &sentinel);
}

int main(void)
{
    static const GUID want = NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH_INIT;
    CHECK(want.Data1 == 0xbab27026u && want.Data2 == 0x86c3 && want.Data3 == 0x4e31 && want.Data4[0] == 0x9f &&
          want.Data4[7] == 0x42);

    struct iwt t;
    iwt_open(&t, AF_INET);
    const NDK_VERSION versions[] = { { 1, 0 }, { 1, 1 }, { 2, 0 }, { 0, 0 } };
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
        expect_unsupported(&t.ad->Header, t.ad->Dispatch->NdkQueryExtension, versions[i]);

    NDK_PD *pd = NULL;
    CHECK_STATUS(t.ad->Dispatch->NdkCreatePd(t.ad, NULL, NULL, &pd), STATUS_SUCCESS);
    expect_unsupported(&pd->Header, pd->Dispatch->NdkQueryExtension, versions[0]);
    CHECK_STATUS(pd->Dispatch->NdkClosePd(&pd->Header, NULL, NULL), STATUS_SUCCESS);
    iwt_close(&t);
    printf("rss: the iwarp provider declines the RSS extension with STATUS_NOT_SUPPORTED\n");
    return 0;
}
