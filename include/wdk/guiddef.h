/* guiddef.h - GUID pointer types and comparison, as the WDK spells them; GUID itself and
 * DEFINE_GUID come from <ndk/nt.h>. */
#ifndef OPENNDK_WDK_GUIDDEF_H
#define OPENNDK_WDK_GUIDDEF_H

#include <string.h>
#include <ndk/nt.h>

typedef GUID *LPGUID;
typedef const GUID *LPCGUID, *PCGUID, *REFGUID, *REFIID, *REFCLSID;
typedef GUID IID, CLSID;

#define IsEqualGUID(a, b) (!memcmp((a), (b), sizeof(GUID)))
#define InlineIsEqualGUID(a, b) IsEqualGUID(a, b)
#define IsEqualIID(a, b) IsEqualGUID(a, b)

#endif
