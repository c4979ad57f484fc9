/* PnP: in a network namespace the test creates, adding and removing IPv4 and IPv6 addresses on a
 * veth interface is seen by a registered consumer as adapter arrival, address change and
 * removal; NDK disable/enable (OID_NDK_SET_STATE) reaches the consumer, which closes its
 * instance from the callback; removal of an interface with an open instance halts the adapter
 * only after the consumer has closed it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rttest.h"
#include "testlib.h"

static ndk_rt *rt;
static pthread_mutex_t instance_lock = PTHREAD_MUTEX_INITIALIZER;   /* guards the two below */
static NDK_ADAPTER *open_instance;      /* closed by the PnP callback on DISABLE/REMOVAL */
static ndk_rt_adapter_id instance_adapter;

static void set_instance(NDK_ADAPTER *a, ndk_rt_adapter_id id)
{
    pthread_mutex_lock(&instance_lock);
    open_instance = a;
    instance_adapter = id;
    pthread_mutex_unlock(&instance_lock);
}

static NDK_ADAPTER *get_instance(void)
{
    pthread_mutex_lock(&instance_lock);
    NDK_ADAPTER *a = open_instance;
    pthread_mutex_unlock(&instance_lock);
    return a;
}

static void on_event(void *ctx, const ndk_rt_event *ev)
{
    /* What a consumer must do: close its instances on disable or removal (§6.5). */
    NDK_ADAPTER *close_me = NULL;
    pthread_mutex_lock(&instance_lock);
    if ((ev->type == NDK_RT_EVENT_NDK_DISABLE || ev->type == NDK_RT_EVENT_ADAPTER_REMOVAL) && open_instance &&
        ev->adapter == instance_adapter) {
        close_me = open_instance;
        open_instance = NULL;
    }
    pthread_mutex_unlock(&instance_lock);
    if (close_me)
        ndk_rt_close_adapter(rt, close_me);
    rttest_on_event(ctx, ev);
}

static ndk_rt_adapter_id find_v4(const char *addr)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    inet_pton(AF_INET, addr, &sin.sin_addr);
    ndk_rt_adapter_id id = 0;
    ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin, NULL, &id);
    return id;
}

static ndk_rt_adapter_id find_v6(const char *addr)
{
    struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
    inet_pton(AF_INET6, addr, &sin6.sin6_addr);
    ndk_rt_adapter_id id = 0;
    ndk_rt_find_adapter_by_address(rt, (struct sockaddr *)&sin6, NULL, &id);
    return id;
}

#define WAIT(type, ifname, ev) CHECK_MSG(rttest_wait_event(type, ifname, 5000, ev), "no %s for %s within 5 s", \
                                         ndk_rt_event_name(type), ifname)

