/* wdk_timer.h - what timers need from the DPC queue (dpc.c); both under wdk_ke_lock. */
#ifndef WDK_TIMER_H
#define WDK_TIMER_H

#include "wdk_internal.h"

/* Queues Dpc unless already queued (FALSE then). wdk_ke_lock held. */
BOOLEAN wdk_dpc_insert_locked(PKDPC Dpc, PVOID SystemArgument1, PVOID SystemArgument2);
/* Removes a queued Dpc; FALSE if it was not queued. wdk_ke_lock held. */
BOOLEAN wdk_dpc_remove_locked(PKDPC Dpc);

#endif
