/*
 * ws2def.h - socket address vocabulary of Winsock as kernel code sees it. The address structures
 * themselves (SOCKADDR, SOCKADDR_IN, IN_ADDR ...) are in <ndk/nt.h> and share Linux's layouts;
 * the AF_* values are Linux's (AF_INET6 is 10 here, 23 on Windows), since the addresses a driver
 * builds go to the OpenNDK runtime and the Linux stack unchanged (openndk-wdk(7)).
 */
#ifndef OPENNDK_WDK_WS2DEF_H
#define OPENNDK_WDK_WS2DEF_H

#include <sys/socket.h>
#include <netinet/in.h>
#include "ntdef.h"

typedef struct sockaddr_storage SOCKADDR_STORAGE, *PSOCKADDR_STORAGE, SOCKADDR_STORAGE_LH, *PSOCKADDR_STORAGE_LH;
#ifndef IPPROTO_IPV4
#define IPPROTO_IPV4 4
#endif
#define SOCKET_ERROR (-1)

#endif
