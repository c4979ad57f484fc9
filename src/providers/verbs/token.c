/* token.c - provider-minted local tokens (map D4). User-space verbs has no FRWR, so a
 * fast-register MR gets a new registration per NdkFastRegister (mr.c); NDK wants its tokens valid
 * and stable from NdkInitializeFastRegisterMr on (§2.6). The MR therefore owns a placeholder
 * registration of one provider page with no rights: its keys are real device keys (so they never
 * collide with an ordinary MR's) and serve as the MR's tokens. An SGE carrying the placeholder
 * lkey is rewritten here to the current registration's lkey (and, for a label base the device
 * cannot take, to the real address); with no registration it stays on the placeholder, which
 * the device refuses like any invalid token. The remote token is the current registration's
 * rkey, since a peer's request cannot be rewritten. Talks to mr.c and post.c. */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define VB_PH_BYTES 64u

static unsigned vb_tok_bucket(uint32_t lkey)
{
    return (lkey ^ (lkey >> 8) ^ (lkey >> 16)) % 64u;
}

/* Device create: the placeholder page and the buckets. Returns 0 or -errno. */
int vb_token_init(struct vb_device *dev)
{
    pthread_mutex_init(&dev->tok_lock, NULL);
    for (size_t b = 0; b < sizeof dev->tok / sizeof dev->tok[0]; b++)
        ndk_list_init(&dev->tok[b]);
    atomic_init(&dev->ntok, 0);
    if (posix_memalign(&dev->ph_page, PAGE_SIZE, PAGE_SIZE))
        return -ENOMEM;
    memset(dev->ph_page, 0, PAGE_SIZE);
    return 0;
}

void vb_token_fini(struct vb_device *dev)
{
    free(dev->ph_page);
    pthread_mutex_destroy(&dev->tok_lock);
}

/* A registration of the placeholder page in pd without any right: its keys name nothing a
 * request could use. May block (a registration). NULL with errno on failure. */
struct ibv_mr *vb_token_placeholder(struct vb_device *dev, struct ibv_pd *pd)
{
    return ibv_reg_mr(pd, dev->ph_page, VB_PH_BYTES, 0);
}

/* mr->ph is set; publishes its lkey as a minted token translating to itself. */
void vb_token_add(struct vb_mr *mr)
{
    struct vb_device *dev = mr->obj.dev;

    pthread_mutex_lock(&dev->tok_lock);
    mr->tok_lkey = mr->ph->lkey;
    mr->tok_delta = 0;
    ndk_list_add_tail(&dev->tok[vb_tok_bucket(mr->ph->lkey)], &mr->tok_link);
    atomic_fetch_add(&dev->ntok, 1);
    pthread_mutex_unlock(&dev->tok_lock);
}

void vb_token_del(struct vb_mr *mr)
{
    struct vb_device *dev = mr->obj.dev;

    if (!mr->ph)
        return;
    pthread_mutex_lock(&dev->tok_lock);
    ndk_list_del(&mr->tok_link);
    atomic_fetch_sub(&dev->ntok, 1);
    pthread_mutex_unlock(&dev->tok_lock);
}

/* A fast register or invalidate changed what the minted token stands for. */
void vb_token_set(struct vb_mr *mr, uint32_t lkey, int64_t delta)
{
    struct vb_device *dev = mr->obj.dev;

    pthread_mutex_lock(&dev->tok_lock);
    mr->tok_lkey = lkey;
    mr->tok_delta = delta;
    pthread_mutex_unlock(&dev->tok_lock);
}

/* Posting thread, any lock of the QP/SRQ held (tok_lock is a leaf). */
bool vb_token_translate(struct vb_device *dev, struct ibv_sge *sge)
{
    struct ndk_list *pos;
    bool found = false;

    if (!atomic_load_explicit(&dev->ntok, memory_order_relaxed))
        return false;
    pthread_mutex_lock(&dev->tok_lock);
    ndk_list_for_each(pos, &dev->tok[vb_tok_bucket(sge->lkey)]) {
        struct vb_mr *mr = ndk_list_entry(pos, struct vb_mr, tok_link);
        if (mr->ph->lkey == sge->lkey) {
            sge->lkey = mr->tok_lkey;
            sge->addr = (uint64_t)((int64_t)sge->addr + mr->tok_delta);
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&dev->tok_lock);
    return found;
}
