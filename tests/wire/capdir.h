/* Test helper: where the siw capture fixtures live, and how to set up decoding of one
 * captured connection (the Reply decides CRC for both directions, RFC 5044 §7.1). */
#ifndef WIRE_TEST_CAPDIR_H
#define WIRE_TEST_CAPDIR_H

#include <stdbool.h>
#include <stddef.h>

#include "fpdu.h"
#include "mpa.h"
#include "pcap.h"

/* The committed fixtures, tests/wire/captures of the source tree this was built from (see its
 * README.md), or $NDK_WIRE_CAPTURES when set (the corrupted-copy test points it elsewhere).
 * Never NULL; a folder without captures is the caller's failure, not a reason to skip. */
const char *wcap_dir(void);

/* Lists the .pcap files of dir, sorted; returns the count (names are malloc'd). */
size_t wcap_list(const char *dir, char ***names);
void wcap_list_free(char **names, size_t n);

/* Decodes the MPA Request (client->server) and Reply of c, one-shot. Returns true when both
 * are complete; fills the frames and the deframer configuration both directions use. */
bool wcap_conn_setup(const struct wpcap_conn *c, struct iw_mpa_frame *req, struct iw_mpa_frame *rep,
                     struct iw_fpdu_rx_cfg *cfg);

#endif
