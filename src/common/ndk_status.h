/* ndk_status: the one table that maps internal negative errno results to NTSTATUS at the NDK
 * boundary, and NTSTATUS values to their names. Internal code returns 0 or -errno; only the
 * functions that return to a consumer convert. */
#ifndef NDK_STATUS_H
#define NDK_STATUS_H

#include <ndk/nt.h>
#include <stdbool.h>

/* -EINVAL -> STATUS_INVALID_PARAMETER, -ECONNREFUSED -> STATUS_CONNECTION_REFUSED, ...;
 * 0 -> STATUS_SUCCESS. err may be negative or positive. Unknown codes map to
 * STATUS_UNSUCCESSFUL. Never blocks. */
NTSTATUS ndk_status_from_errno(int err);
/* "STATUS_CONNECTION_REFUSED"; NULL for a code not in the table. ndis.h's 0xC001xxxx codes
 * are named NDIS_STATUS_xxx and their 0xC023xxxx twins STATUS_NDIS_xxx. Never blocks. */
const char *ndk_status_lookup_name(NTSTATUS status);
/* The code of a name ndk_status_lookup_name gives (also an alias such as
 * NDIS_STATUS_NOT_SUPPORTED), or of "0x" and up to 8 hex digits. 0, or -EINVAL. */
int ndk_status_parse_name(const char *text, NTSTATUS *out);
/* True when a and b are the same code, or ndis.h's NDIS_STATUS_xxx and ntstatus.h's
 * STATUS_NDIS_xxx for one condition (docs/status.md: either may reach a consumer). */
bool ndk_status_same(NTSTATUS a, NTSTATUS b);

#endif
