/* ndk_status: the one table that maps internal negative errno results to NTSTATUS at the NDK
 * boundary, and NTSTATUS values to their names. Internal code returns 0 or -errno; only the
 * functions that return to a consumer convert. */
#ifndef NDK_STATUS_H
#define NDK_STATUS_H

#include <ndk/nt.h>

/* -EINVAL -> STATUS_INVALID_PARAMETER, -ECONNREFUSED -> STATUS_CONNECTION_REFUSED, ...;
 * 0 -> STATUS_SUCCESS. err may be negative or positive. Unknown codes map to
 * STATUS_UNSUCCESSFUL. Never blocks. */
NTSTATUS ndk_status_from_errno(int err);
/* "STATUS_CONNECTION_REFUSED"; NULL for a code not in the table. */
const char *ndk_status_lookup_name(NTSTATUS status);

#endif
