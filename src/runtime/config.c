/* config.c - the runtime's configuration file: `key = value` lines, `#` comments.
 * Keys: provider_path, providers, interfaces, filters, and `<provider>.<key>` / `<filter>.<key>`
 * for provider and filter settings, which the environment overrides as NDK_<PROVIDER>_<KEY> /
 * NDK_<FILTER>_<KEY> (so a test or a user can flip one setting without writing a file). */
#define _GNU_SOURCE
#include "rt_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* May block (file I/O); rt->lock not held (called during open only). */
int rt_config_load(struct ndk_rt *rt, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rt_log(rt, NDK_LOG_WARNING, "%s:%d: ignoring line without '='", path, lineno);
            continue;
        }
        *eq = '\0';
        struct rt_kv *kv = calloc(1, sizeof *kv);
        if (!kv || !(kv->key = strdup(trim(s))) || !(kv->value = strdup(trim(eq + 1)))) {
            if (kv) {
                free(kv->key);
                free(kv);
            }
            fclose(f);
            return -ENOMEM;
        }
        kv->next = rt->config;
        rt->config = kv;
    }
    fclose(f);
    return 0;
}

/* Never blocks; config is immutable after open, so no lock. */
const char *rt_config_get(const struct ndk_rt *rt, const char *key)
{
    for (const struct rt_kv *kv = rt->config; kv; kv = kv->next)
        if (strcmp(kv->key, key) == 0)
            return kv->value;
    return NULL;
}

void rt_config_free(struct rt_kv *kv)
{
    while (kv) {
        struct rt_kv *next = kv->next;
        free(kv->key);
        free(kv->value);
        free(kv);
        kv = next;
    }
}

/* Never blocks; takes *lock to remember the string it returns in *cache (valid until the cache
 * is freed, at unload). scope is a provider's or a filter's name. */
const char *rt_config_scoped_get(const struct ndk_rt *rt, const char *scope, const char *key, struct rt_kv **cache,
                                 pthread_mutex_t *lock)
{
    char env[160], file_key[160];
    snprintf(env, sizeof env, "NDK_%s_%s", scope, key);
    for (char *c = env; *c; c++)
        *c = (*c == '.' || *c == '-') ? '_' : (char)toupper((unsigned char)*c);
    snprintf(file_key, sizeof file_key, "%s.%s", scope, key);
    const char *value = getenv(env);
    if (!value)
        value = rt_config_get(rt, file_key);
    if (!value)
        return NULL;

    pthread_mutex_lock(lock);
    for (struct rt_kv *kv = *cache; kv; kv = kv->next) {
        if (strcmp(kv->key, key) == 0 && strcmp(kv->value, value) == 0) {
            pthread_mutex_unlock(lock);
            return kv->value;
        }
    }
    struct rt_kv *kv = calloc(1, sizeof *kv);
    const char *result = NULL;
    if (kv && (kv->key = strdup(key)) && (kv->value = strdup(value))) {
        kv->next = *cache;
        *cache = kv;
        result = kv->value;
    } else if (kv) {
        free(kv->key);
        free(kv);
    }
    pthread_mutex_unlock(lock);
    return result;
}

const char *rt_config_provider_get(struct rt_provider *p, const char *key)
{
    return rt_config_scoped_get(p->rt, p->info.name, key, &p->config_cache, &p->config_lock);
}

int rt_list_contains(const char *list, const char *name)
{
    if (!list || !*list)
        return 1;
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        const char *end = p;
        while (*end && *end != ',' && *end != ' ')
            end++;
        if ((size_t)(end - p) == n && strncmp(p, name, n) == 0)
            return 1;
        p = end;
    }
    return 0;
}
