/* pcapng.c - a minimal pcapng writer (the PCAP Next Generation format, IETF draft
 * draft-ietf-opsawg-pcapng): one Section Header Block, one Interface Description Block
 * (Ethernet, microsecond timestamps), then one Enhanced Packet Block per frame. Debian has no
 * small library that writes pcapng (libpcap writes the classic format only), and the three
 * block types are all a capture of ours needs.
 *
 * The file is process-wide: every provider instance and connection of the process that names
 * the same path shares one writer (a registry under a module-global lock), so two runtimes in
 * one process never truncate each other's capture. */
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct iw_pcapng {
    struct iw_pcapng *next;           /* the registry (reg_lock) */
    unsigned refs;                    /* reg_lock */
    char path[256];
    pthread_mutex_t lock;             /* job: fp and the order of its blocks (leaf) */
    FILE *fp;
};

/* Job: the list of open files and their reference counts (leaf; never held with f->lock). */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iw_pcapng *reg_head;

#define PCAPNG_SHB 0x0A0D0D0Au
#define PCAPNG_IDB 0x00000001u
#define PCAPNG_EPB 0x00000006u
#define PCAPNG_LINKTYPE_ETHERNET 1u

/* Host byte order throughout: the section's byte-order magic tells readers which. */
static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void put16h(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
}

/* "%p" -> pid; other characters copied. */
static void expand_path(const char *in, char *out, size_t cap)
{
    size_t o = 0;

    for (; *in && o + 1 < cap; in++) {
        if (in[0] == '%' && in[1] == 'p') {
            int n = snprintf(out + o, cap - o, "%ld", (long)getpid());
            o += n > 0 ? (size_t)n : 0;
            in++;
            continue;
        }
        out[o++] = *in;
    }
    out[o < cap ? o : cap - 1] = '\0';
}

static int write_headers(FILE *fp)
{
    static const char app[] = "OpenNDK iwarp provider";
    uint8_t shb[64];                  /* 24 + option shb_userappl (4 + 24) + end (4) + length (4) */
    uint8_t idb[20];
    uint32_t alen = sizeof app - 1, apad = (alen + 3) & ~3u;
    uint32_t shblen = 24 + 4 + apad + 4 + 4;
    size_t o = 0;

    memset(shb, 0, sizeof shb);
    put32(shb, PCAPNG_SHB);
    put32(shb + 4, shblen);
    put32(shb + 8, 0x1A2B3C4Du);
    shb[12] = 1;                      /* major 1, minor 0, little- or big-endian as the host */
    memset(shb + 16, 0xff, 8);        /* section length unknown */
    o = 24;
    put16h(shb + o, 4);               /* option 4: shb_userappl */
    put16h(shb + o + 2, (uint16_t)alen);
    memcpy(shb + o + 4, app, alen);
    o += 4 + apad;
    memset(shb + o, 0, 4);            /* opt_endofopt */
    o += 4;
    put32(shb + o, shblen);
    memset(idb, 0, sizeof idb);
    put32(idb, PCAPNG_IDB);
    put32(idb + 4, sizeof idb);
    put16h(idb + 8, PCAPNG_LINKTYPE_ETHERNET);
    put32(idb + 12, 0);               /* snaplen: no limit */
    put32(idb + 16, sizeof idb);
    return fwrite(shb, 1, shblen, fp) == shblen && fwrite(idb, 1, sizeof idb, fp) == sizeof idb ? 0 : -EIO;
}

struct iw_pcapng *iw_pcapng_open(const char *path)
{
    char full[256];
    struct iw_pcapng *f;

    expand_path(path, full, sizeof full);
    pthread_mutex_lock(&reg_lock);
    for (f = reg_head; f; f = f->next)
        if (!strcmp(f->path, full)) {
            f->refs++;
            pthread_mutex_unlock(&reg_lock);
            return f;
        }
    f = calloc(1, sizeof *f);
    if (f)
        f->fp = fopen(full, "wbe");
    if (!f || !f->fp || write_headers(f->fp) < 0) {
        iw_err("capture: cannot write %s: %s", full, strerror(errno ? errno : EIO));
        if (f && f->fp)
            fclose(f->fp);
        free(f);
        pthread_mutex_unlock(&reg_lock);
        return NULL;
    }
    setvbuf(f->fp, NULL, _IOFBF, 1u << 20);
    snprintf(f->path, sizeof f->path, "%s", full);
    pthread_mutex_init(&f->lock, NULL);
    f->refs = 1;
    f->next = reg_head;
    reg_head = f;
    pthread_mutex_unlock(&reg_lock);
    iw_info("capture: writing every captured connection to %s", full);
    return f;
}

void iw_pcapng_close(struct iw_pcapng *f)
{
    struct iw_pcapng **pp;

    if (!f)
        return;
    pthread_mutex_lock(&reg_lock);
    if (--f->refs) {
        pthread_mutex_unlock(&reg_lock);
        iw_pcapng_flush(f);
        return;
    }
    for (pp = &reg_head; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    pthread_mutex_unlock(&reg_lock);
    fclose(f->fp);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

void iw_pcapng_flush(struct iw_pcapng *f)
{
    pthread_mutex_lock(&f->lock);
    fflush(f->fp);
    pthread_mutex_unlock(&f->lock);
}

void iw_pcapng_frame(struct iw_pcapng *f, uint64_t ts_us, const uint8_t *hdr, size_t hlen, const struct iovec *pl,
                     size_t plcnt, size_t pllen)
{
    uint8_t b[28];
    static const uint8_t pad[4];
    uint32_t caplen = (uint32_t)(hlen + pllen);
    uint32_t padlen = (4 - caplen % 4) % 4;
    uint32_t total = 28 + caplen + padlen + 4;
    size_t left = pllen;

    put32(b, PCAPNG_EPB);
    put32(b + 4, total);
    put32(b + 8, 0);                  /* interface 0 */
    put32(b + 12, (uint32_t)(ts_us >> 32));
    put32(b + 16, (uint32_t)ts_us);
    put32(b + 20, caplen);
    put32(b + 24, caplen);
    pthread_mutex_lock(&f->lock);
    fwrite(b, 1, sizeof b, f->fp);
    fwrite(hdr, 1, hlen, f->fp);
    for (size_t i = 0; i < plcnt && left; i++) {
        size_t n = pl[i].iov_len < left ? pl[i].iov_len : left;
        fwrite(pl[i].iov_base, 1, n, f->fp);
        left -= n;
    }
    fwrite(pad, 1, padlen, f->fp);
    put32(b, total);
    fwrite(b, 1, 4, f->fp);
    pthread_mutex_unlock(&f->lock);
}
