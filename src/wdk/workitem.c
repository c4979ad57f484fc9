/*
 * workitem.c - work items ("IoQueueWorkItem function (wdm.h)", "ExQueueWorkItem function
 * (wdm.h)", "System Worker Threads"): a pool of kit worker threads runs each queued item at
 * PASSIVE_LEVEL. An item leaves the queue before its routine runs, so the routine may queue it
 * again or free it. The pool grows when every worker is busy (up to 64 threads), so work items
 * that wait on each other do not starve. Queueing an item that is already queued, freeing a
 * queued item, or returning from a routine at a raised IRQL is reported.
 */
#include <stdlib.h>
#include "wdk_internal.h"

#undef IoAllocateWorkItem

#define MAX_WORKERS 64

struct _IO_WORKITEM {
    LIST_ENTRY link;
    PVOID io_object;
    PIO_WORKITEM_ROUTINE routine;
    PIO_WORKITEM_ROUTINE_EX routine_ex;
    PVOID context;
    int queued;                        /* under wdk_ke_lock */
    const char *site;
};

/* All under wdk_ke_lock; work_cond wakes idle workers. */
static LIST_ENTRY io_queue = { &io_queue, &io_queue };
static LIST_ENTRY ex_queue = { &ex_queue, &ex_queue };
static unsigned queued, running, idle, workers;
static pthread_cond_t work_cond = PTHREAD_COND_INITIALIZER;
static unsigned activity;

static void worker(void *arg)
{
    pthread_mutex_lock(&wdk_ke_lock);
    for (;;) {
        while (IsListEmpty(&io_queue) && IsListEmpty(&ex_queue)) {
            idle++;
            pthread_cond_wait(&work_cond, &wdk_ke_lock);
            idle--;
        }
        PIO_WORKITEM io = NULL;
        PWORK_QUEUE_ITEM ex = NULL;
        if (!IsListEmpty(&io_queue)) {
            io = CONTAINING_RECORD(RemoveHeadList(&io_queue), struct _IO_WORKITEM, link);
            io->queued = 0;
        } else {
            ex = CONTAINING_RECORD(RemoveHeadList(&ex_queue), WORK_QUEUE_ITEM, List);
            ex->List.Flink = NULL;
        }
        queued--;
        running++;
        PIO_WORKITEM_ROUTINE r = io ? io->routine : NULL;
        PIO_WORKITEM_ROUTINE_EX rx = io ? io->routine_ex : NULL;
        PVOID obj = io ? io->io_object : NULL, ctx = io ? io->context : NULL;
        const char *site = io ? io->site : "ExQueueWorkItem";
        pthread_mutex_unlock(&wdk_ke_lock);

        wdk_irql_set(PASSIVE_LEVEL);
        if (rx)
            rx(obj, ctx, io);
        else if (r)
            r(obj, ctx);
        else
            ex->WorkerRoutine(ex->Parameter);
        if (wdk_irql_get() != PASSIVE_LEVEL) {
            wdk_verify_report("WORKITEM_IRQL", site, "work item routine returned at IRQL %u", wdk_irql_get());
            wdk_irql_set(PASSIVE_LEVEL);
        }

        pthread_mutex_lock(&wdk_ke_lock);
        running--;
        pthread_cond_broadcast(&wdk_ke_cond);
    }
}

/* Lock held: make sure a worker will pick the new item up. */
static void kick_locked(void)
{
    if (idle == 0 && workers < MAX_WORKERS && wdk_kit_thread_start(worker, NULL, PASSIVE_LEVEL) == 0)
        workers++;
    pthread_cond_signal(&work_cond);
}

PIO_WORKITEM wdk_IoAllocateWorkItem_at(PVOID IoObject, const char *site)
{
    PIO_WORKITEM w = wdk_mem_alloc(sizeof *w, 1, 0, WDK_MEM_WORKITEM, "IoAllocateWorkItem", site);
    if (w) {
        w->io_object = IoObject;
        w->site = site;
    }
    return w;
}

PIO_WORKITEM IoAllocateWorkItem(PDEVICE_OBJECT DeviceObject)
{
    return wdk_IoAllocateWorkItem_at(DeviceObject, WDK_CALLER);
}

static void unqueue_for_free(PIO_WORKITEM w, const char *api, const char *site)
{
    pthread_mutex_lock(&wdk_ke_lock);
    if (w->queued) {
        RemoveEntryList(&w->link);
        w->queued = 0;
        queued--;
        pthread_mutex_unlock(&wdk_ke_lock);
        wdk_verify_report("WORKITEM_FREED_WHILE_QUEUED", site, "%s of a work item that is still queued", api);
        return;
    }
    pthread_mutex_unlock(&wdk_ke_lock);
}

