/* Test helper: decodes one direction of an iWARP byte stream (optional MPA frame, then FPDUs)
 * through iw_mpa_parser and iw_fpdu_rx, and records what came out in a log that two runs can
 * be compared by. The decoder itself is plain data, so a test may copy it to snapshot a run.
 * Every step also checks the deframer's contract (consumption, payload pointers and offsets)
 * and fails the test on a violation. */
#ifndef WIRE_TEST_STREAMDEC_H
#define WIRE_TEST_STREAMDEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fpdu.h"
#include "mpa.h"

struct wsd_fpdu {
    struct iw_fpdu_hdr hdr;
    uint64_t offset;            /* stream offset of the FPDU's first byte */
    uint32_t payload_crc;       /* CRC-32C of the payload as delivered in PAYLOAD events */
    uint32_t payload_got;
    uint32_t chunks;            /* PAYLOAD events (not compared: depends on the split) */
    bool     crc_checked;
    uint32_t crc_wire;
    uint32_t crc_calc;
    bool     pad_nonzero;
};

struct wsd_log {
    enum iw_mpa_status mpa_status;
    enum iw_mpa_error  mpa_err;
    struct iw_mpa_frame mpa;    /* ulp_pd points into mpa_pd */
    uint8_t  mpa_pd[IW_MPA_PD_MAX_RFC];
    uint64_t mpa_len;
    struct wsd_fpdu *fpdus;
    size_t   n, cap;
    bool     error;
    struct iw_fpdu_rx_error err;
    uint64_t err_at;            /* stream bytes consumed when the error was reported */
    uint64_t consumed;
    uint64_t frames;            /* FRAME events (not compared: depends on the split) */
    uint64_t ended;             /* of them, those that ended their segment (IW_FPDU_RX_END) */
    /* filled by wsd_finish() */
    enum iw_fpdu_rx_state end_state;
    uint16_t end_hgot;
    uint64_t end_fpdus;
};

struct wsd {
    bool     with_mpa;
    bool     in_mpa;
    bool     dead;
    unsigned flags;             /* iw_fpdu_rx_step_ex() flags: 0 or IW_FPDU_RX_WHOLE (set after wsd_init) */
    uint64_t off;
    uint64_t fpdu_base;         /* stream offset where the deframer took over */
    struct iw_mpa_parser mpa;
    struct iw_fpdu_rx rx;
    struct wsd_fpdu cur;
};

/* kind 0: no MPA frame, the stream starts with an FPDU. */
void wsd_init(struct wsd *d, int kind, uint16_t max_pd, const struct iw_fpdu_rx_cfg *cfg);
void wsd_feed(struct wsd *d, struct wsd_log *log, const uint8_t *buf, size_t len);
void wsd_finish(const struct wsd *d, struct wsd_log *log);

void wsd_log_init(struct wsd_log *l);
void wsd_log_free(struct wsd_log *l);
/* Copies src into an initialised dst (deep). */
void wsd_log_copy(struct wsd_log *dst, const struct wsd_log *src);
/* Drops FPDU records at index >= n (to rewind a log to a snapshot). */
void wsd_log_truncate(struct wsd_log *l, size_t n);

/* Field-by-field comparisons; return true when equal, else describe the first difference. */
bool wsd_hdr_equal(const struct iw_fpdu_hdr *a, const struct iw_fpdu_hdr *b, char *why, size_t n);
bool wsd_fpdu_equal(const struct wsd_fpdu *a, const struct wsd_fpdu *b, char *why, size_t n);
bool wsd_log_equal(const struct wsd_log *a, const struct wsd_log *b, char *why, size_t n);

/* Decodes a whole buffer in one call and finishes the log. */
void wsd_decode_all(int kind, uint16_t max_pd, const struct iw_fpdu_rx_cfg *cfg, const uint8_t *buf,
                    size_t len, struct wsd_log *log);

#endif
