/* The pass-through layer over the iwarp provider: a module filter with no hooks (testempty)
 * under the counting in-process filter, a connect / Send / Write / Read exchange through both
 * with every byte checked, and a clean close: every wrapper the counting filter saw made is
 * ended, every callback went through, the adapter close ended both layers. Also: a configured
 * filter that does not exist fails the open (never runs without it), a filter that refuses
 * the adapter fails the open, and with no filter the consumer gets the provider's objects. */
#define _GNU_SOURCE
#include "filtest.h"

#include <string.h>

static void exchange_counted(int family)
{
    struct iwt t;
    struct ft_count count;
    memset(&count, 0, sizeof count);
    ft_env("testempty");
    iwt_open(&t, family);
    ft_reopen_counted(&t, &count);
    ft_exchange(&t);
    iwt_close(&t);
    CHECK_EQ(atomic_load(&count.opens), 1);
    CHECK_EQ(atomic_load(&count.closes), 1);
    CHECK_EQ(atomic_load(&count.bad), 0);
    for (int ty = 1; ty < NdkObjectTypeMax; ty++)
        CHECK_MSG(atomic_load(&count.created[ty]) == atomic_load(&count.destroyed[ty]),
                  "%s: %d made, %d ended", ndk_filter_object_type_name((NDK_OBJECT_TYPE)ty),
                  atomic_load(&count.created[ty]), atomic_load(&count.destroyed[ty]));
    CHECK_EQ(atomic_load(&count.created[NdkObjectTypeQp]), 2);
    CHECK_EQ(atomic_load(&count.created[NdkObjectTypeConnector]), 2);   /* one made, one from a connect event */
    CHECK_EQ(atomic_load(&count.created[NdkObjectTypeAdapter]), 1);
    static const ndk_filter_fn used[] = {
        NDK_FILTER_FN_CREATE_CQ, NDK_FILTER_FN_CREATE_PD, NDK_FILTER_FN_CREATE_QP, NDK_FILTER_FN_CREATE_MR,
        NDK_FILTER_FN_REGISTER_MR, NDK_FILTER_FN_DEREGISTER_MR, NDK_FILTER_FN_CREATE_LISTENER, NDK_FILTER_FN_LISTEN,
        NDK_FILTER_FN_CREATE_CONNECTOR, NDK_FILTER_FN_CONNECT, NDK_FILTER_FN_ACCEPT, NDK_FILTER_FN_COMPLETE_CONNECT,
        NDK_FILTER_FN_SEND, NDK_FILTER_FN_RECEIVE, NDK_FILTER_FN_WRITE, NDK_FILTER_FN_READ,
        NDK_FILTER_FN_GET_CQ_RESULTS_EX, NDK_FILTER_FN_CLOSE_QP, NDK_FILTER_FN_CLOSE_CQ, NDK_FILTER_FN_CLOSE_PD,
        NDK_FILTER_FN_CLOSE_MR, NDK_FILTER_FN_CLOSE_CONNECTOR, NDK_FILTER_FN_CLOSE_LISTENER,
        NDK_FILTER_FN_LISTENER_GET_LOCAL_ADDRESS, NDK_FILTER_FN_GET_LOCAL_TOKEN_FROM_MR,
        NDK_FILTER_FN_GET_REMOTE_TOKEN_FROM_MR, NDK_FILTER_FN_CLOSE_ADAPTER,
    };
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        CHECK_MSG(atomic_load(&count.calls[used[i]]) > 0, "%s never reached the filter", ndk_filter_fn_name(used[i]));
    CHECK(atomic_load(&count.cbs[NDK_FILTER_CB_CONNECT_EVENT]) == 1);
    CHECK(atomic_load(&count.cbs[NDK_FILTER_CB_REQUEST_COMPLETION]) >= 1);
    printf("%d calls of CreateQp, %d request completions, %d close completions through the stack\n",
           atomic_load(&count.calls[NDK_FILTER_FN_CREATE_QP]), atomic_load(&count.cbs[NDK_FILTER_CB_REQUEST_COMPLETION]),
           atomic_load(&count.cbs[NDK_FILTER_CB_CLOSE_COMPLETION]));
}

static void open_failures(void)
{
    struct iwt t;
    NDK_VERSION v = { 2, 1 };
    ft_env("nosuchfilter");
    CHECK_STATUS(iwt_open_version(&t, AF_INET, v), STATUS_DLL_NOT_FOUND);
    CHECK(t.ad == NULL);
    iwt_close(&t);
    ft_env("testempty");
    setenv("NDK_TESTEMPTY_REFUSE", "1", 1);
    CHECK_STATUS(iwt_open_version(&t, AF_INET, v), STATUS_NOT_SUPPORTED);
    iwt_close(&t);
    unsetenv("NDK_TESTEMPTY_REFUSE");
}

/* Without filters the adapter is the provider's (its table is not the layer's), with one it is
 * a wrapper whose every slot is set. */
static void identity(void)
{
    struct iwt t, u;
    ft_env(NULL);
    iwt_open(&t, AF_INET);
    ft_env("testempty");
    iwt_open(&u, AF_INET);
    CHECK(t.ad->Dispatch != u.ad->Dispatch);
    CHECK(t.ad->Dispatch->NdkCreateCq != u.ad->Dispatch->NdkCreateCq);
    CHECK_EQ(t.ad->Header.ObjectType, NdkObjectTypeAdapter);
    CHECK_EQ(u.ad->Header.ObjectType, NdkObjectTypeAdapter);
    CHECK_EQ(t.ad->Header.Version.Major, u.ad->Header.Version.Major);
    iwt_close(&u);
    iwt_close(&t);
}

int main(void)
{
    iwt_for_each_family(exchange_counted);
    open_failures();
    identity();
    printf("ok\n");
    return 0;
}
