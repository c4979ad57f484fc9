/* wirefault.c - the rules of iwarp.fault: parsed once per provider instance, made concrete per
 * connection (ranges drawn from iwarp.fault_seed, the connection number and the rule's index,
 * so the same seed and the same order of connections give the same faults), and applied by
 * wire.c where the bytes meet the socket: below every NDK filter, for what only the wire can do.
 * Grammar and semantics: ndk-iwarp(7), "WIRE FAULTS". */
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    enum iw_fault_kind kind;
} fault_kinds[] = {
    { "reset", IW_FAULT_RESET },           { "corrupt", IW_FAULT_CORRUPT },
    { "stall", IW_FAULT_STALL },           { "drop_reply", IW_FAULT_DROP_REPLY },
    { "delay_reply", IW_FAULT_DELAY_REPLY }, { "terminate", IW_FAULT_TERMINATE },
};

/* "N" or "LO-HI" (decimal or 0x-hex). */
static int parse_range(const char *s, struct iw_fault_range *r)
{
    char *end;
    unsigned long long lo = strtoull(s, &end, 0), hi = lo;

    if (end == s)
        return -EINVAL;
    if (*end == '-') {
        const char *h = end + 1;
        hi = strtoull(h, &end, 0);
        if (end == h || hi < lo)
            return -EINVAL;
    }
    if (*end)
        return -EINVAL;
    r->lo = lo;
    r->hi = hi;
    return 0;
}

static int parse_u8(const char *s, uint8_t *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 0);

    if (end == s || *end || v > 255)
        return -EINVAL;
    *out = (uint8_t)v;
    return 0;
}

/* One "key=value" of a rule. */
static int parse_param(struct iw_fault_rule *r, char *kv, const char **why)
{
    char *v = strchr(kv, '=');
    struct iw_fault_range tmp = { 0, 0 };
    int err = 0;

    if (!v) {
        *why = "a parameter is not key=value";
        return -EINVAL;
    }
    *v++ = '\0';
    if (!strcmp(kv, "bytes")) {
        err = parse_range(v, &r->bytes);
        r->has_bytes = true;
    } else if (!strcmp(kv, "fpdu")) {
        err = parse_range(v, &r->fpdu);
        if (!err && !r->fpdu.lo)
            err = -EINVAL;                /* FPDUs count from 1 */
        r->has_fpdu = true;
    } else if (!strcmp(kv, "offset")) {
        err = parse_range(v, &r->offset);
        r->has_offset = true;
    } else if (!strcmp(kv, "ms")) {
        err = parse_range(v, &r->ms);
        if (!err && r->ms.hi > 600000)
            err = -EINVAL;
    } else if (!strcmp(kv, "dir")) {
        if (!strcmp(v, "tx") || !strcmp(v, "rx"))
            r->rx = v[0] == 'r';
        else
            err = -EINVAL;
    } else if (!strcmp(kv, "layer")) {
        err = parse_u8(v, &r->layer);
        if (!err && r->layer > 15)
            err = -EINVAL;
    } else if (!strcmp(kv, "type")) {
        err = parse_u8(v, &r->etype);
        if (!err && r->etype > 15)
            err = -EINVAL;
    } else if (!strcmp(kv, "code")) {
        err = parse_u8(v, &r->ecode);
    } else if (!strcmp(kv, "port")) {
        err = parse_range(v, &tmp);
        if (!err && (tmp.lo != tmp.hi || tmp.lo > 65535))
            err = -EINVAL;
        r->port = (uint16_t)tmp.lo;
    } else if (!strcmp(kv, "conn")) {
        err = parse_range(v, &tmp);
        if (!err && (tmp.lo != tmp.hi || !tmp.lo || tmp.lo > UINT32_MAX))
            err = -EINVAL;
        r->conn = (uint32_t)tmp.lo;
    } else {
        *why = "unknown parameter";
        return -EINVAL;
    }
    if (err)
        *why = "bad value";
    return err;
}

