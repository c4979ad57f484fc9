/* win.c - type-2 windows and the QP they were last bound through. On rxe a bound type-2 window
 * holds a reference to that QP until it is invalidated or deallocated, and ibv_destroy_qp waits
 * in the kernel for the QP's last reference (rxe_pool.c __rxe_cleanup: 12,500 jiffies, 50 s, in
 * Debian 12's 6.1, then a WARN and the destroy goes on). NDK lets a consumer close a QP while a
 * window bound through it, or a fast-register MR whose remote token is such a window (mr.c),
 * stays open (§1.7: their antecedents are the MR and PD, not the QP), and nothing can be posted
 * on the QP by then to invalidate them. So before the QP goes, every window whose last bind was
 * posted on it is replaced by a fresh, unbound one: its old key dies with it, as it would with
 * the QP on hardware that checks the window's QP (IB type-2 windows are usable on their QP only).
 *
 * Job of dev->win_lock: the list, each entry's qp, and the owner's window pointer against a
 * swap: a bind holds it from reading the pointer until the work request is posted, and the swap
 * runs under it. Order: win_lock, then the owner's lock (mr->lock, mw->lock), then the QP's. */
#include "verbs.h"

#include <errno.h>
#include <string.h>

/* Owner create, no lock held. */
void vb_win_add(struct vb_device *dev, struct vb_win *w, void (*renew)(struct vb_win *w))
{
    w->qp = NULL;
    w->renew = renew;
    pthread_mutex_lock(&dev->win_lock);
    ndk_list_add_tail(&dev->wins, &w->link);
    pthread_mutex_unlock(&dev->win_lock);
}

/* Owner destroy (progress thread), before the window is deallocated. */
void vb_win_del(struct vb_device *dev, struct vb_win *w)
{
    if (!w->renew)
        return;
    pthread_mutex_lock(&dev->win_lock);
    ndk_list_del(&w->link);
    pthread_mutex_unlock(&dev->win_lock);
    w->renew = NULL;
}

/* QP destroy (progress thread, nothing can post on qp any more), before ibv_destroy_qp: every
 * window last bound through qp is replaced (the owner's renew, win_lock held). */
void vb_win_release_qp(struct vb_qp *qp)
{
    struct vb_device *dev = qp->obj.dev;
    struct ndk_list *pos;
    int n = 0;

    pthread_mutex_lock(&dev->win_lock);
    ndk_list_for_each(pos, &dev->wins) {
        struct vb_win *w = ndk_list_entry(pos, struct vb_win, link);
        if (w->qp == qp) {
            w->qp = NULL;
            w->renew(w);
            n++;
        }
    }
    pthread_mutex_unlock(&dev->win_lock);
    if (n)
        vb_dbg(dev, "QP %u: %d window(s) bound through it replaced before its destroy", qp->qpn, n);
}

/* An owner's renew: deallocates *mw (which releases its QP) and puts a new unbound window of pd
 * in its place; NULL when the device refuses one (logged). Returns the old window's key. */
uint32_t vb_win_swap(struct vb_device *dev, struct ibv_pd *pd, struct ibv_mw **mw)
{
    struct ibv_mw *n = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
    uint32_t old = (*mw)->rkey;

    if (!n)
        vb_err(dev, "ibv_alloc_mw (a window to replace one bound through a closed QP): %s", strerror(errno));
    if (ibv_dealloc_mw(*mw))
        vb_err(dev, "ibv_dealloc_mw (a window bound through a closed QP): %s", strerror(errno));
    *mw = n;
    return old;
}
