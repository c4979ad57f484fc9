/*
 * lock.h - the provider's sleeping lock (lock.c): a word that is FREE, HELD, or HELD with
 * sleepers possibly waiting (WAITED), as in Drepper's "Futexes Are Tricky", mutex 3.
 *
 * Why not pthread_mutex_t: glibc's lock and unlock are out-of-line calls that look at the
 * mutex's kind (recursive, error-checking, robust, priority-inheriting, elided) on every call,
 * some 55 instructions per pair, where a default mutex needs a compare-exchange to take it and
 * an exchange to give it back, the same two atomics. The data path takes its locks once or
 * twice per message (docs/performance.md), so it uses this one: the same semantics as a
 * default mutex (no recursion, no ownership check, waiters sleep in the kernel, no spinning),
 * the uncontended take and give inline, and the sleep and the wake out of line. Not a
 * condition variable's partner: nothing waits on a condition under it.
 */
#ifndef IW_LOCK_H
#define IW_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>

enum iw_lock_word { IW_LOCK_FREE, IW_LOCK_HELD, IW_LOCK_WAITED };

struct iw_lock {
    atomic_uint w;                    /* enum iw_lock_word */
};

static inline void iw_lock_init(struct iw_lock *l)
{
    atomic_init(&l->w, IW_LOCK_FREE);
}

/* Takes it if it is free: one compare-exchange, whose acquire pairs with the last holder's
 * release. Any thread, never waits. */
static inline bool iw_lock_try(struct iw_lock *l)
{
    unsigned f = IW_LOCK_FREE;

    return atomic_compare_exchange_strong_explicit(&l->w, &f, IW_LOCK_HELD, memory_order_acquire,
                                                   memory_order_relaxed);
}

/* The contended halves (lock.c), kept out of line and out of the way (cold): inlined, they
 * made their callers save registers on the uncontended path. */
__attribute__((noinline, cold)) void iw_lock_sleep(struct iw_lock *l);
__attribute__((noinline, cold)) void iw_lock_wake(struct iw_lock *l);

/* Takes it, sleeping while another thread holds it. May block: the caller holds nothing the
 * holder may wait for (the lock order, iwarp.h). */
static inline void iw_lock_take(struct iw_lock *l)
{
    if (!iw_lock_try(l))
        iw_lock_sleep(l);
}

/* Gives it back, waking one sleeper if any may be there. The word is not read after the
 * exchange (the wake only names its address), so the next holder may free it at once. */
static inline void iw_lock_give(struct iw_lock *l)
{
    if (atomic_exchange_explicit(&l->w, IW_LOCK_FREE, memory_order_release) == IW_LOCK_WAITED)
        iw_lock_wake(l);
}

#endif /* IW_LOCK_H */
