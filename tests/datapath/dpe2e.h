/* dpe2e: the two-process data-path tests' common side (through the runtime and the iwarp
 * provider on loopback): one adapter, a CQ shared by both queues, a PD, a QP with MAXSGE SGEs
 * and a region registered for local write and remote read and write; connection set-up. */
#ifndef DPE2E_H
#define DPE2E_H

#include <stdint.h>

#include "iwtest.h"

#define DPE_TMO 30000
#define DPE_MAXSGE 16

struct dpe_side {
    struct iwt t;
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_QP *qp;
    NDK_MR *mr;
    MDL *mdl;
    uint8_t *buf;
    size_t len;
    uint32_t token;
};

/* Opens the side with a len-byte region; cq_cb (NULL: none wanted) gets ctx. */
void dpe_side_open(struct dpe_side *s, int family, size_t len, NDK_FN_CQ_NOTIFICATION_CALLBACK cq_cb, void *ctx);
void dpe_side_close(struct dpe_side *s);
/* Server: listens on the side's address (port chosen by the system) and sends the client the
 * port, the region's token and its address over tx_fd. */
NDK_LISTENER *dpe_listen(struct dpe_side *s, int tx_fd);
/* Server: waits for the connection request and accepts it onto the side's QP (IRD = ORD = 16). */
NDK_CONNECTOR *dpe_accept(struct dpe_side *s, NDK_FN_DISCONNECT_EVENT_CALLBACK on_disc);
/* Client: what dpe_listen sent, and the connection to it (Connect + CompleteConnect). */
struct dpe_peer {
    uint16_t port;
    uint32_t token;
    uint64_t va;
};
void dpe_recv_peer(struct dpe_peer *p, int rx_fd);
NDK_CONNECTOR *dpe_connect(struct dpe_side *s, uint16_t port, NDK_FN_DISCONNECT_EVENT_CALLBACK on_disc);

#endif
