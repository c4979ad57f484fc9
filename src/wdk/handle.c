/*
 * handle.c - kernel handles (system threads, registry keys) as small indexes into one table, so
 * that ZwClose and ObReferenceObjectByHandle can tell a live handle from a stale or foreign one
 * and answer STATUS_INVALID_HANDLE instead of touching freed memory.
 */
#include "wdk_internal.h"
#include "wdk_handle.h"

#define MAX_HANDLES 1024

/* handles_lock guards the table; leaf lock. */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int type;
    void *obj;
} table[MAX_HANDLES];

HANDLE wdk_handle_new(int type, void *obj)
{
    pthread_mutex_lock(&handles_lock);
    for (unsigned i = 0; i < MAX_HANDLES; i++)
        if (!table[i].type) {
            table[i].type = type;
            table[i].obj = obj;
            pthread_mutex_unlock(&handles_lock);
            return (HANDLE)(uintptr_t)((i + 1) * 4);
        }
    pthread_mutex_unlock(&handles_lock);
    return NULL;
}

static long index_of(HANDLE h)
{
    uintptr_t v = (uintptr_t)h;
    if (v == 0 || v % 4 || v / 4 > MAX_HANDLES)
        return -1;
    return (long)(v / 4 - 1);
}

void *wdk_handle_get(HANDLE h, int type)
{
    long i = index_of(h);
    if (i < 0)
        return NULL;
    pthread_mutex_lock(&handles_lock);
    void *obj = table[i].type == type ? table[i].obj : NULL;
    pthread_mutex_unlock(&handles_lock);
    return obj;
}

int wdk_handle_close(HANDLE h, void **obj)
{
    long i = index_of(h);
    if (i < 0)
        return 0;
    pthread_mutex_lock(&handles_lock);
    int type = table[i].type;
    *obj = table[i].obj;
    table[i].type = 0;
    table[i].obj = NULL;
    pthread_mutex_unlock(&handles_lock);
    return type;
}

NTSTATUS ZwClose(HANDLE Handle)
{
    void *obj = NULL;
    switch (wdk_handle_close(Handle, &obj)) {
    case WDK_HANDLE_THREAD:
        ObfDereferenceObject(obj);
        return STATUS_SUCCESS;
    case WDK_HANDLE_KEY:
        wdk_key_close(obj);
        return STATUS_SUCCESS;
    default:
        wdk_verify_report("INVALID_HANDLE", WDK_CALLER, "ZwClose of %p, which is not an open handle", Handle);
        return STATUS_INVALID_HANDLE;
    }
}
