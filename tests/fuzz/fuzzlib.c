/* The byte log of fuzz.h. */
#include "fuzz.h"

#include <string.h>

void fz_log_put(struct fz_log *l, const void *p, size_t n)
{
    if (l->n + n > l->cap) {
        size_t cap = l->cap ? l->cap : 256;
        while (cap < l->n + n)
            cap *= 2;
        uint8_t *b = realloc(l->b, cap);
        FZ_CHECK(b != NULL, "out of memory for %zu log bytes", cap);
        l->b = b;
        l->cap = cap;
    }
    if (n)
        memcpy(l->b + l->n, p, n);
    l->n += n;
}

void fz_log_u64(struct fz_log *l, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    fz_log_put(l, b, sizeof b);
}

void fz_log_free(struct fz_log *l)
{
    free(l->b);
    l->b = NULL;
    l->n = l->cap = 0;
}

size_t fz_log_diff(const struct fz_log *a, const struct fz_log *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++)
        if (a->b[i] != b->b[i])
            return i;
    return a->n == b->n ? (size_t)-1 : n;
}
