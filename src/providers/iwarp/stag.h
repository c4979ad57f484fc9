/* stag.h - the STag table: index allocation and keys for MR / MW tokens (stag.c).
 *
 * An STag is a 24-bit index << 8 | an 8-bit key (the verbs layout; RFC 5040 leaves it to the RNIC); index 0
 * is the privileged token and never allocated. RFC 5040 §8 and RFC 5042 §5 ask for STags a peer
 * cannot guess, so both parts are random: the key is drawn from the kernel's CSPRNG on every new
 * token, and a new index is drawn at random from the free slots, of which the table keeps at
 * least half. Freed slots are reused before the table grows, so its size follows the peak
 * number of live regions, never the number of registrations made. */
#ifndef IW_STAG_H
#define IW_STAG_H

#include <stddef.h>
#include <stdint.h>

struct iw_obj;

#define IW_STAG_INDEX_BITS  24u          /* STag = index << 8 | key */
#define IW_PRIVILEGED_STAG  0u           /* index 0 is never given to an MR / MW */
#define IW_STAG_MIN_SLOTS   64u          /* the table's first size (index 0 included) */

/* The slots, index -> object, live in segments that never move once allocated, so that
 * iw_stag_find may run without the lock while the table grows: segment 0 holds indices
 * [0, 64), segment k >= 1 holds [64 << (k - 1), 64 << k). */
#define IW_STAG_NSEG        19u          /* 64 << 18 = 2^24 indices */

/* Not locked itself: every call but iw_stag_find is made under the owning device's mem_lock. */
struct iw_stag_table {
    struct iw_obj *_Atomic *_Atomic seg[IW_STAG_NSEG];   /* NULL = not allocated yet */
    uint8_t *key;                        /* per index: the key of its latest token */
    uint32_t *free;                      /* the free indices, unordered (random pick, swap-remove) */
    uint32_t nfree;
    uint32_t cap;                        /* slots, index 0 included */
};

/* Fills buf from the kernel's CSPRNG through a small pool (one syscall per 256 bytes).
 * Returns 0 or -errno (no entropy source: the caller fails the registration rather than hand
 * out a guessable token). Thread-safe; may block only until the kernel's pool is initialised. */
int iw_stag_random(void *buf, size_t n);
/* Gives o a fresh STag with a random free index and a random key. Returns 0, -ENOMEM, or
 * -ENOSPC when all 2^24 - 1 indices are in use. */
int iw_stag_alloc(struct iw_stag_table *t, struct iw_obj *o, uint32_t *stag);
/* Frees the slot of stag if it still maps to o (the slot's key is kept, so its next token
 * differs from every stale one that was just freed). */
void iw_stag_free(struct iw_stag_table *t, uint32_t stag, struct iw_obj *o);
/* A new token for the same slot: a random key other than the current one. Returns the new
 * STag, or 0 when stag names no live slot or no random byte could be had. */
uint32_t iw_stag_rekey(struct iw_stag_table *t, uint32_t stag);
/* The object in stag's slot, whatever its key (the caller compares the full STag), or NULL.
 * Needs no lock: a slot freed meanwhile may still give its last object, which the caller must
 * be able to look at (mem.c keeps objects until no lookup can hold them). */
struct iw_obj *iw_stag_find(const struct iw_stag_table *t, uint32_t stag);
/* Number of live tokens. */
uint32_t iw_stag_live(const struct iw_stag_table *t);
void iw_stag_table_destroy(struct iw_stag_table *t);

#endif
