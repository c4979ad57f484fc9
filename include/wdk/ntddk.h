/* ntddk.h - the WDK's superset of wdm.h for non-WDM drivers; the kit keeps everything an NDK
 * consumer uses in wdm.h, so this header is wdm.h under the name drivers include. */
#ifndef OPENNDK_WDK_NTDDK_H
#define OPENNDK_WDK_NTDDK_H
#ifndef _NTDDK_
#define _NTDDK_
#endif
#include "wdm.h"
#endif
