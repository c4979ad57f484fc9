/* Test helper: where the siw reference captures live, and how to set up decoding of one
 * captured connection (the Reply decides CRC for both directions, RFC 5044 §7.1). */
#ifndef WIRE_TEST_CAPDIR_H
#define WIRE_TEST_CAPDIR_H

#include <stdbool.h>
#include <stddef.h>

#include "fpdu.h"
#include "mpa.h"
#include "pcap.h"

/* $NDK_TEST_SOURCE_DIR/../shared/interop/pcaps, else /work/shared/interop/pcaps; NULL when
 * neither holds a .pcap file. The result is static storage. */
const char *wcap_dir(void);

/* Lists the .pcap files of dir, sorted; returns the count (names are malloc'd). */
size_t wcap_list(const char *dir, char ***names);
void wcap_list_free(char **names, size_t n);

/* Decodes the MPA Request (client->server) and Reply of c, one-shot. Returns true when both
 * are complete; fills the frames and the deframer configuration both directions use. */
bool wcap_conn_setup(const struct wpcap_conn *c, struct iw_mpa_frame *req, struct iw_mpa_frame *rep,
                     struct iw_fpdu_rx_cfg *cfg);

#endif
