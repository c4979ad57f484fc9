/* wdk_handle.h - the kit's handle table (handle.c) and the objects it names. */
#ifndef WDK_HANDLE_H
#define WDK_HANDLE_H

#include "wdk_internal.h"

enum { WDK_HANDLE_FREE, WDK_HANDLE_THREAD, WDK_HANDLE_KEY };

/* A new handle for obj, or NULL when the table is full. Any IRQL. */
HANDLE wdk_handle_new(int type, void *obj);
/* The object behind a live handle of that type, or NULL. */
void *wdk_handle_get(HANDLE h, int type);
/* Removes the handle; returns its type (WDK_HANDLE_FREE if it was not live) and object. */
int wdk_handle_close(HANDLE h, void **obj);
/* Frees a registry key object (registry.c). */
void wdk_key_close(void *key);

#endif
