/* ndk_tool_addr.c - the tools' address syntax: parsing and printing (ndk_tool_addr.h). */
#include "ndk_tool_addr.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

uint16_t ndk_tool_addr_port(const SOCKADDR_INET *a)
{
    return ntohs(a->si_family == AF_INET6 ? a->Ipv6.sin6_port : a->Ipv4.sin_port);
}

void ndk_tool_addr_set_port(SOCKADDR_INET *a, uint16_t port)
{
    if (a->si_family == AF_INET6)
        a->Ipv6.sin6_port = htons(port);
    else
        a->Ipv4.sin_port = htons(port);
}

bool ndk_tool_addr_is_any(const SOCKADDR_INET *a)
{
    if (a->si_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&a->Ipv6.sin6_addr);
    if (a->si_family == AF_INET)
        return a->Ipv4.sin_addr.s_addr == htonl(INADDR_ANY);
    return true;
}

bool ndk_tool_addr_is_loopback(const SOCKADDR_INET *a)
{
    if (a->si_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&a->Ipv6.sin6_addr);
    if (a->si_family == AF_INET)
        return (ntohl(a->Ipv4.sin_addr.s_addr) >> 24) == 127;
    return false;
}

const char *ndk_tool_addr_str(const SOCKADDR_INET *a, bool with_port, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = "?";
    if (a->si_family == AF_INET) {
        inet_ntop(AF_INET, &a->Ipv4.sin_addr, ip, sizeof ip);
        if (with_port)
            snprintf(buf, len, "%s:%u", ip, ndk_tool_addr_port(a));
        else
            snprintf(buf, len, "%s", ip);
    } else if (a->si_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->Ipv6.sin6_addr, ip, INET6_ADDRSTRLEN);
        if (a->Ipv6.sin6_scope_id) {
            char name[IF_NAMESIZE];
            size_t l = strlen(ip);
            if (if_indextoname(a->Ipv6.sin6_scope_id, name))
                snprintf(ip + l, sizeof ip - l, "%%%s", name);
            else
                snprintf(ip + l, sizeof ip - l, "%%%u", a->Ipv6.sin6_scope_id);
        }
        if (with_port)
            snprintf(buf, len, "[%s]:%u", ip, ndk_tool_addr_port(a));
        else
            snprintf(buf, len, "%s", ip);
    } else if (with_port) {
        snprintf(buf, len, "*:%u", ndk_tool_addr_port(a));
    } else {
        snprintf(buf, len, "*");
    }
    return buf;
}

int ndk_tool_addr_parse_ip(const char *text, SOCKADDR_INET *out)
{
    char host[256];
    memset(out, 0, sizeof *out);
    if (!text || strlen(text) >= sizeof host)
        return -1;
    snprintf(host, sizeof host, "%s", text);
    if (inet_pton(AF_INET, host, &out->Ipv4.sin_addr) == 1) {
        out->Ipv4.sin_family = AF_INET;
        return 0;
    }
    char *pct = strchr(host, '%');
    if (pct)
        *pct++ = '\0';
    if (inet_pton(AF_INET6, host, &out->Ipv6.sin6_addr) == 1) {
        out->Ipv6.sin6_family = AF_INET6;
        if (pct) {
            char *end;
            unsigned long idx = strtoul(pct, &end, 10);
            if (*end)
                idx = if_nametoindex(pct);
            if (!idx)
                return -1;
            out->Ipv6.sin6_scope_id = (uint32_t)idx;
        }
        return 0;
    }
    if (pct)
        return -1;
    /* A host name ("localhost"): the first IPv4 or IPv6 address it resolves to. */
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return -1;
    int rc = -1;
    for (struct addrinfo *r = res; r; r = r->ai_next) {
        if (r->ai_family == AF_INET || r->ai_family == AF_INET6) {
            memcpy(out, r->ai_addr, r->ai_addrlen);
            ndk_tool_addr_set_port(out, 0);
            rc = 0;
            break;
        }
    }
    freeaddrinfo(res);
    return rc;
}

static int tool_parse_port(const char *s, uint16_t *port)
{
    char *end;
    if (!*s)
        return -1;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

int ndk_tool_addr_parse(const char *text, uint16_t default_port, SOCKADDR_INET *out, char *why, size_t whylen)
{
    char buf[300];
    const char *host = NULL, *port = NULL;
    uint16_t p = default_port;

    memset(out, 0, sizeof *out);
    if (!text)
        text = "";
    if (strlen(text) >= sizeof buf) {
        snprintf(why, whylen, "address too long");
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", text);
    if (buf[0] == '[') {
        char *close = strchr(buf, ']');
        if (!close) {
            snprintf(why, whylen, "'%s': missing ']'", text);
            return -1;
        }
        *close = '\0';
        host = buf + 1;
        if (close[1] == ':')
            port = close + 2;
        else if (close[1]) {
            snprintf(why, whylen, "'%s': junk after ']'", text);
            return -1;
        }
    } else {
        char *first = strchr(buf, ':');
        if (first && strchr(first + 1, ':')) {
            host = buf;                     /* bare IPv6 address, no port */
        } else if (first) {
            *first = '\0';
            host = buf;
            port = first + 1;
        } else {
            host = buf;
        }
    }
    if (port && tool_parse_port(port, &p) != 0) {
        snprintf(why, whylen, "'%s': bad port '%s'", text, port);
        return -1;
    }
    if (!host[0] || !strcmp(host, "*")) {
        out->si_family = AF_UNSPEC;        /* "any address", both families */
        out->Ipv4.sin_port = htons(p);
        return 0;
    }
    if (ndk_tool_addr_parse_ip(host, out) != 0) {
        snprintf(why, whylen, "'%s': not an IPv4/IPv6 address or known host name", host);
        return -1;
    }
    ndk_tool_addr_set_port(out, p);
    return 0;
}
