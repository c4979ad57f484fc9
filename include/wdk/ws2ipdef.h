/* ws2ipdef.h - IP address string lengths with Winsock's values (larger than Linux's, room for
 * the scope and port the Ex conversions write) and the SOCKADDR_INET union of <ndk/nt.h>. */
#ifndef OPENNDK_WDK_WS2IPDEF_H
#define OPENNDK_WDK_WS2IPDEF_H

#include "ws2def.h"

#undef INET_ADDRSTRLEN
#undef INET6_ADDRSTRLEN
#define INET_ADDRSTRLEN 22
#define INET6_ADDRSTRLEN 65

#endif
