/*
 * thread.c - threads: the kit's own (workers, DPC and timer threads, the host's) and the
 * driver's system threads ("PsCreateSystemThread function (wdm.h)"). A system thread runs its
 * start routine at PASSIVE_LEVEL; its object is signaled when it ends, so the usual
 * ObReferenceObjectByHandle + KeWaitForSingleObject + ObDereferenceObject shape works. Threads
 * the kit did not create get a per-thread stand-in object (for mutex ownership and
 * KeGetCurrentThread).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "wdk_handle.h"

#undef PsCreateSystemThread

#define THREAD_MAGIC 0x54687264u

static __thread struct _KTHREAD *self;
static __thread struct _KTHREAD stand_in;

/* Under wdk_ke_lock: every thread object not yet freed, and the running count. */
static struct _KTHREAD *all_threads;
static unsigned alive;

/* Distinct, non-NULL object-type tokens (drivers pass *PsThreadType and compare them). */
static char type_tokens[4];
static POBJECT_TYPE thread_type_token = (POBJECT_TYPE)(void *)&type_tokens[0];
static POBJECT_TYPE process_type_token = (POBJECT_TYPE)(void *)&type_tokens[1];
static POBJECT_TYPE event_type_token = (POBJECT_TYPE)(void *)&type_tokens[2];
static POBJECT_TYPE file_type_token = (POBJECT_TYPE)(void *)&type_tokens[3];
POBJECT_TYPE *PsThreadType = &thread_type_token;
POBJECT_TYPE *PsProcessType = &process_type_token;
POBJECT_TYPE *ExEventObjectType = &event_type_token;
POBJECT_TYPE *IoFileObjectType = &file_type_token;

struct _KTHREAD *wdk_thread_self(void)
{
    if (!self) {
        stand_in.magic = THREAD_MAGIC;
        stand_in.Header.Type = WDK_OBJ_THREAD;
        self = &stand_in;
    }
    return self;
}

struct kit_start {
    void (*fn)(void *);
    void *arg;
    KIRQL irql;
};

static void *kit_trampoline(void *p)
{
    struct kit_start s = *(struct kit_start *)p;
    free(p);
    wdk_irql_set(s.irql);
    s.fn(s.arg);
    return NULL;
}

int wdk_kit_thread_start(void (*fn)(void *), void *arg, KIRQL irql)
{
    struct kit_start *s = malloc(sizeof *s);
    if (!s)
        return -ENOMEM;
    s->fn = fn;
    s->arg = arg;
    s->irql = irql;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &a, kit_trampoline, s);
    pthread_attr_destroy(&a);
    if (rc) {
        free(s);
        return -rc;
    }
    return 0;
}

