/*
 * wskndk.h - the NDK extension of Winsock Kernel: how a kernel consumer obtains an NDK_ADAPTER
 * for an IP interface, under the names and values of the WDK's own wskndk.h.
 *
 * A consumer registers with WSK, captures the provider NPI and asks WskControlClient for the
 * control code WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH; the provider copies a
 * WSK_PROVIDER_NDK_DISPATCH (two function pointers) into the caller's output buffer. Both
 * functions may be called at PASSIVE_LEVEL only. Microsoft documents nothing beyond the header
 * (its "Wskndk.h header" index page); the choices OpenNDK made where that is silent (accepted
 * versions and interfaces, the status for an interface without NDK) are in docs/porting.md.
 *
 * Include it after <ndkpi.h>. It also works outside the kernel-API kit (for example in a user-space
 * test), so it declares the few WSK names it needs itself when <wsk.h> was not included first.
 */
#ifndef WSKNDK_H
#define WSKNDK_H

#include "ndkpi.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef WSKAPI
#define WSKAPI
#endif

/* wsk.h's client handle; a C typedef may be repeated with the same type only from C11 on, so
 * the two headers agree on a guard instead. */
#ifndef OPENNDK_PWSK_CLIENT_DEFINED
#define OPENNDK_PWSK_CLIENT_DEFINED
typedef PVOID PWSK_CLIENT;
#endif

/* Opens an NDK adapter instance on the interface IfIndex. NdkVersion: the major the consumer is
 * written for and the lowest minor it accepts. PASSIVE_LEVEL. */
typedef NTSTATUS (WSKAPI *PFN_WSK_NDK_OPEN_ADAPTER)(PWSK_CLIENT Client, NDK_VERSION NdkVersion, NET_IFINDEX IfIndex,
                                                    NDK_ADAPTER **ppNdkAdapter);

/* Closes an instance WskOpenNdkAdapter returned, after the consumer closed every object on it.
 * PASSIVE_LEVEL; returns when the provider has released the instance. */
typedef VOID (WSKAPI *PFN_WSK_NDK_CLOSE_ADAPTER)(PWSK_CLIENT Client, NDK_ADAPTER *pNdkAdapter);

typedef struct _WSK_PROVIDER_NDK_DISPATCH {
    PFN_WSK_NDK_OPEN_ADAPTER  WskOpenNdkAdapter;
    PFN_WSK_NDK_CLOSE_ADAPTER WskCloseNdkAdapter;
} WSK_PROVIDER_NDK_DISPATCH, *PWSK_PROVIDER_NDK_DISPATCH;

/* The WskControlClient code; its value is the four characters 'N','D','K','D' packed as the
 * WDK's multi-character constant (0x4E444B44). Written out so that the header needs no
 * -Wno-multichar. The output buffer is a WSK_PROVIDER_NDK_DISPATCH, OutputSize its size. */
#define WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH ((ULONG)0x4E444B44)

#ifdef __cplusplus
}
#endif

#endif /* WSKNDK_H */
