/*
 * ndisNDK.h - the WDK's spelling of <ndisndk.h>, so that driver sources written for Windows
 * (which does not care about case) find the header on Linux unchanged.
 */
#ifndef NDISNDK_WDK_SPELLING_H
#define NDISNDK_WDK_SPELLING_H

#include "ndisndk.h"

#endif /* NDISNDK_WDK_SPELLING_H */