/* What each kind requires. */
static int check_rule(const struct iw_fault_rule *r, const char **why)
{
    switch (r->kind) {
    case IW_FAULT_RESET:
        if (r->has_bytes == r->has_fpdu) {
            *why = "reset needs exactly one of bytes= and fpdu=";
            return -EINVAL;
        }
        return 0;
    case IW_FAULT_CORRUPT:
    case IW_FAULT_TERMINATE:
        if (!r->has_fpdu) {
            *why = "corrupt and terminate need fpdu=";
            return -EINVAL;
        }
        return 0;
    case IW_FAULT_STALL:
    case IW_FAULT_DELAY_REPLY:
        if (!r->ms.hi) {
            *why = "stall and delay_reply need ms=";
            return -EINVAL;
        }
        return 0;
    default:
        return 0;
    }
}

int iw_fault_parse(const char *text, struct iw_fault_rules *out, const char **why)
{
    char buf[1024], *save = NULL, *tok;

    out->n = 0;
    *why = "";
    if (strlen(text) >= sizeof buf) {
        *why = "too long";
        return -EINVAL;
    }
    snprintf(buf, sizeof buf, "%s", text);
    for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        struct iw_fault_rule *r;
        char *params, *psave = NULL, *kv;
        size_t k;

        while (*tok == ' ')
            tok++;
        if (!*tok)
            continue;
        if (out->n == IW_FAULT_MAX_RULES) {
            *why = "more than 8 rules";
            return -EINVAL;
        }
        r = &out->rule[out->n];
        memset(r, 0, sizeof *r);
        snprintf(r->text, sizeof r->text, "%s", tok);
        params = strchr(tok, ':');
        if (params)
            *params++ = '\0';
        for (k = 0; k < sizeof fault_kinds / sizeof fault_kinds[0]; k++)
            if (!strcmp(tok, fault_kinds[k].name))
                break;
        if (k == sizeof fault_kinds / sizeof fault_kinds[0]) {
            *why = "unknown fault";
            return -EINVAL;
        }
        r->kind = fault_kinds[k].kind;
        if (params)
            for (kv = strtok_r(params, ",", &psave); kv; kv = strtok_r(NULL, ",", &psave))
                if (parse_param(r, kv, why) < 0)
                    return -EINVAL;
        if (check_rule(r, why) < 0)
            return -EINVAL;
        out->n++;
    }
    return 0;
}

/* splitmix64: a small, well-known mixer; enough to draw reproducible values from a seed. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t draw(uint64_t *state, const struct iw_fault_range *r)
{
    *state = mix64(*state);
    return r->hi > r->lo ? r->lo + *state % (r->hi - r->lo + 1) : r->lo;
}

unsigned iw_fault_bind(struct iw_wire *w, const struct iw_fault_rules *rules, uint16_t local_port)
{
    w->nact = 0;
    for (unsigned i = 0; i < rules->n; i++) {
        const struct iw_fault_rule *r = &rules->rule[i];
        struct iw_fault_act *a = &w->act[w->nact];
        uint64_t st = rules->seed ^ ((uint64_t)w->id << 32) ^ i;

        if ((r->port && r->port != local_port) || (r->conn && r->conn != w->id))
            continue;
        if ((r->kind == IW_FAULT_DROP_REPLY || r->kind == IW_FAULT_DELAY_REPLY) && w->active)
            continue;                 /* only a responder sends a Reply */
        memset(a, 0, sizeof *a);
        a->rule = r;
        a->at = r->has_fpdu ? draw(&st, &r->fpdu) : r->has_bytes ? draw(&st, &r->bytes) : 0;
        a->ms = (uint32_t)draw(&st, &r->ms);
        a->offset = r->has_offset ? (uint32_t)draw(&st, &r->offset) : UINT32_MAX;   /* drawn in the FPDU */
        a->xor = (uint8_t)(1u + mix64(st) % 255u);
        w->nact++;
        iw_info("wire fault: CONN#%u armed rule \"%s\" (seed %llu)", w->id, r->text, (unsigned long long)rules->seed);
    }
    return w->nact;
}
