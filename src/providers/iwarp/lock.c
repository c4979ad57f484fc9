/*
 * lock.c - the contended halves of the provider's sleeping lock (lock.h).
 */
#include "lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Marks the word WAITED and sleeps while another thread holds it; returns holding it, as
 * WAITED, so that its give wakes the next sleeper (one that took it as HELD could leave others
 * asleep). A wake that finds it held again, or a futex call that returns at once (the word
 * changed, a signal), only loops. Blocks; called by iw_lock_take only. */
void iw_lock_sleep(struct iw_lock *l)
{
    while (atomic_exchange_explicit(&l->w, IW_LOCK_WAITED, memory_order_acquire) != IW_LOCK_FREE)
        syscall(SYS_futex, &l->w, FUTEX_WAIT_PRIVATE, IW_LOCK_WAITED, NULL, NULL, 0);
}

/* Any thread, just after it gave the word back; never blocks. */
void iw_lock_wake(struct iw_lock *l)
{
    syscall(SYS_futex, &l->w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
