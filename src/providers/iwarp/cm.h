/* cm.h - the connection manager's engine (cm.c) as the connector object (connector.c) uses it:
 * the state transition, request bookkeeping, the CM deadline, the MPA frames and the progress
 * handlers. Everything here is called with dev->lock (the CM lock) held unless it says
 * otherwise. Talks to: iwarp.h, fpdu.h; included by cm.c and connector.c only. */
#ifndef IWARP_CM_H
#define IWARP_CM_H

#include "iwarp.h"
#include "fpdu.h"

/* The one transition function of the connector machine; undefined transitions are logged and
 * rejected (-EINVAL). */
int iw_cm_set_state(struct iw_connector *c, enum iw_cm_state to);
/* Stores a pending request completion; takes the reference that keeps c alive until it ran. */
void iw_cm_req_store(struct iw_connector *c, NDK_FN_REQUEST_COMPLETION *fn, void **ctx, NDK_FN_REQUEST_COMPLETION cb,
                     void *cbctx);
/* Records actions (IW_CM_ACT_*) and queues the connector's work to the progress thread. */
void iw_cm_queue_locked(struct iw_connector *c, unsigned act);
/* Sets the CM deadline ms from now (the armed timer holds a reference on c). */
void iw_cm_timer_set_locked(struct iw_connector *c, uint32_t ms);
/* The connector's timer callback (progress thread, no lock held). */
void iw_cm_timer_fired(struct iw_timer *t, uint64_t now);
/* MPA Request / Reply (accept or reject) / a zero-length RTR FPDU, appended to c->txbuf. */
int iw_cm_build_request(struct iw_connector *c);
int iw_cm_build_reply(struct iw_connector *c, bool reject, const void *pd, uint16_t pdlen);
int iw_cm_build_fpdu(struct iw_connector *c, const struct iw_fpdu_hdr *h);
/* The connector's socket handler and work item (progress thread, no lock held). */
void iw_cm_poll(struct iw_pollable *p, uint32_t events);
void iw_cm_work(struct iw_work *w);

#endif
