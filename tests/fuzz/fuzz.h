/* Shared pieces of the wire-layer fuzz targets: the libFuzzer entry point, a failure macro that
 * aborts (libFuzzer and the plain corpus driver both report an abort with the input), and a
 * reader that turns the front of a fuzz input into parameters.
 *
 * Every target reads its parameters with fz_* from the front of the input and treats the rest
 * as bytes; a short input reads as zeros, so every input is valid and seeds stay readable. */
#ifndef NDK_FUZZ_H
#define NDK_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond, ...) do {                                                    \
        if (!(cond)) {                                                              \
            fprintf(stderr, "FUZZ CHECK FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
            abort();                                                                \
        }                                                                           \
    } while (0)

struct fz_in {
    const uint8_t *p;
    size_t n;
};

static inline uint8_t fz_u8(struct fz_in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static inline uint16_t fz_u16(struct fz_in *in)
{
    uint16_t hi = fz_u8(in);
    return (uint16_t)(hi << 8 | fz_u8(in));
}

static inline uint32_t fz_u32(struct fz_in *in)
{
    uint32_t hi = fz_u16(in);
    return hi << 16 | fz_u16(in);
}

static inline uint64_t fz_u64(struct fz_in *in)
{
    uint64_t hi = fz_u32(in);
    return hi << 32 | fz_u32(in);
}

/* Copies up to n bytes into out (zero-filling what the input lacks). */
static inline void fz_bytes(struct fz_in *in, void *out, size_t n)
{
    uint8_t *o = out;
    for (size_t i = 0; i < n; i++)
        o[i] = fz_u8(in);
}

/* Growable byte log two runs are compared by. Allocation failure aborts: inputs are bounded. */
struct fz_log {
    uint8_t *b;
    size_t n, cap;
};

void fz_log_put(struct fz_log *l, const void *p, size_t n);
void fz_log_u64(struct fz_log *l, uint64_t v);
void fz_log_free(struct fz_log *l);
/* Offset of the first difference, or (size_t)-1 when equal. */
size_t fz_log_diff(const struct fz_log *a, const struct fz_log *b);

#endif
