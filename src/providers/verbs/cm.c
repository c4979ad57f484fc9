/* cm.c - the rdma_cm side shared by connectors, listeners and shared endpoints (map §1.7, §4):
 * the device's event channel drained on the progress thread (get, copy the private data, ack,
 * then act: rdma_destroy_id waits for unacked events), ids, binds with NDK's ephemeral port
 * range, and socket-address helpers. */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

ULONG vb_sa_len(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? (ULONG)sizeof(struct sockaddr_in6) : (ULONG)sizeof(struct sockaddr_in);
}

/* 0 when sa is an IPv4 or IPv6 address of a fitting length, else -EINVAL. */
int vb_sa_check(const struct sockaddr *sa, ULONG len)
{
    if (!sa)
        return -EINVAL;
    if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
        return 0;
    if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
        return 0;
    return -EINVAL;
}

bool vb_sa_is_wildcard(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return false;
}

NTSTATUS vb_sa_copy_out(const struct sockaddr *sa, PSOCKADDR out, ULONG *len)
{
    ULONG need;

    if (!len || !sa)
        return STATUS_INVALID_PARAMETER;
    need = vb_sa_len(sa);
    if (!out || *len < need) {
        *len = need;
        return STATUS_BUFFER_TOO_SMALL;
    }
    memcpy(out, sa, need);
    *len = need;
    return STATUS_SUCCESS;
}

static uint16_t vb_sa_port(const struct sockaddr *sa)
{
    return ntohs(sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
                                          : ((const struct sockaddr_in *)sa)->sin_port);
}

static void vb_sa_set_port(struct sockaddr *sa, uint16_t port)
{
    if (sa->sa_family == AF_INET6)
        ((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)sa)->sin_port = htons(port);
}

int vb_cm_create_id(struct vb_device *dev, void *context, struct rdma_cm_id **out)
{
    return rdma_create_id(dev->ech, out, context, RDMA_PS_TCP) ? -errno : 0;
}

void vb_cm_destroy_id(struct rdma_cm_id *id)
{
    if (id)
        rdma_destroy_id(id);
}

/* Binds id to sa; port 0 takes a free port from NDK's ephemeral range (§5.11.5) rather than
 * rdma_cm's ip_local_port_range. May block briefly. Returns 0 or -errno. */
int vb_cm_bind(struct rdma_cm_id *id, const struct sockaddr *sa)
{
    SOCKADDR_INET a;
    static _Atomic uint32_t next;
    uint32_t span = NDK_EPHEMERAL_PORT_LAST - NDK_EPHEMERAL_PORT_FIRST + 1;

    memset(&a, 0, sizeof a);
    memcpy(&a, sa, vb_sa_len(sa));
    if (a.si_family == AF_INET6)
        (void)rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &(int){ 1 }, sizeof(int));
    if (vb_sa_port(sa))
        return rdma_bind_addr(id, (struct sockaddr *)&a) ? -errno : 0;
    if (!next)
        next = (uint32_t)rand();
    for (int tries = 0; tries < 128; tries++) {
        uint16_t port = (uint16_t)(NDK_EPHEMERAL_PORT_FIRST + atomic_fetch_add(&next, 1) % span);
        vb_sa_set_port((struct sockaddr *)&a, port);
        if (rdma_bind_addr(id, (struct sockaddr *)&a) == 0)
            return 0;
        if (errno != EADDRINUSE)
            return -errno;
    }
    return -EADDRNOTAVAIL;
}

/* Progress thread: every pending rdma_cm event of the device. */
void vb_cm_on_events(struct vb_device *dev)
{
    struct rdma_cm_event *ev;

    while (rdma_get_cm_event(dev->ech, &ev) == 0) {
        struct rdma_cm_event e = *ev;
        uint8_t pd[VB_MAX_PD_LEN];
        ULONG pd_len = 0;

        if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST || e.event == RDMA_CM_EVENT_CONNECT_RESPONSE ||
            e.event == RDMA_CM_EVENT_ESTABLISHED || e.event == RDMA_CM_EVENT_REJECTED) {
            pd_len = e.param.conn.private_data_len;
            if (pd_len > sizeof pd)
                pd_len = sizeof pd;
            if (pd_len && e.param.conn.private_data)
                memcpy(pd, e.param.conn.private_data, pd_len);
            else
                pd_len = 0;
        }
        e.param.conn.private_data = NULL;
        rdma_ack_cm_event(ev);
        vb_dbg(dev, "cm event %s status %d", rdma_event_str(e.event), e.status);
        if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            struct vb_obj *o = e.listen_id ? e.listen_id->context : NULL;
            if (o && o->type == VB_OBJ_LISTENER)
                vb_listener_on_request(ndk_container_of(o, struct vb_listener, obj), e.id, &e, pd, pd_len);
            else
                rdma_reject(e.id, NULL, 0), rdma_destroy_id(e.id);
            continue;
        }
        struct vb_obj *o = e.id ? e.id->context : NULL;
        if (o && o->type == VB_OBJ_CONNECTOR)
            vb_connector_on_event(ndk_container_of(o, struct vb_connector, obj), &e, pd, pd_len);
    }
}
