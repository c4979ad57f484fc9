/* ndk_prov_oid: the parts of the NDK OIDs (§6.5-§6.8) that do not depend on what a provider
 * counts or lists: the size check and NDIS header of a query's buffer, and OID_NDK_SET_STATE. */
#ifndef NDK_PROV_OID_H
#define NDK_PROV_OID_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <ndisndk.h>
#include <ndk/provider.h>

/* A query's buffer of need bytes: when it is short (or absent) sets BytesNeeded and returns NULL
 * (the caller answers NDIS_STATUS_BUFFER_TOO_SHORT); else zeroes it, writes the NDIS header
 * (Type DEFAULT, revision, Size = need up to MAXUSHORT) and returns it. Any thread, any lock. */
void *ndk_prov_oid_begin(NDK_OID_REQUEST *req, size_t need, UCHAR revision);

/* OID_NDK_SET_STATE (§6.5): sets *enabled from the request. *event is the NetEvent to raise when
 * that flipped it (NetEventNDKEnable / NetEventNDKDisable), else 0; the caller raises it from its
 * own thread, never inside the OID handler. Never pends. Returns NDIS_STATUS_SUCCESS,
 * _NOT_SUPPORTED (a query) or _INVALID_LENGTH. The OID handler's thread, no lock held. */
NDIS_STATUS ndk_prov_oid_set_state(NDK_OID_REQUEST *req, atomic_bool *enabled, int *event);

#endif
