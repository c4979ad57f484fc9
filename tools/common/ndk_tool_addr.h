/*
 * ndk_tool_addr.h - the tools' address syntax: parsing "ADDR[:PORT]" as the command lines
 * take it, printing addresses in messages, ports and the any / loopback tests. Talks to no
 * NDK object.
 */
#ifndef NDK_TOOL_ADDR_H
#define NDK_TOOL_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ndkpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parses "ADDR", "ADDR:PORT", "[V6]:PORT", "[V6]", "V6" (more than one colon, no port),
 * ":PORT" and "" (the last two give the wildcard of family AF_UNSPEC, i.e. "any").
 * default_port applies when no port is given. Returns 0, or -1 with a reason in why. */
int ndk_tool_addr_parse(const char *text, uint16_t default_port, SOCKADDR_INET *out, char *why, size_t whylen);
/* Address without port ("127.0.0.1", "::1"); same syntax as inet_pton plus "%scope", or a
 * host name (its first IPv4 or IPv6 address). */
int ndk_tool_addr_parse_ip(const char *text, SOCKADDR_INET *out);
uint16_t ndk_tool_addr_port(const SOCKADDR_INET *a);
void ndk_tool_addr_set_port(SOCKADDR_INET *a, uint16_t port);
bool ndk_tool_addr_is_any(const SOCKADDR_INET *a);
bool ndk_tool_addr_is_loopback(const SOCKADDR_INET *a);
/* "1.2.3.4:7174", "[::1]:7174"; with_port false drops the port. Returns buf. */
const char *ndk_tool_addr_str(const SOCKADDR_INET *a, bool with_port, char *buf, size_t len);
#define NDK_TOOL_ADDR_STRLEN 80

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_ADDR_H */
