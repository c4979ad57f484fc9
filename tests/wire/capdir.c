/* See capdir.h. */
#include "capdir.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

const char *wcap_dir(void)
{
    const char *env = getenv("NDK_WIRE_CAPTURES");
    return env && *env ? env : WIRE_CAPTURES_DIR;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t wcap_list(const char *dir, char ***names)
{
    size_t n = 0, cap = 0;
    DIR *d = opendir(dir);

    *names = NULL;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".pcap") != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            *names = realloc(*names, cap * sizeof **names);
            CHECK(*names != NULL);
        }
        (*names)[n] = strdup(e->d_name);
        CHECK((*names)[n] != NULL);
        n++;
    }
    closedir(d);
    if (n)
        qsort(*names, n, sizeof **names, cmp_names);
    return n;
}

void wcap_list_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

bool wcap_conn_setup(const struct wpcap_conn *c, struct iw_mpa_frame *req, struct iw_mpa_frame *rep,
                     struct iw_fpdu_rx_cfg *cfg)
{
    size_t len;

    if (iw_mpa_decode(c->dir[0].data, c->dir[0].len, IW_MPA_REQUEST, 0, req, &len, NULL) != IW_MPA_COMPLETE)
        return false;
    if (iw_mpa_decode(c->dir[1].data, c->dir[1].len, IW_MPA_REPLY, 0, rep, &len, NULL) != IW_MPA_COMPLETE)
        return false;
    memset(cfg, 0, sizeof *cfg);
    cfg->crc = rep->crc;
    /* siw keeps every stream rule, so hold the captures to them. Not the PAD contents: siw
     * leaves stale bytes there (perftest's 2-byte Sends carry PAD 00 40), which RFC 5044 lets a
     * receiver ignore. */
    cfg->strict_pad = false;
    cfg->check_seq = true;
    return true;
}
