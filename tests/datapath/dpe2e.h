/* dpe2e: the two-process data-path tests' common side (through the runtime and the iwarp
 * provider on loopback): one adapter, a CQ shared by both queues, a PD, a QP with MAXSGE SGEs
 * and a region registered for local write and remote read and write; payload patterns. */
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
/* A pattern of n bytes from seed, and its check (prints the first differing byte). */
void dpe_fill(uint8_t *p, size_t n, uint32_t seed);
bool dpe_same(const uint8_t *p, size_t n, uint32_t seed);

#endif
