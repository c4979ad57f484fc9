/* mstcpip.h - in the kit, the part drivers include it for: the ip2string conversions. */
#ifndef OPENNDK_WDK_MSTCPIP_H
#define OPENNDK_WDK_MSTCPIP_H
#include "ip2string.h"
#endif