/* Lock held. Drops one reference; frees the object at zero. */
static void thread_deref_locked(struct _KTHREAD *t)
{
    if (--t->refs > 0)
        return;
    for (struct _KTHREAD **pp = &all_threads; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    t->magic = 0;
    wdk_mem_free(t, WDK_MEM_KIT, NULL);
}

static void thread_ended(void *p)
{
    struct _KTHREAD *t = p;
    pthread_mutex_lock(&wdk_ke_lock);
    wdk_signal_set(&t->Header, 1);
    alive--;
    pthread_cond_broadcast(&wdk_ke_cond);
    thread_deref_locked(t);
    pthread_mutex_unlock(&wdk_ke_lock);
}

static void *system_trampoline(void *p)
{
    struct _KTHREAD *t = p;
    self = t;
    wdk_irql_set(PASSIVE_LEVEL);
    pthread_cleanup_push(thread_ended, t);
    t->start(t->context);
    if (wdk_irql_get() != PASSIVE_LEVEL)
        wdk_verify_report("THREAD_EXIT_IRQL", t->site, "system thread returned at IRQL %u", wdk_irql_get());
    pthread_cleanup_pop(1);
    return NULL;
}

NTSTATUS wdk_PsCreateSystemThread_at(PHANDLE ThreadHandle, ULONG DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                                     HANDLE ProcessHandle, PCLIENT_ID ClientId, PKSTART_ROUTINE StartRoutine,
                                     PVOID StartContext, const char *site)
{
    if (!ThreadHandle || !StartRoutine)
        return STATUS_INVALID_PARAMETER;
    struct _KTHREAD *t = wdk_mem_alloc(sizeof *t, 1, 0, WDK_MEM_KIT, "PsCreateSystemThread", site);
    if (!t)
        return STATUS_INSUFFICIENT_RESOURCES;
    t->Header.Type = WDK_OBJ_THREAD;
    InitializeListHead(&t->Header.WaitListHead);
    t->magic = THREAD_MAGIC;
    t->system = 1;
    t->start = StartRoutine;
    t->context = StartContext;
    t->site = site;
    t->refs = 2;   /* the running thread and the handle */
    HANDLE h = wdk_handle_new(WDK_HANDLE_THREAD, t);
    if (!h) {
        wdk_mem_free(t, WDK_MEM_KIT, NULL);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    pthread_mutex_lock(&wdk_ke_lock);
    t->next = all_threads;
    all_threads = t;
    alive++;
    pthread_mutex_unlock(&wdk_ke_lock);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t->tid, &a, system_trampoline, t);
    pthread_attr_destroy(&a);
    if (rc) {
        void *obj;
        wdk_handle_close(h, &obj);
        pthread_mutex_lock(&wdk_ke_lock);
        alive--;
        t->refs = 1;
        thread_deref_locked(t);
        pthread_mutex_unlock(&wdk_ke_lock);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    if (ClientId) {
        ClientId->UniqueProcess = (HANDLE)(uintptr_t)getpid();
        ClientId->UniqueThread = NULL;
    }
    *ThreadHandle = h;
    return STATUS_SUCCESS;
}

NTSTATUS PsCreateSystemThread(PHANDLE ThreadHandle, ULONG DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                              HANDLE ProcessHandle, PCLIENT_ID ClientId, PKSTART_ROUTINE StartRoutine,
                              PVOID StartContext)
{
    return wdk_PsCreateSystemThread_at(ThreadHandle, DesiredAccess, ObjectAttributes, ProcessHandle, ClientId,
                                       StartRoutine, StartContext, WDK_CALLER);
}

NTSTATUS PsTerminateSystemThread(NTSTATUS ExitStatus)
{
    struct _KTHREAD *t = wdk_thread_self();
    if (!t->system) {
        wdk_verify_report("TERMINATE_NOT_SYSTEM_THREAD", WDK_CALLER,
                          "PsTerminateSystemThread outside a system thread");
        abort();
    }
    pthread_exit(NULL);
}

unsigned wdk_system_threads_alive(void)
{
    pthread_mutex_lock(&wdk_ke_lock);
    unsigned n = alive;
    pthread_mutex_unlock(&wdk_ke_lock);
    return n;
}

void wdk_system_threads_check(void)
{
    pthread_mutex_lock(&wdk_ke_lock);
    for (struct _KTHREAD *t = all_threads; t; t = t->next)
        if (t->system && wdk_signal_get(&t->Header) == 0)
            wdk_verify_report("SYSTEM_THREAD_RUNNING", t->site, "system thread still running after DriverUnload");
    pthread_mutex_unlock(&wdk_ke_lock);
}

/* Lock held. Is p a thread object the kit created? */
static struct _KTHREAD *thread_of_locked(PVOID p)
{
    for (struct _KTHREAD *t = all_threads; t; t = t->next)
        if (t == p)
            return t;
    return NULL;
}

NTSTATUS ObReferenceObjectByHandle(HANDLE Handle, ACCESS_MASK DesiredAccess, POBJECT_TYPE ObjectType,
                                   KPROCESSOR_MODE AccessMode, PVOID *Object,
                                   POBJECT_HANDLE_INFORMATION HandleInformation)
{
    if (!Object)
        return STATUS_INVALID_PARAMETER;
    *Object = NULL;
    if (ObjectType && ObjectType != thread_type_token)
        return STATUS_OBJECT_TYPE_MISMATCH;
    struct _KTHREAD *t = wdk_handle_get(Handle, WDK_HANDLE_THREAD);
    if (!t)
        return STATUS_INVALID_HANDLE;
    pthread_mutex_lock(&wdk_ke_lock);
    t->refs++;
    pthread_mutex_unlock(&wdk_ke_lock);
    if (HandleInformation) {
        HandleInformation->HandleAttributes = 0;
        HandleInformation->GrantedAccess = DesiredAccess;
    }
    *Object = t;
    return STATUS_SUCCESS;
}

/* Only thread objects are reference counted; other objects a driver passes (devices, for
 * instance) live as long as the driver keeps them. */
LONG_PTR ObfReferenceObject(PVOID Object)
{
    pthread_mutex_lock(&wdk_ke_lock);
    struct _KTHREAD *t = thread_of_locked(Object);
    LONG_PTR n = t ? ++t->refs : 1;
    pthread_mutex_unlock(&wdk_ke_lock);
    return n;
}

LONG_PTR ObfDereferenceObject(PVOID Object)
{
    pthread_mutex_lock(&wdk_ke_lock);
    struct _KTHREAD *t = thread_of_locked(Object);
    LONG_PTR n = 0;
    if (t) {
        n = t->refs - 1;
        thread_deref_locked(t);
    }
    pthread_mutex_unlock(&wdk_ke_lock);
    return n;
}

PETHREAD PsGetCurrentThread(VOID)
{
    return (PETHREAD)wdk_thread_self();
}

PKTHREAD KeGetCurrentThread(VOID)
{
    return wdk_thread_self();
}

HANDLE PsGetCurrentThreadId(VOID)
{
    return (HANDLE)(uintptr_t)syscall(SYS_gettid);
}

HANDLE PsGetCurrentProcessId(VOID)
{
    return (HANDLE)(uintptr_t)getpid();
}

static char the_process[64];

PEPROCESS PsGetCurrentProcess(VOID)
{
    return (PEPROCESS)(void *)the_process;
}

BOOLEAN PsIsSystemThread(PETHREAD Thread)
{
    return (BOOLEAN)(((struct _KTHREAD *)(void *)Thread)->system != 0);
}

/* Priorities are recorded, not applied: the kit runs every thread at the host's priority. */
static __thread KPRIORITY thread_priority = 8;

KPRIORITY KeSetPriorityThread(PKTHREAD Thread, KPRIORITY Priority)
{
    KPRIORITY old = thread_priority;
    if (Thread == wdk_thread_self())
        thread_priority = Priority;
    return old;
}

KPRIORITY KeQueryPriorityThread(PKTHREAD Thread)
{
    return thread_priority;
}
