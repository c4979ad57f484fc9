/* filter_module.c - filter modules: the configured filters (NDK_FILTERS, `filters =` in
 * openndk.conf, or ndk_rt_config.filters) are found as ndk-filter-<name>.so in the provider path,
 * the way providers are (loader.c), loaded once per runtime with their versioned entry point, and
 * unloaded when the runtime closes. A filter that cannot be loaded is reported at open and every
 * ndk_rt_open_adapter then fails with its status, rather than running without it unnoticed.
 * Also the module side of the public API: settings and logging. */
#define _GNU_SOURCE
#pragma GCC visibility push(default)
#include <ndk/filter.h>
#pragma GCC visibility pop
#include "filter_internal.h"
#include "rt_internal.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Filter names become file names: letters, digits, '_' and '-' only. */
static int valid_name(const char *name)
{
    size_t n = strlen(name);
    if (!n || n >= NDK_FILTER_NAME_MAX)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-'))
            return 0;
    return 1;
}

static const char *check_ops(const ndk_filter_ops *ops)
{
    if (!ops)
        return "no ndk_filter_ops";
    if (ops->abi_version != NDK_FILTER_ABI_VERSION)
        return "unsupported filter ABI version";
    if (ops->size < offsetof(ndk_filter_ops, callback) + sizeof ops->callback)
        return "ndk_filter_ops too small";
    return NULL;
}

static struct ndk_filter_module *module_new(struct ndk_rt *rt, const char *name)
{
    struct ndk_filter_module *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->rt = rt;
    snprintf(m->name, sizeof m->name, "%s", name);
    pthread_mutex_init(&m->config_lock, NULL);
    ndk_list_init(&m->link);
    m->status = STATUS_SUCCESS;
    return m;
}

void nf_module_free(struct ndk_filter_module *m)
{
    if (!m)
        return;
    rt_config_free(m->config_cache);
    pthread_mutex_destroy(&m->config_lock);
    free(m);
}

/* May block (dlopen, the module's load hook). */
struct ndk_filter_module *nf_module_load(struct ndk_rt *rt, const char *name)
{
    struct ndk_filter_module *m = module_new(rt, name);
    if (!m)
        return NULL;
    if (!valid_name(name)) {
        m->status = STATUS_INVALID_PARAMETER;
        rt_log(rt, NDK_LOG_ERROR, "filter name '%s' is not valid (letters, digits, '_', '-')", name);
        return m;
    }
    char *path = strdup(rt->provider_path ? rt->provider_path : "");
    char *save = NULL;
    for (char *dir = path ? strtok_r(path, ":", &save) : NULL; dir && !m->path[0]; dir = strtok_r(NULL, ":", &save)) {
        char candidate[sizeof m->path];
        snprintf(candidate, sizeof candidate, "%s/ndk-filter-%s.so", dir, name);
        if (access(candidate, R_OK) == 0)
            snprintf(m->path, sizeof m->path, "%s", candidate);
    }
    free(path);
    if (!m->path[0]) {
        m->status = STATUS_DLL_NOT_FOUND;
        rt_log(rt, NDK_LOG_ERROR, "filter '%s': no ndk-filter-%s.so in the provider path '%s'", name, name,
               rt->provider_path ? rt->provider_path : "");
        return m;
    }
    m->dl = dlopen(m->path, RTLD_NOW | RTLD_LOCAL);
    if (!m->dl) {
        const char *why = dlerror();
        m->status = STATUS_DLL_NOT_FOUND;
        rt_log(rt, NDK_LOG_ERROR, "filter %s: cannot load: %s", m->path, why ? why : "unknown dlopen error");
        return m;
    }
    dlerror();
    NDK_FILTER_ENTRY_FN entry = (NDK_FILTER_ENTRY_FN)dlsym(m->dl, NDK_FILTER_ENTRY_SYMBOL);
    const ndk_filter_ops *ops = NULL;
    NTSTATUS st = entry ? entry(NDK_FILTER_ABI_VERSION, &ops) : STATUS_ENTRYPOINT_NOT_FOUND;
    const char *bad = NT_SUCCESS(st) ? check_ops(ops) : NULL;
    if (!NT_SUCCESS(st) || bad) {
        m->status = bad ? STATUS_INVALID_PARAMETER : st;
        rt_log(rt, NDK_LOG_ERROR, "filter %s: %s", m->path,
               bad ? bad : entry ? "entry point failed" : "no " NDK_FILTER_ENTRY_SYMBOL " entry point exported");
        dlclose(m->dl);
        m->dl = NULL;
        return m;
    }
    m->ops = ops;
    if (ops->load) {
        st = ops->load(m, &m->module_ctx);
        if (!NT_SUCCESS(st)) {
            m->status = st;
            m->ops = NULL;
            rt_log(rt, NDK_LOG_ERROR, "filter %s: load failed: %s", m->name, ndk_rt_status_name(st));
            dlclose(m->dl);
            m->dl = NULL;
            return m;
        }
    }
    rt_log(rt, NDK_LOG_INFO, "filter %s loaded from %s", m->name, m->path);
    return m;
}

