/* ntifs.h - the file-system kit header; the kit provides only its wdm.h/ntddk.h subset. */
#ifndef OPENNDK_WDK_NTIFS_H
#define OPENNDK_WDK_NTIFS_H
#ifndef _NTIFS_
#define _NTIFS_
#endif
#include "ntddk.h"
#endif
