/* fault_rules: parsing fault.rules and the seeded per-rule decisions. */
#define _DEFAULT_SOURCE
#include "fault_rules.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndk_status.h"

/* Names and hex values, through the one status table (src/common/ndk_status). */
int flt_fault_parse_status(const char *s, NTSTATUS *out)
{
    return ndk_status_parse_name(s, out) ? -EINVAL : 0;
}

static const char *const groups[] = { "create", "post", "connect", "any" };

static const char *const post_slots[] = {
    "NdkSend", "NdkSendAndInvalidate", "NdkReceive", "NdkSrqReceive", "NdkBind", "NdkFastRegister",
    "NdkInvalidate", "NdkRead", "NdkWrite",
};

bool flt_fault_rule_matches(const struct flt_fault_rule *rule, const char *slot)
{
    if (!strcmp(rule->call, slot) || !strcmp(rule->call, "any"))
        return true;
    if (!strcmp(rule->call, "create"))
        return !strncmp(slot, "NdkCreate", 9);
    if (!strcmp(rule->call, "connect"))
        return !strcmp(slot, "NdkConnect") || !strcmp(slot, "NdkConnectWithSharedEndpoint");
    if (!strcmp(rule->call, "post")) {
        for (size_t i = 0; i < sizeof post_slots / sizeof post_slots[0]; i++)
            if (!strcmp(slot, post_slots[i]))
                return true;
    }
    return false;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-')
        return -EINVAL;
    *out = x;
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Parses one "key=value" (or "async") into rule. */
static int parse_param(struct flt_fault_rule *rule, char *param, char *err, size_t errlen)
{
    char *eq = strchr(param, '=');
    const char *key = param, *val = "";
    if (eq) {
        *eq = '\0';
        val = eq + 1;
    }
    uint64_t u;
    if (!strcmp(key, "async") && !eq) {
        rule->async = true;
    } else if (!strcmp(key, "nth") || !strcmp(key, "every") || !strcmp(key, "after") || !strcmp(key, "count") ||
               !strcmp(key, "delay") || !strcmp(key, "short")) {
        if (parse_u64(val, &u) || (u == 0 && strcmp(key, "after") && strcmp(key, "delay"))) {
            snprintf(err, errlen, "%s=%s: expected a positive integer", key, val);
            return -EINVAL;
        }
        if (!strcmp(key, "nth"))
            rule->nth = u;
        else if (!strcmp(key, "every"))
            rule->every = u;
        else if (!strcmp(key, "after"))
            rule->after = u;
        else if (!strcmp(key, "count"))
            rule->count = u;
        else if (!strcmp(key, "delay")) {
            if (u > 600000) {
                snprintf(err, errlen, "delay=%s: at most 600000 ms", val);
                return -EINVAL;
            }
            rule->delay_ms = (unsigned)u;
            if (!rule->kind)
                rule->kind = FLT_FAULT_DELAY;
        } else {
            rule->short_max = (unsigned)(u > 0xffffffffu ? 0xffffffffu : u);
            rule->kind = FLT_FAULT_SHORT;
        }
    } else if (!strcmp(key, "p")) {
        char *end;
        double p = strtod(val, &end);
        if (end == val || *end || !(p > 0.0 && p <= 1.0)) {
            snprintf(err, errlen, "p=%s: expected a probability in (0, 1]", val);
            return -EINVAL;
        }
        rule->p = p;
    } else if (!strcmp(key, "status")) {
        if (flt_fault_parse_status(val, &rule->status) || rule->status == STATUS_PENDING ||
            NT_SUCCESS(rule->status)) {
            snprintf(err, errlen, "status=%s: expected a failure status name or 0x value", val);
            return -EINVAL;
        }
        rule->kind = FLT_FAULT_STATUS;
    } else if (!strcmp(key, "break")) {
        if (strcmp(val, "connection")) {
            snprintf(err, errlen, "break=%s: only break=connection exists", val);
            return -EINVAL;
        }
        rule->kind = FLT_FAULT_BREAK;
    } else {
        snprintf(err, errlen, "unknown parameter '%s'", key);
        return -EINVAL;
    }
    return 0;
}

/* Checks that the kind makes sense for the call (never inject what a provider may not do). */
static int check_rule(struct flt_fault_rule *rule, char *err, size_t errlen)
{
    bool cq_poll = !strcmp(rule->call, "NdkGetCqResults") || !strcmp(rule->call, "NdkGetCqResultsEx");
    bool notify = !strcmp(rule->call, "CqNotification");
    switch (rule->kind) {
    case FLT_FAULT_STATUS:
        if (cq_poll || notify || !strcmp(rule->call, "NdkArmCq") || !strcmp(rule->call, "NdkFlush") ||
            !strncmp(rule->call, "NdkGet", 6) || !strcmp(rule->call, "NdkReleaseLAM") ||
            !strcmp(rule->call, "NdkControlConnectEvents") || !strncmp(rule->call, "NdkClose", 8)) {
            snprintf(err, errlen, "%s cannot fail with a status (it returns none, or must not fail)", rule->call);
            return -EINVAL;
        }
        if (rule->async && strcmp(rule->call, "connect") && strcmp(rule->call, "NdkConnect") &&
            strcmp(rule->call, "NdkConnectWithSharedEndpoint") && strncmp(rule->call, "NdkCompleteConnect", 18) &&
            strncmp(rule->call, "NdkAccept", 9)) {
            snprintf(err, errlen, "async applies to the connect calls (NdkConnect, NdkCompleteConnect, NdkAccept)");
            return -EINVAL;
        }
        return 0;
    case FLT_FAULT_BREAK:
        return 0;
    case FLT_FAULT_DELAY:
        if (!notify && !cq_poll) {
            snprintf(err, errlen, "delay= alone applies to CqNotification and NdkGetCqResults(Ex) "
                                  "(with status=...:async, to the failure)");
            return -EINVAL;
        }
        return 0;
    case FLT_FAULT_SHORT:
        if (!cq_poll) {
            snprintf(err, errlen, "short= applies to NdkGetCqResults and NdkGetCqResultsEx");
            return -EINVAL;
        }
        return 0;
    }
    snprintf(err, errlen, "no fault given (status=, break=, delay= or short=)");
    return -EINVAL;
}

static bool known_call(const char *call)
{
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (!strcmp(call, groups[i]))
            return true;
    return !strncmp(call, "Ndk", 3) || !strcmp(call, "CqNotification");
}

/* At load; no lock needed (the rules are not shared yet). */
int flt_fault_rules_parse(struct flt_fault_rules *r, const char *text, uint64_t seed, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->seed = seed;
    if (!text)
        return 0;
    char *copy = strdup(text);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *rule_text = trim(tok);
        if (!*rule_text)
            continue;
        if (r->n == FLT_FAULT_MAX_RULES) {
            snprintf(err, errlen, "more than %d rules", FLT_FAULT_MAX_RULES);
            rc = -EINVAL;
            break;
        }
        struct flt_fault_rule *rule = &r->rule[r->n];
        snprintf(rule->text, sizeof rule->text, "%s", rule_text);
        char *psave = NULL;
        char *call = strtok_r(rule_text, ":", &psave);
        call = call ? trim(call) : NULL;
        if (!call || !*call || strlen(call) >= sizeof rule->call || !known_call(call)) {
            snprintf(err, errlen, "rule '%s': unknown call", rule->text);
            rc = -EINVAL;
            break;
        }
        strcpy(rule->call, call);
        for (char *p = strtok_r(NULL, ":", &psave); p && !rc; p = strtok_r(NULL, ":", &psave)) {
            char reason[128];
            if (parse_param(rule, trim(p), reason, sizeof reason)) {
                snprintf(err, errlen, "rule '%s': %s", rule->text, reason);
                rc = -EINVAL;
            }
        }
        if (!rc) {
            char reason[128];
            if (check_rule(rule, reason, sizeof reason)) {
                snprintf(err, errlen, "rule '%s': %s", rule->text, reason);
                rc = -EINVAL;
            }
        }
        if (rc)
            break;
        /* Each rule draws from its own stream: seed and position, so adding a rule later in the
         * list does not change the faults of the rules before it. */
        uint64_t s = seed ^ (0x9e3779b97f4a7c15ull * (r->n + 1));
        rule->rng[0] = (unsigned short)s;
        rule->rng[1] = (unsigned short)(s >> 16);
        rule->rng[2] = (unsigned short)(s >> 32 ^ s >> 48);
        pthread_mutex_init(&rule->mu, NULL);
        r->n++;
    }
    free(copy);
    if (rc)
        flt_fault_rules_free(r);
    return rc;
}

void flt_fault_rules_free(struct flt_fault_rules *r)
{
    for (unsigned i = 0; i < r->n; i++)
        pthread_mutex_destroy(&r->rule[i].mu);
    r->n = 0;
}

/* Any thread; rule->mu is held only for the decision. */
bool flt_fault_rule_decide(struct flt_fault_rule *rule, uint64_t *index)
{
    pthread_mutex_lock(&rule->mu);
    uint64_t i = ++rule->calls;
    bool fire = true;
    if (i <= rule->after)
        fire = false;
    if (fire && rule->nth && i != rule->nth)
        fire = false;
    if (fire && rule->every && i % rule->every)
        fire = false;
    /* The draw happens on every counted call, fired or not, so the stream stays aligned with the
     * call sequence. */
    if (rule->p > 0.0) {
        double x = erand48(rule->rng);
        if (fire && !(x < rule->p))
            fire = false;
    }
    if (fire && rule->count && rule->fired >= rule->count)
        fire = false;
    if (fire)
        rule->fired++;
    pthread_mutex_unlock(&rule->mu);
    *index = i;
    return fire;
}