struct ndk_filter_module *nf_module_inproc(struct ndk_rt *rt, const ndk_filter_inproc *f)
{
    const char *bad = check_ops(f ? f->ops : NULL);
    if (bad) {
        rt_log(rt, NDK_LOG_ERROR, "in-process filter: %s", bad);
        return NULL;
    }
    struct ndk_filter_module *m = module_new(rt, f->ops->name && f->ops->name[0] ? f->ops->name : "inproc");
    if (!m)
        return NULL;
    m->inproc = 1;
    m->ops = f->ops;
    m->module_ctx = f->context;
    return m;
}

/* May block (the module's unload hook). */
void nf_module_unload(struct ndk_filter_module *m)
{
    if (m->ops && m->ops->unload)
        m->ops->unload(m->module_ctx);
    /* Sanitizer runs keep modules mapped so that leak reports can name their frames. */
    if (m->dl && !getenv("NDK_NO_DLCLOSE"))
        dlclose(m->dl);
    nf_module_free(m);
}

void rt_filters_load_all(struct ndk_rt *rt)
{
    ndk_list_init(&rt->filter_modules);
    if (!rt->filters || !*rt->filters || strcmp(rt->filters, "none") == 0)
        return;
    char *list = strdup(rt->filters);
    char *save = NULL;
    for (char *name = list ? strtok_r(list, ", ", &save) : NULL; name; name = strtok_r(NULL, ", ", &save)) {
        struct ndk_filter_module *m = nf_module_load(rt, name);
        if (!m) {
            rt_log(rt, NDK_LOG_ERROR, "out of memory loading filter %s", name);
            continue;
        }
        ndk_list_add_tail(&rt->filter_modules, &m->link);
        rt->filter_count++;
    }
    free(list);
}

void rt_filters_unload_all(struct ndk_rt *rt)
{
    while (!ndk_list_empty(&rt->filter_modules)) {
        struct ndk_filter_module *m = ndk_list_entry(rt->filter_modules.next, struct ndk_filter_module, link);
        ndk_list_del(&m->link);
        nf_module_unload(m);
    }
    rt->filter_count = 0;
}

/* ---- public (ndk/filter.h) ---- */

const char *ndk_filter_module_name(const ndk_filter_module *module)
{
    return module ? module->name : "?";
}

const char *ndk_filter_config(ndk_filter_module *module, const char *key)
{
    if (!module || !key)
        return NULL;
    return rt_config_scoped_get(module->rt, module->name, key, &module->config_cache, &module->config_lock);
}

void ndk_filter_log(ndk_filter_module *module, int level, const char *format, ...)
{
    if (!module)
        return;
    char prefix[NDK_FILTER_NAME_MAX + 8];
    snprintf(prefix, sizeof prefix, "filter %s", module->name);
    va_list ap;
    va_start(ap, format);
    rt_vlog(module->rt, level, prefix, format, ap);
    va_end(ap);
}
