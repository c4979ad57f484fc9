/* ndk_prov_oid.c - the provider-independent parts of the NDK OIDs (§6.5-§6.8). */
#include "ndk_prov_oid.h"

#include <string.h>

void *ndk_prov_oid_begin(NDK_OID_REQUEST *req, size_t need, UCHAR revision)
{
    NDIS_OBJECT_HEADER *h = req->InformationBuffer;

    if (!h || req->InformationBufferLength < need) {
        req->BytesNeeded = (ULONG)need;
        return NULL;
    }
    memset(h, 0, need);
    h->Type = NDIS_OBJECT_TYPE_DEFAULT;
    h->Revision = revision;
    h->Size = (USHORT)(need > MAXUSHORT ? MAXUSHORT : need);
    return h;
}

/* A statistics buffer is sized by sizeof and stamped with the revision-1 size: they are one. */
_Static_assert(sizeof(NDIS_NDK_STATISTICS_INFO) == NDIS_SIZEOF_NDK_STATISTICS_INFO_REVISION_1, "statistics size");

NDIS_STATUS ndk_prov_oid_set_state(NDK_OID_REQUEST *req, atomic_bool *enabled, int *event)
{
    bool on;

    *event = 0;
    if (!req->IsSet)
        return NDIS_STATUS_NOT_SUPPORTED;
    if (req->InformationBufferLength < sizeof(BOOLEAN) || !req->InformationBuffer) {
        req->BytesNeeded = sizeof(BOOLEAN);
        return NDIS_STATUS_INVALID_LENGTH;
    }
    on = *(BOOLEAN *)req->InformationBuffer != 0;
    if (atomic_exchange(enabled, on) != on)
        *event = on ? NetEventNDKEnable : NetEventNDKDisable;
    req->BytesRead = sizeof(BOOLEAN);
    return NDIS_STATUS_SUCCESS;
}
