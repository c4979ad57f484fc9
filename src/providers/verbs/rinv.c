/* rinv.c - the window keys a peer has invalidated (Send with Invalidate, §2.9). Linux 6.1's rxe
 * leaves such a type-2 window in its FREE state with no MR, and a later LOCAL_INV of the same key
 * passes rxe_check_invalidate_mw (which refuses only INVALID) and dereferences the missing MR in
 * rxe_do_invalidate_mw: a NULL pointer oops in rxe_requester, observed in the guest with
 * conformance wr-send-inv. So every key a receive reports as invalidated is recorded here, and a
 * local invalidate of a recorded key fails in the provider instead of reaching the device. A key
 * leaves the record when its window is bound again or closed; there is one per window at most.
 * Job of rinv_lock (a leaf): the array. */
#include "verbs.h"

#include <stdlib.h>

/* Receive completion (any polling thread): the peer invalidated key. */
void vb_rinv_note(struct vb_device *dev, uint32_t key)
{
    pthread_mutex_lock(&dev->rinv_lock);
    for (size_t i = 0; i < dev->rinv_n; i++)
        if (dev->rinv[i] == key)
            goto out;
    if (dev->rinv_n == dev->rinv_cap) {
        size_t cap = dev->rinv_cap ? 2 * dev->rinv_cap : 16;
        uint32_t *a = realloc(dev->rinv, cap * sizeof *a);
        if (!a) {
            vb_err(dev, "out of memory recording an invalidated key %#x", key);
            goto out;
        }
        dev->rinv = a;
        dev->rinv_cap = cap;
    }
    dev->rinv[dev->rinv_n++] = key;
out:
    pthread_mutex_unlock(&dev->rinv_lock);
}

/* Removes key; true if it was recorded (the peer invalidated it). Any thread; binds and
 * invalidates only, so the lock is not on a data path. */
bool vb_rinv_take(struct vb_device *dev, uint32_t key)
{
    bool found = false;

    pthread_mutex_lock(&dev->rinv_lock);
    for (size_t i = 0; i < dev->rinv_n; i++) {
        if (dev->rinv[i] == key) {
            dev->rinv[i] = dev->rinv[--dev->rinv_n];
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&dev->rinv_lock);
    return found;
}
