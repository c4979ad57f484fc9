/* iw_copy (copy.h), the data path's small copy: every length from 0 to 40 at every source and
 * destination alignment in a 16-byte window must copy exactly its bytes, touching nothing
 * before or after them (the small lengths are done with overlapping loads and stores, where a
 * wrong offset would write a guard byte or leave a byte uncopied). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "copy.h"
#include "testlib.h"

#define MAXLEN 40
#define WIN    16
#define GUARD  0xA5

int main(void)
{
    uint8_t src[MAXLEN + WIN], dst[MAXLEN + 2 * WIN + 2];
    unsigned cases = 0;

    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)(i * 37 + 11);            /* no two neighbours equal, none GUARD */
    for (size_t n = 0; n <= MAXLEN; n++) {
        for (size_t so = 0; so < WIN; so++) {
            for (size_t d = 1; d <= WIN; d++) {      /* dst + d: at least one guard byte before */
                memset(dst, GUARD, sizeof dst);
                iw_copy(dst + d, src + so, n);
                for (size_t k = 0; k < sizeof dst; k++) {
                    uint8_t want = k >= d && k < d + n ? src[so + k - d] : GUARD;
                    CHECK_MSG(dst[k] == want, "n %zu, src +%zu, dst +%zu: byte %zu is 0x%02x, not 0x%02x", n, so, d,
                              k, dst[k], want);
                }
                cases++;
            }
        }
    }
    printf("copy: %u cases ok\n", cases);
    return 0;
}
