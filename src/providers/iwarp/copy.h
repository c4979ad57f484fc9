/* copy.h - the data path's copy of a few bytes (a small message's payload, an SGE list).
 * Included by fpdu.c, tx.c and post.c. */
#ifndef IW_COPY_H
#define IW_COPY_H

#include <stdint.h>
#include <string.h>

/* memcpy(dst, src, n), with n up to 16 done inline: two loads and two stores that may overlap
 * (each fixed-size memcpy below is one move). A small message's payload is copied twice per
 * round trip, and a call to the library's memcpy costs about as much again as the copy plus
 * the registers its caller saves around it. Regions must not overlap. Any context. */
static inline void iw_copy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;

    if (n > 16) {
        memcpy(d, s, n);
    } else if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n) {
        /* 1 to 3 bytes: first, middle and last (the same byte when n is 1). */
        uint8_t a = s[0], b = s[n / 2], c = s[n - 1];
        d[0] = a;
        d[n / 2] = b;
        d[n - 1] = c;
    }
}

#endif /* IW_COPY_H */
