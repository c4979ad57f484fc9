/* ndk_tool_server.c - a tool's listeners and the queue of incoming requests
 * (ndk_tool_server.h). */
#include "ndk_tool_server.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ndk_sync.h"
#include "ndk_sync_time.h"
#include "ndk_tool.h"
#include "ndk_tool_addr.h"

#define TOOL_MAX_LISTEN 32

struct tool_pending {
    NDK_CONNECTOR       *conn;
    int                  slot;
    struct tool_pending *next;
};

struct tool_slot {
    ndk_tool_server *srv;
    int              index;
    ndk_tool_adapter ad;
    NDK_LISTENER    *listener;
    SOCKADDR_INET    addr;
    ndk_sync_op     *close_op;
};

struct ndk_tool_server {
    ndk_rt              *rt;
    int                  nslots;
    struct tool_slot     slots[TOOL_MAX_LISTEN];
    pthread_mutex_t      lock;
    pthread_cond_t       cond;
    struct tool_pending *head, *tail;
};

/* NDK_FN_CONNECT_EVENT_CALLBACK: queue the request for ndk_tool_server_next. */
static void tool_connect_event(PVOID ctx, NDK_CONNECTOR *conn)
{
    struct tool_slot *slot = ctx;
    ndk_tool_server *s = slot->srv;
    struct tool_pending *p = calloc(1, sizeof *p);
    if (!p) {
        conn->Dispatch->NdkReject(conn, NULL, 0);
        return;                 /* leaked on purpose: closing here could wait on us */
    }
    p->conn = conn;
    p->slot = slot->index;
    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = p;
    else
        s->head = p;
    s->tail = p;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static NTSTATUS tool_server_add(ndk_tool_server *s, ndk_rt_adapter_id id, const SOCKADDR_INET *addr)
{
    if (s->nslots >= TOOL_MAX_LISTEN)
        return STATUS_TOO_MANY_ADDRESSES;
    struct tool_slot *slot = &s->slots[s->nslots];
    memset(slot, 0, sizeof *slot);
    slot->srv = s;
    slot->index = s->nslots;
    slot->addr = *addr;
    NTSTATUS st = ndk_tool_adapter_open(s->rt, id, &slot->ad);
    if (st != STATUS_SUCCESS)
        return st;
    ndk_sync_op *op = ndk_sync_op_new();
    if (!op) {
        ndk_tool_adapter_close(&slot->ad);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    NDK_LISTENER *l = NULL;
    st = slot->ad.adapter->Dispatch->NdkCreateListener(slot->ad.adapter, tool_connect_event, slot,
                                                       ndk_sync_op_create_done, op, &l);
    st = ndk_sync_create_finish(op, st, (void **)&slot->listener, l);
    if (st == STATUS_SUCCESS) {
        SOCKADDR_INET a = *addr;
        op = ndk_sync_op_new();
        st = STATUS_INSUFFICIENT_RESOURCES;
        if (op) {
            st = slot->listener->Dispatch->NdkListen(slot->listener, (PSOCKADDR)&a, ndk_sync_addr_len(&a),
                                                     ndk_sync_op_request_done, op);
            st = ndk_sync_op_finish(op, st, NDK_SYNC_OP_TIMEOUT_MS, NULL);
        }
        if (st == STATUS_SUCCESS) {
            /* Learn the port when the provider chose it. */
            ULONG len = sizeof a;
            if (slot->listener->Dispatch->NdkGetLocalAddress(slot->listener, (PSOCKADDR)&a, &len) == STATUS_SUCCESS)
                slot->addr = a;
            s->nslots++;
            return STATUS_SUCCESS;
        }
        NDK_SYNC_CLOSE(slot->listener);
    }
    ndk_tool_adapter_close(&slot->ad);
    return st;
}

NTSTATUS ndk_tool_server_start(ndk_rt *rt, const SOCKADDR_INET *addr, const char *provider, ULONG ifindex,
                               ndk_tool_server **out, char *why, size_t whylen)
{
    char a[NDK_TOOL_ADDR_STRLEN];
    ndk_tool_server *s = calloc(1, sizeof *s);
    ndk_rt_adapter_info *list = NULL;
    NTSTATUS st, last = STATUS_OBJECT_NAME_NOT_FOUND;
    uint16_t port = ndk_tool_addr_port(addr);

    if (!s)
        return STATUS_INSUFFICIENT_RESOURCES;
    s->rt = rt;
    pthread_mutex_init(&s->lock, NULL);
    ndk_sync_time_cond_init(&s->cond);
    why[0] = '\0';

    if (addr->si_family != AF_UNSPEC && !ndk_tool_addr_is_any(addr)) {
        ndk_rt_adapter_id id;
        st = ndk_rt_find_adapter_by_address(rt, (const struct sockaddr *)addr, provider, &id);
        if (st != STATUS_SUCCESS) {
            snprintf(why, whylen, "no NDK adapter serves %s (see ndkinfo)",
                     ndk_tool_addr_str(addr, false, a, sizeof a));
            goto fail;
        }
        st = tool_server_add(s, id, addr);
        if (st != STATUS_SUCCESS) {
            snprintf(why, whylen, "listen on %s failed: %s", ndk_tool_addr_str(addr, true, a, sizeof a),
                     ndk_tool_status(st));
            goto fail;
        }
        *out = s;
        return STATUS_SUCCESS;
    }

    ULONG count = 64;
    list = calloc(count, sizeof *list);
    if (!list) {
        st = STATUS_INSUFFICIENT_RESOURCES;
        goto fail;
    }
    st = ndk_rt_adapter_list(rt, list, &count);
    if (st == STATUS_BUFFER_TOO_SMALL)
        count = 64;
    else if (st != STATUS_SUCCESS)
        goto fail;

    static const int families[2] = { AF_INET, AF_INET6 };
    for (int fi = 0; fi < 2; fi++) {
        int fam = families[fi];
        if (addr->si_family != AF_UNSPEC && addr->si_family != fam)
            continue;
        SOCKADDR_INET any;
        memset(&any, 0, sizeof any);
        any.si_family = (ADDRESS_FAMILY)fam;
        ndk_tool_addr_set_port(&any, port);
        /* First the wildcard through one adapter: a provider that supports it then serves
         * every address of the family from one listener. */
        int first = -1;
        for (ULONG i = 0; i < count && first < 0; i++) {
            if ((provider && strcmp(list[i].provider, provider)) || (ifindex && list[i].ifindex != ifindex) ||
                !list[i].enabled)
                continue;
            for (ULONG k = 0; k < list[i].address_count && k < NDK_RT_MAX_ADDRESSES; k++)
                if (list[i].addresses[k].si_family == fam) {
                    first = (int)i;
                    break;
                }
        }
        if (first < 0)
            continue;
        if (!ifindex) {
            st = tool_server_add(s, list[first].id, &any);
            if (st == STATUS_SUCCESS)
                continue;
            last = st;
        }
        /* Otherwise every address of the family on every adapter. */
        for (ULONG i = 0; i < count; i++) {
            if ((provider && strcmp(list[i].provider, provider)) || (ifindex && list[i].ifindex != ifindex) ||
                !list[i].enabled)
                continue;
            for (ULONG k = 0; k < list[i].address_count && k < NDK_RT_MAX_ADDRESSES; k++) {
                SOCKADDR_INET one = list[i].addresses[k];
                if (one.si_family != fam)
                    continue;
                ndk_tool_addr_set_port(&one, port);
                st = tool_server_add(s, list[i].id, &one);
                if (st != STATUS_SUCCESS)
                    last = st;
            }
        }
    }
    free(list);
    list = NULL;
    if (s->nslots == 0) {
        st = last;
        snprintf(why, whylen, "cannot listen on %s: %s", ndk_tool_addr_str(addr, true, a, sizeof a),
                 last == STATUS_OBJECT_NAME_NOT_FOUND ? "no NDK adapter has an address of that family (see ndkinfo)"
                                                      : ndk_tool_status(last));
        goto fail;
    }
    *out = s;
    return STATUS_SUCCESS;
fail:
    free(list);
    ndk_tool_server_stop(s);
    return st == STATUS_SUCCESS ? STATUS_OBJECT_NAME_NOT_FOUND : st;
}

const char *ndk_tool_server_where(ndk_tool_server *s, char *buf, size_t len)
{
    char a[NDK_TOOL_ADDR_STRLEN];
    buf[0] = '\0';
    for (int i = 0; i < s->nslots; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s (%s, %s)", i ? ", " : "",
                 ndk_tool_addr_str(&s->slots[i].addr, true, a, sizeof a), s->slots[i].ad.ifname,
                 s->slots[i].ad.provider);
    }
    return buf;
}

NTSTATUS ndk_tool_server_next(ndk_tool_server *s, int timeout_ms, NDK_CONNECTOR **conn, ndk_tool_adapter **ad)
{
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : ndk_sync_time_now_ns() + (uint64_t)timeout_ms * 1000000u;
    pthread_mutex_lock(&s->lock);
    while (!s->head) {
        uint64_t now = ndk_sync_time_now_ns();
        if (now >= deadline || ndk_tool_stopped()) {
            pthread_mutex_unlock(&s->lock);
            return ndk_tool_stopped() ? STATUS_CANCELLED : STATUS_IO_TIMEOUT;
        }
        uint64_t until = now + 100000000u;
        if (until > deadline)
            until = deadline;
        struct timespec ts = ndk_sync_time_ts(until);
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    struct tool_pending *p = s->head;
    s->head = p->next;
    if (!s->head)
        s->tail = NULL;
    pthread_mutex_unlock(&s->lock);
    *conn = p->conn;
    *ad = &s->slots[p->slot].ad;
    free(p);
    return STATUS_SUCCESS;
}

static void tool_server_drain(ndk_tool_server *s)
{
    for (;;) {
        pthread_mutex_lock(&s->lock);
        struct tool_pending *p = s->head;
        if (p) {
            s->head = p->next;
            if (!s->head)
                s->tail = NULL;
        }
        pthread_mutex_unlock(&s->lock);
        if (!p)
            return;
        p->conn->Dispatch->NdkReject(p->conn, NULL, 0);
        ndk_sync_close(&p->conn->Header, NDK_SYNC_OP_TIMEOUT_MS);
        free(p);
    }
}

void ndk_tool_server_stop(ndk_tool_server *s)
{
    if (!s)
        return;
    /* Ask every listener to close (no connect events after that), refuse what was queued, and
     * wait: a listener's close completes once the connectors it produced are closed. */
    for (int i = 0; i < s->nslots; i++) {
        struct tool_slot *slot = &s->slots[i];
        /* Without memory for the op (NULL) the close is issued all the same and not waited for. */
        slot->close_op = ndk_sync_op_new();
        NTSTATUS st = slot->listener->Dispatch->NdkCloseListener(&slot->listener->Header, ndk_sync_op_close_done,
                                                                 slot->close_op);
        if (st != STATUS_PENDING && slot->close_op) {
            ndk_sync_op_finish(slot->close_op, st, 0, NULL);
            slot->close_op = NULL;
        }
    }
    uint64_t deadline = ndk_sync_time_now_ns() + (uint64_t)NDK_SYNC_OP_TIMEOUT_MS * 1000000u;
    for (;;) {
        tool_server_drain(s);
        bool all = true;
        for (int i = 0; i < s->nslots; i++)
            if (s->slots[i].close_op && !ndk_sync_op_done(s->slots[i].close_op))
                all = false;
        if (all || ndk_sync_time_now_ns() > deadline)
            break;
        usleep(10000);
    }
    bool stuck = false;
    for (int i = 0; i < s->nslots; i++) {
        struct tool_slot *slot = &s->slots[i];
        if (slot->close_op &&
            ndk_sync_op_finish(slot->close_op, STATUS_PENDING, 0, NULL) != STATUS_SUCCESS)
            stuck = true;
    }
    if (stuck) {
        ndk_tool_err("a listener did not finish closing; exiting without closing its adapter");
        return;
    }
    for (int i = 0; i < s->nslots; i++)
        ndk_tool_adapter_close(&s->slots[i].ad);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}