int main(void)
{
    ndk_test_enter_netns();
    ndk_rt_config cfg = { 0 };
    cfg.provider_path = rttest_provider_dir();
    cfg.providers = "testgood";
    cfg.config_file = "/nonexistent/openndk.conf";
    cfg.log = rttest_log;
    CHECK_STATUS(ndk_rt_open(&cfg, &rt), STATUS_SUCCESS);
    ULONG reg = 0;
    CHECK_STATUS(ndk_rt_register_pnp(rt, on_event, NULL, &reg), STATUS_SUCCESS);
    ndk_rt_event ev, lo_ev;
    WAIT(NDK_RT_EVENT_ADAPTER_ARRIVAL, "lo", &lo_ev);   /* existing adapters are announced first */

    /* An interface without addresses is no adapter; no link-local addresses, so that only the
     * addresses the test adds count. */
    ndk_test_sh("ip link add ndkt0 type veth peer name ndkt1");
    ndk_test_sh("ip link set ndkt0 addrgenmode none && ip link set ndkt1 addrgenmode none");
    ndk_test_sh("ip link set ndkt0 up && ip link set ndkt1 up");
    ndk_rt_adapter_id vid;
    CHECK_STATUS(ndk_rt_find_adapter_by_ifname(rt, "ndkt0", NULL, &vid), STATUS_OBJECT_NAME_NOT_FOUND);

    /* IPv4 address alone: arrival, then removal. */
    ndk_test_sh("ip addr add 198.18.7.1/24 dev ndkt0");
    WAIT(NDK_RT_EVENT_ADAPTER_ARRIVAL, "ndkt0", &ev);
    CHECK_EQ(find_v4("198.18.7.1"), ev.adapter);
    ndk_rt_adapter_id first = ev.adapter;
    ndk_test_sh("ip addr del 198.18.7.1/24 dev ndkt0");
    WAIT(NDK_RT_EVENT_ADAPTER_REMOVAL, "ndkt0", &ev);
    CHECK_EQ(ev.adapter, first);
    CHECK_EQ(find_v4("198.18.7.1"), 0);

    /* IPv6 address alone: arrival (a new adapter id), then removal. */
    ndk_test_sh("ip -6 addr add fd00:7::1/64 dev ndkt0 nodad");
    WAIT(NDK_RT_EVENT_ADAPTER_ARRIVAL, "ndkt0", &ev);
    CHECK(ev.adapter != first);
    CHECK_EQ(find_v6("fd00:7::1"), ev.adapter);
    ndk_rt_adapter_id second = ev.adapter;
    /* Adding the IPv4 address to a bound interface is an address change on the same adapter. */
    ndk_test_sh("ip addr add 198.18.7.1/24 dev ndkt0");
    WAIT(NDK_RT_EVENT_ADDRESS_CHANGE, "ndkt0", &ev);
    CHECK_EQ(ev.adapter, second);
    CHECK_EQ(find_v4("198.18.7.1"), second);
    ndk_rt_adapter_info info;
    CHECK_STATUS(ndk_rt_adapter_query(rt, second, &info), STATUS_SUCCESS);
    CHECK_EQ(info.address_count, 2);
    ndk_test_sh("ip -6 addr del fd00:7::1/64 dev ndkt0");
    WAIT(NDK_RT_EVENT_ADDRESS_CHANGE, "ndkt0", &ev);
    CHECK_EQ(find_v6("fd00:7::1"), 0);
    ndk_test_sh("ip addr del 198.18.7.1/24 dev ndkt0");
    WAIT(NDK_RT_EVENT_ADAPTER_REMOVAL, "ndkt0", &ev);
    CHECK_EQ(ev.adapter, second);

    /* NDK disable reaches the consumer, which closes its instance; opens then fail until enable. */
    NDK_ADAPTER *inst = NULL;
    CHECK_STATUS(ndk_rt_open_adapter(rt, lo_ev.adapter, (NDK_VERSION){ 2, 1 }, &inst), STATUS_SUCCESS);
    set_instance(inst, lo_ev.adapter);
    CHECK_STATUS(ndk_rt_set_state(rt, lo_ev.adapter, FALSE), STATUS_SUCCESS);
    WAIT(NDK_RT_EVENT_NDK_DISABLE, "lo", &ev);
    CHECK(get_instance() == NULL);
    CHECK_STATUS(ndk_rt_adapter_query(rt, lo_ev.adapter, &info), STATUS_SUCCESS);
    CHECK(!info.enabled);
    CHECK_EQ(info.open_instances, 0);
    NDK_ADAPTER *a = NULL;
    CHECK_STATUS(ndk_rt_open_adapter(rt, lo_ev.adapter, (NDK_VERSION){ 2, 1 }, &a), NDIS_STATUS_ADAPTER_NOT_READY);
    CHECK_STATUS(ndk_rt_set_state(rt, lo_ev.adapter, TRUE), STATUS_SUCCESS);
    WAIT(NDK_RT_EVENT_NDK_ENABLE, "lo", &ev);
    CHECK_STATUS(ndk_rt_open_adapter(rt, lo_ev.adapter, (NDK_VERSION){ 2, 1 }, &a), STATUS_SUCCESS);
    ndk_rt_close_adapter(rt, a);

    /* Removing an interface under an open instance: the consumer is told and closes it. */
    ndk_test_sh("ip addr add 198.18.7.1/24 dev ndkt0");
    WAIT(NDK_RT_EVENT_ADAPTER_ARRIVAL, "ndkt0", &ev);
    ndk_rt_adapter_id third = ev.adapter;
    CHECK_STATUS(ndk_rt_open_adapter(rt, third, (NDK_VERSION){ 1, 1 }, &inst), STATUS_SUCCESS);
    set_instance(inst, third);
    ndk_test_sh("ip link del ndkt0");
    WAIT(NDK_RT_EVENT_ADAPTER_REMOVAL, "ndkt0", &ev);
    CHECK_EQ(ev.adapter, third);
    CHECK(get_instance() == NULL);
    CHECK_STATUS(ndk_rt_adapter_query(rt, third, &info), STATUS_NO_SUCH_DEVICE);
    CHECK_STATUS(ndk_rt_set_state(rt, third, FALSE), STATUS_NO_SUCH_DEVICE);

    /* After unregistering, no more callbacks. */
    ndk_rt_unregister_pnp(rt, reg);
    ndk_test_sh("ip link add ndkt2 type veth peer name ndkt3 && ip link set ndkt2 addrgenmode none");
    ndk_test_sh("ip link set ndkt2 up && ip addr add 198.18.8.1/24 dev ndkt2");
    CHECK(!rttest_wait_event(NDK_RT_EVENT_ADAPTER_ARRIVAL, "ndkt2", 1000, &ev));
    CHECK(find_v4("198.18.8.1") != 0);    /* the runtime itself still follows the interfaces */
    ndk_rt_close(rt);
    printf("pnp: arrival, address change, removal, disable and enable all reached the consumer\n");
    return 0;
}
