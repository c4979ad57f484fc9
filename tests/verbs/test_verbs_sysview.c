/* test_verbs_sysview: the verbs provider's side of the system view that runs without an RDMA
 * device (sysview.c): an older runtime without the services gets no call and the counters stay
 * the device's own; a runtime with them gets the counters in the adapter record, flagged
 * NDK_SV_ADAPTER_COUNTERS, in NDIS_NDK_PERFORMANCE_COUNTERS order; records are asked for and
 * given back through the services; addresses, state names, the first error and the post clock.
 * The records of live objects are checked in the guest (tests/interop/guest/verbs.sh, sysview). */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"
#include "testlib.h"

static struct ndk_sv_rec adapter_rec, obj_rec;
static int nalloc, nfree, nadapter;
static NDIS_HANDLE seen_handle;
static uint16_t seen_type;

static struct ndk_sv_rec *fake_alloc(NDIS_HANDLE h, uint16_t type)
{
    nalloc++;
    seen_handle = h;
    seen_type = type;
    memset(&obj_rec, 0, sizeof obj_rec);
    obj_rec.type = type;
    obj_rec.id = 7;
    return &obj_rec;
}

static VOID fake_free(NDIS_HANDLE h, struct ndk_sv_rec *r)
{
    (void)h;
    CHECK(r == &obj_rec);
    nfree++;
}

static struct ndk_sv_rec *fake_adapter(NDIS_HANDLE h)
{
    (void)h;
    nadapter++;
    return &adapter_rec;
}

static void check_addresses(void)
{
    struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(7301) };
    struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(18601), .sin6_scope_id = 3 };
    struct ndk_sv_addr a;
    static const uint8_t zero[16];

    inet_pton(AF_INET, "198.18.1.1", &in.sin_addr);
    vb_sv_addr(&a, (struct sockaddr *)&in);
    CHECK_EQ(a.family, AF_INET);
    CHECK_EQ(a.port, 7301);
    CHECK_EQ(a.scope_id, 0);
    CHECK(memcmp(a.addr, &in.sin_addr, 4) == 0 && memcmp(a.addr + 4, zero, 12) == 0);
    inet_pton(AF_INET6, "fd00::1", &in6.sin6_addr);
    vb_sv_addr(&a, (struct sockaddr *)&in6);
    CHECK_EQ(a.family, AF_INET6);
    CHECK_EQ(a.port, 18601);
    CHECK_EQ(a.scope_id, 3);
    CHECK(memcmp(a.addr, &in6.sin6_addr, 16) == 0);
    vb_sv_addr(&a, NULL);
    CHECK(a.family == 0 && a.port == 0 && memcmp(a.addr, zero, 16) == 0);
}

static void check_helpers(void)
{
    char name[16];
    struct ndk_sv_rec r;

    memset(name, 'x', sizeof name);
    vb_sv_name(name, "RTS");
    CHECK(strcmp(name, "RTS") == 0 && name[15] == 0);
    vb_sv_name(name, "A-STATE-NAME-LONGER-THAN-FIFTEEN");
    CHECK(strlen(name) == 15);

    memset(&r, 0, sizeof r);
    CHECK(vb_sv_qp_error(&r, vb_sv_wc_errno(IBV_WC_RETRY_EXC_ERR)));
    CHECK(!vb_sv_qp_error(&r, -EIO));
    CHECK_EQ(r.u.qp.first_error, -ETIMEDOUT);
    CHECK(!vb_sv_qp_error(NULL, -EIO));
    CHECK_EQ(vb_sv_wc_errno(IBV_WC_SUCCESS), 0);
    CHECK_EQ(vb_sv_wc_errno(IBV_WC_REM_ACCESS_ERR), -EACCES);
    CHECK_EQ(vb_sv_wc_errno(IBV_WC_WR_FLUSH_ERR), -ECANCELED);

    uint64_t t1 = vb_sv_now(), t2 = vb_sv_now();
    CHECK(t1 != 0 && t2 >= t1);
    CHECK_EQ(vb_sv_id(NULL), 0);
}

int main(void)
{
    struct vb_provider prov;
    struct vb_device dev;
    NDK_RUNTIME_SERVICES svc;
    int handle;

    CHECK_EQ(sizeof(struct ndk_sv_rec), NDK_SV_RECORD_SIZE);
    CHECK_EQ(VB_CNT(Connect), 0);
    CHECK_EQ(VB_CNT(ActiveConnection), 4);
    CHECK_EQ(VB_CNT(CQError), 25);

    /* An older runtime: its services end before the system view's members. */
    memset(&prov, 0, sizeof prov);
    memset(&dev, 0, sizeof dev);
    memset(&svc, 0, sizeof svc);
    svc.Size = (ULONG)offsetof(NDK_RUNTIME_SERVICES, SysviewAlloc);
    svc.SysviewAlloc = fake_alloc;      /* beyond Size: must not be called */
    svc.SysviewFree = fake_free;
    svc.SysviewAdapter = fake_adapter;
    prov.drv.services = &svc;
    dev.prov = &prov;
    dev.miniport_handle = &handle;
    CHECK(!vb_sv_services(&svc));
    vb_sv_device_init(&dev);
    CHECK(!dev.sv && dev.cnt == dev.own_cnt);
    CHECK(vb_sv_alloc(&dev, NDK_SV_QP) == NULL);
    vb_sv_free(&dev, &obj_rec);
    CHECK_EQ(nalloc + nfree + nadapter, 0);
    VB_COUNT(&dev, Connect);
    CHECK_EQ(dev.own_cnt[0], 1);

    /* A runtime with the services: the counters are the adapter record's. */
    memset(&dev, 0, sizeof dev);
    dev.prov = &prov;
    dev.miniport_handle = &handle;
    svc.Size = sizeof svc;
    adapter_rec.type = NDK_SV_ADAPTER;
    adapter_rec.id = 1;
    CHECK(vb_sv_services(&svc));
    vb_sv_device_init(&dev);
    CHECK(dev.sv && nadapter == 1);
    CHECK(dev.cnt == adapter_rec.u.adapter.counters);
    CHECK(adapter_rec.u.adapter.flags & NDK_SV_ADAPTER_COUNTERS);
    CHECK_EQ(adapter_rec.seq % 2, 0);
    VB_COUNT(&dev, Accept);
    VB_COUNT(&dev, CQError);
    VB_COUNT(&dev, ActiveConnection);
    VB_COUNT_ADD(&dev, ActiveConnection, -1);
    VB_COUNT(&dev, ActiveConnection);
    CHECK_EQ(adapter_rec.u.adapter.counters[1], 1);
    CHECK_EQ(adapter_rec.u.adapter.counters[25], 1);
    CHECK_EQ(adapter_rec.u.adapter.counters[4], 1);
    CHECK_EQ(dev.own_cnt[1], 0);

    struct ndk_sv_rec *r = vb_sv_alloc(&dev, NDK_SV_CQ);
    CHECK(r == &obj_rec && nalloc == 1 && seen_type == NDK_SV_CQ && seen_handle == &handle);
    CHECK_EQ(vb_sv_id(r), 7);
    vb_sv_free(&dev, r);
    vb_sv_free(&dev, NULL);
    CHECK_EQ(nfree, 1);

    /* A record that is not an adapter's (a runtime bug) leaves the counters at home. */
    memset(&dev, 0, sizeof dev);
    dev.prov = &prov;
    adapter_rec.type = NDK_SV_QP;
    vb_sv_device_init(&dev);
    CHECK(dev.cnt == dev.own_cnt);

    check_addresses();
    check_helpers();
    printf("ok: verbs system view helpers\n");
    return 0;
}