VOID IoFreeWorkItem(PIO_WORKITEM IoWorkItem)
{
    const char *site = WDK_CALLER;
    unqueue_for_free(IoWorkItem, "IoFreeWorkItem", site);
    if (wdk_mem_free(IoWorkItem, WDK_MEM_WORKITEM, NULL))
        wdk_verify_report("WORKITEM_FREE_INVALID", site, "IoFreeWorkItem of %p, not from IoAllocateWorkItem",
                          (void *)IoWorkItem);
}

ULONG IoSizeofWorkItem(VOID)
{
    return (ULONG)sizeof(struct _IO_WORKITEM);
}

VOID IoInitializeWorkItem(PVOID IoObject, PIO_WORKITEM IoWorkItem)
{
    memset(IoWorkItem, 0, sizeof *IoWorkItem);
    IoWorkItem->io_object = IoObject;
    IoWorkItem->site = WDK_CALLER;
}

VOID IoUninitializeWorkItem(PIO_WORKITEM IoWorkItem)
{
    unqueue_for_free(IoWorkItem, "IoUninitializeWorkItem", WDK_CALLER);
}

static BOOLEAN queue_io(PIO_WORKITEM w, PIO_WORKITEM_ROUTINE r, PIO_WORKITEM_ROUTINE_EX rx, PVOID ctx,
                        const char *site, int report)
{
    if (wdk_irql_get() > DISPATCH_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", site, "IoQueueWorkItem at IRQL %u", wdk_irql_get());
    pthread_mutex_lock(&wdk_ke_lock);
    if (w->queued) {
        pthread_mutex_unlock(&wdk_ke_lock);
        if (report)
            wdk_verify_report("WORKITEM_ALREADY_QUEUED", site, "IoQueueWorkItem of a work item that is already queued");
        return FALSE;
    }
    w->routine = r;
    w->routine_ex = rx;
    w->context = ctx;
    w->queued = 1;
    InsertTailList(&io_queue, &w->link);
    queued++;
    kick_locked();
    pthread_mutex_unlock(&wdk_ke_lock);
    return TRUE;
}

VOID IoQueueWorkItem(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE WorkerRoutine, WORK_QUEUE_TYPE QueueType,
                     PVOID Context)
{
    queue_io(IoWorkItem, WorkerRoutine, NULL, Context, WDK_CALLER, 1);
}

VOID IoQueueWorkItemEx(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE_EX WorkerRoutine, WORK_QUEUE_TYPE QueueType,
                       PVOID Context)
{
    queue_io(IoWorkItem, NULL, WorkerRoutine, Context, WDK_CALLER, 1);
}

BOOLEAN IoTryQueueWorkItem(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE_EX WorkerRoutine, WORK_QUEUE_TYPE QueueType,
                           PVOID Context)
{
    return queue_io(IoWorkItem, NULL, WorkerRoutine, Context, WDK_CALLER, 0);
}

VOID ExQueueWorkItem(PWORK_QUEUE_ITEM WorkItem, WORK_QUEUE_TYPE QueueType)
{
    if (wdk_irql_get() > DISPATCH_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", WDK_CALLER, "ExQueueWorkItem at IRQL %u", wdk_irql_get());
    pthread_mutex_lock(&wdk_ke_lock);
    InsertTailList(&ex_queue, &WorkItem->List);
    queued++;
    kick_locked();
    pthread_mutex_unlock(&wdk_ke_lock);
}

unsigned wdk_work_pending(void)
{
    pthread_mutex_lock(&wdk_ke_lock);
    unsigned n = queued + running;
    pthread_mutex_unlock(&wdk_ke_lock);
    return n;
}

/* Waits (bounded) until no work item is queued or running. */
void wdk_work_drain(int64_t deadline_ns)
{
    pthread_mutex_lock(&wdk_ke_lock);
    while (queued + running && wdk_mono_ns() < deadline_ns)
        wdk_ke_wait_until(deadline_ns);
    pthread_mutex_unlock(&wdk_ke_lock);
}

void wdk_activity_begin(void)
{
    pthread_mutex_lock(&wdk_ke_lock);
    activity++;
    pthread_mutex_unlock(&wdk_ke_lock);
}

void wdk_activity_end(void)
{
    pthread_mutex_lock(&wdk_ke_lock);
    if (activity)
        activity--;
    pthread_cond_broadcast(&wdk_ke_cond);
    pthread_mutex_unlock(&wdk_ke_lock);
}

unsigned wdk_activity_pending(void)
{
    pthread_mutex_lock(&wdk_ke_lock);
    unsigned n = activity;
    pthread_mutex_unlock(&wdk_ke_lock);
    return n;
}
