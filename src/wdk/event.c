/*
 * event.c - KEVENT ("KeInitializeEvent function (wdm.h)", "KeSetEvent function (wdm.h)" ...).
 * A notification event releases every waiter and stays signaled until cleared; a
 * synchronization event releases one waiter and clears itself (dispatcher.c applies that side
 * effect). Set/reset return the previous state. KeSetEvent's Wait argument promises an
 * immediate wait; the kit gives no atomicity between the two either way.
 */
#include "wdk_internal.h"

VOID KeInitializeEvent(PRKEVENT Event, EVENT_TYPE Type, BOOLEAN State)
{
    memset(Event, 0, sizeof *Event);
    Event->Header.Type = Type == SynchronizationEvent ? WDK_OBJ_EVENT_SYNCHRONIZATION : WDK_OBJ_EVENT_NOTIFICATION;
    Event->Header.Size = sizeof(KEVENT) / sizeof(LONG);
    InitializeListHead(&Event->Header.WaitListHead);
    wdk_signal_set(&Event->Header, State ? 1 : 0);
}

LONG KeSetEvent(PRKEVENT Event, KPRIORITY Increment, BOOLEAN Wait)
{
    if (Wait && wdk_irql_get() > APC_LEVEL)
        wdk_verify_report("SET_EVENT_WAIT_IRQL", WDK_CALLER, "KeSetEvent(Wait=TRUE) at IRQL %u", wdk_irql_get());
    pthread_mutex_lock(&wdk_ke_lock);
    LONG old = wdk_signal_get(&Event->Header);
    wdk_signal_set(&Event->Header, 1);
    pthread_cond_broadcast(&wdk_ke_cond);
    pthread_mutex_unlock(&wdk_ke_lock);
    return old;
}

LONG KeResetEvent(PRKEVENT Event)
{
    pthread_mutex_lock(&wdk_ke_lock);
    LONG old = wdk_signal_get(&Event->Header);
    wdk_signal_set(&Event->Header, 0);
    pthread_mutex_unlock(&wdk_ke_lock);
    return old;
}

VOID KeClearEvent(PRKEVENT Event)
{
    pthread_mutex_lock(&wdk_ke_lock);
    wdk_signal_set(&Event->Header, 0);
    pthread_mutex_unlock(&wdk_ke_lock);
}

/* A racy snapshot by design. */
LONG KeReadStateEvent(PRKEVENT Event)
{
    return wdk_signal_get(&Event->Header);
}
