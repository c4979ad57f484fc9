/* ndk_prov_pd: the protection domain's NDK face (§2.3 NdkCreatePd, §2.5): the create's checks and
 * status, the close, the privileged token. The provider makes and owns the PD itself (the kind's
 * pd_new); a PD has no state of its own here beyond the object base. */
#ifndef NDK_PROV_PD_H
#define NDK_PROV_PD_H

#include <ndkpi.h>

#include "ndk_prov_obj.h"

/* The privileged memory-region token of every PD (§2.5): 0, a value no MR or MW token takes in
 * either provider (iwarp never hands out STag index 0; no verbs device we run on has lkey 0). */
#define NDK_PROV_PD_PRIVILEGED_TOKEN 0u

/* The public handle every provider object starts with (§1.5: { Header; Dispatch }); the object's
 * struct ndk_prov_obj follows it at once in a PD (its provider asserts the layout). */
struct ndk_prov_handle {
    NDK_OBJECT_HEADER Header;
    const void *Dispatch;
};

/* NdkCreatePd: always inline (§0.4; cb and ctx unused). Checks out, asks the instance's kind to
 * make the PD (pd_new: 0 or -errno) and maps the result through the one table. Any thread, no
 * lock held. */
NTSTATUS ndk_prov_pd_create(NDK_ADAPTER *a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_PD **out);
/* NdkClosePd: the object base's close (pends while a child lives, §5.1). Consumer's thread or a
 * callback, no provider lock held. */
NTSTATUS ndk_prov_pd_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx);
/* NdkGetPrivilegedMemoryRegionToken. Any thread. */
VOID ndk_prov_pd_privileged_token(NDK_PD *pd, UINT32 *token);

#endif
