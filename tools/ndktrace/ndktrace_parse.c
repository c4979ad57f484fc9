/* ndktrace_parse.c - one trace record from a line. The trace filter writes flat records whose
 * values are numbers and plain words (object names, status names, addresses), never quotes,
 * commas or spaces: `key=value ...` in text, `{"key":value,...}` in JSON. This reads exactly
 * that shape, not JSON in general. */
#include "ndktrace.h"

#include <stdlib.h>
#include <string.h>

static int add(struct nt_rec *rec, char *key, char *val)
{
    if (rec->nfields == NT_MAX_FIELDS)
        return -1;
    rec->key[rec->nfields] = key;
    rec->val[rec->nfields] = val;
    rec->nfields++;
    return 0;
}

static int parse_text(char *s, struct nt_rec *rec)
{
    char *save = NULL;
    for (char *tok = strtok_r(s, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return -1;
        *eq = '\0';
        if (add(rec, tok, eq + 1) < 0)
            return -1;
    }
    return 0;
}

static int parse_json(char *s, struct nt_rec *rec)
{
    char *p = s + 1;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '}' || !*p)
            return 0;
        if (*p != '"')
            return -1;
        char *key = ++p;
        if (!(p = strchr(p, '"')))
            return -1;
        *p++ = '\0';
        if (*p++ != ':')
            return -1;
        char *val = p;
        if (*p == '"') {
            val = ++p;
            if (!(p = strchr(p, '"')))
                return -1;
            *p++ = '\0';
        } else {
            p += strcspn(p, ",}");
            char end = *p;
            *p = '\0';
            if (end)
                p++;
            if (end == '}') {
                if (add(rec, key, val) < 0)
                    return -1;
                return 0;
            }
        }
        if (add(rec, key, val) < 0)
            return -1;
    }
}

int nt_parse(char *line, struct nt_rec *rec)
{
    rec->nfields = 0;
    while (*line == ' ' || *line == '\t')
        line++;
    int rc = *line == '{' ? parse_json(line, rec) : parse_text(line, rec);
    if (rc < 0 || !nt_get(rec, "ev") || !nt_get(rec, "ts"))
        return -1;
    return 0;
}

const char *nt_get(const struct nt_rec *rec, const char *key)
{
    for (int i = 0; i < rec->nfields; i++)
        if (strcmp(rec->key[i], key) == 0)
            return rec->val[i];
    return NULL;
}

uint64_t nt_get_u64(const struct nt_rec *rec, const char *key)
{
    const char *v = nt_get(rec, key);
    return v ? strtoull(v, NULL, 0) : 0;
}
