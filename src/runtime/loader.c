/* loader.c - finds provider modules (ndk-<name>.so) in the provider path, loads each with
 * dlopen and runs its NdkProviderEntry: our DriverEntry + NdisMRegisterMiniportDriver +
 * MiniportSetOptions (NDKPI reference §6.2). A module that is missing its entry point, fails
 * to initialise or registers invalid characteristics is reported and skipped; the rest load. */
#define _GNU_SOURCE
#include "rt_internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndk_status.h"

/* ndk-<name>.so, except the filter modules that share the directory (ndk-filter-<name>.so,
 * filter_module.c). */
static int is_provider_file(const char *name)
{
    size_t n = strlen(name);
    return n > 7 && strncmp(name, "ndk-", 4) == 0 && strcmp(name + n - 3, ".so") == 0 &&
           strncmp(name, "ndk-filter-", 11) != 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void fail(struct rt_provider *p, NTSTATUS status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(struct rt_provider *p, NTSTATUS status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->info.message, sizeof p->info.message, fmt, ap);
    va_end(ap);
    p->info.status = status;
    rt_log(p->rt, NDK_LOG_WARNING, "provider %s skipped: %s", p->info.path, p->info.message);
}

/* Checks what the module registered, as NdisMRegisterMiniportDriver/NdisSetOptionalHandlers would. */
static const char *check_characteristics(const NDK_MINIPORT_CHARACTERISTICS *c)
{
    const NDIS_NDK_PROVIDER_CHARACTERISTICS *n = &c->NdkCharacteristics;
    if (c->AbiVersion != NDK_PROVIDER_ABI_VERSION)
        return "unsupported provider ABI version";
    if (!c->Name[0] || memchr(c->Name, '\0', sizeof c->Name) == NULL)
        return "missing or unterminated provider name";
    if (!c->InitializeHandler || !c->HaltHandler || !c->OidRequestHandler)
        return "missing Initialize, Halt or OidRequest handler";
    if (n->Header.Type != NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS ||
        n->Header.Revision < NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 ||
        n->Header.Size < NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1)
        return "NDIS_NDK_PROVIDER_CHARACTERISTICS header is not type 0xB2, revision 1";
    if (!n->OpenNDKAdapterHandler || !n->CloseNDKAdapterHandler)
        return "missing OpenNDKAdapterHandler or CloseNDKAdapterHandler";
    return NULL;
}

/* May block (dlopen, provider entry); rt->lock not held. */
static void load_one(struct ndk_rt *rt, const char *dir, const char *file)
{
    struct rt_provider *p = calloc(1, sizeof *p);
    if (!p) {
        rt_log(rt, NDK_LOG_ERROR, "out of memory loading %s/%s", dir, file);
        return;
    }
    p->rt = rt;
    pthread_mutex_init(&p->config_lock, NULL);
    snprintf(p->file, sizeof p->file, "%s", file);
    snprintf(p->info.path, sizeof p->info.path, "%s/%s", dir, file);
    /* Until the module names itself, it is known by its file name: "ndk-iwarp.so" -> "iwarp". */
    snprintf(p->info.name, sizeof p->info.name, "%.*s", (int)(strlen(file) - 7), file + 4);

    /* A provider listed twice in the path loads once: the first directory wins. */
    pthread_mutex_lock(&rt->lock);
    struct ndk_list *it;
    ndk_list_for_each(it, &rt->providers) {
        struct rt_provider *q = ndk_list_entry(it, struct rt_provider, link);
        if (strcmp(q->file, file) == 0) {
            pthread_mutex_unlock(&rt->lock);
            pthread_mutex_destroy(&p->config_lock);
            free(p);
            return;
        }
    }
    ndk_list_add_tail(&rt->providers, &p->link);
    pthread_mutex_unlock(&rt->lock);

    if (!rt_list_contains(rt->providers_filter, p->info.name)) {
        fail(p, STATUS_NOT_SUPPORTED, "not in the configured provider list");
        return;
    }
    p->dl = dlopen(p->info.path, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        const char *why = dlerror();
        fail(p, STATUS_DLL_NOT_FOUND, "cannot load: %s", why ? why : "unknown dlopen error");
        return;
    }
    dlerror();
    NDK_PROVIDER_ENTRY_FN entry = (NDK_PROVIDER_ENTRY_FN)dlsym(p->dl, NDK_PROVIDER_ENTRY_SYMBOL);
    if (!entry) {
        dlclose(p->dl);
        p->dl = NULL;
        fail(p, STATUS_ENTRYPOINT_NOT_FOUND, "no %s entry point exported", NDK_PROVIDER_ENTRY_SYMBOL);
        return;
    }
    p->chars.Size = sizeof p->chars;
    NTSTATUS st = entry(&rt->services, (NDIS_HANDLE)p, &p->chars, &p->driver_context);
    const char *bad = NT_SUCCESS(st) ? check_characteristics(&p->chars) : NULL;
    if (!NT_SUCCESS(st) || st == STATUS_PENDING || bad) {
        if (NT_SUCCESS(st) && p->chars.UnloadHandler)
            p->chars.UnloadHandler(p->driver_context);
        dlclose(p->dl);
        p->dl = NULL;
        if (bad)
            fail(p, STATUS_INVALID_PARAMETER, "invalid characteristics: %s", bad);
        else
            fail(p, st == STATUS_PENDING ? STATUS_INVALID_PARAMETER : st, "%s failed: %s",
                 NDK_PROVIDER_ENTRY_SYMBOL, ndk_rt_status_name(st == STATUS_PENDING ? STATUS_INVALID_PARAMETER : st));
        return;
    }
    /* From here the module's own names count. */
    pthread_mutex_lock(&rt->lock);
    snprintf(p->info.name, sizeof p->info.name, "%s", p->chars.Name);
    snprintf(p->info.description, sizeof p->info.description, "%s", p->chars.Description);
    p->info.flags = p->chars.ProviderFlags;
    p->info.status = STATUS_SUCCESS;
    ndk_list_for_each(it, &rt->providers) {
        struct rt_provider *q = ndk_list_entry(it, struct rt_provider, link);
        if (q != p && q->dl && strcmp(q->info.name, p->info.name) == 0) {
            pthread_mutex_unlock(&rt->lock);
            if (p->chars.UnloadHandler)
                p->chars.UnloadHandler(p->driver_context);
            dlclose(p->dl);
            p->dl = NULL;
            fail(p, STATUS_SHARING_VIOLATION, "a provider named '%s' is already loaded from %s", q->info.name,
                 q->info.path);
            return;
        }
    }
    pthread_mutex_unlock(&rt->lock);
    rt_log(rt, NDK_LOG_INFO, "provider %s loaded from %s", p->info.name, p->info.path);
}

/* May block; rt->lock not held. */
void rt_loader_load_all(struct ndk_rt *rt)
{
    char *path = strdup(rt->provider_path ? rt->provider_path : "");
    if (!path)
        return;
    char *save = NULL;
    size_t found = 0;
    for (char *dir = strtok_r(path, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        DIR *d = opendir(dir);
        if (!d) {
            rt_log(rt, NDK_LOG_INFO, "provider directory %s: %s", dir, strerror(errno));
            continue;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (!is_provider_file(de->d_name))
                continue;
            if (n == cap) {
                char **grown = realloc(names, (cap = cap ? cap * 2 : 8) * sizeof *names);
                if (!grown)
                    break;
                names = grown;
            }
            if ((names[n] = strdup(de->d_name)) != NULL)
                n++;
        }
        closedir(d);
        /* Sorted, so the load order (and ndkinfo's listing) does not depend on the file system.
         * A directory without providers (only filters, say) has no array to sort. */
        if (n)
            qsort(names, n, sizeof *names, cmp_names);
        for (size_t i = 0; i < n; i++) {
            load_one(rt, dir, names[i]);
            free(names[i]);
        }
        free(names);
        found += n;
    }
    free(path);
    if (!found)
        rt_log(rt, NDK_LOG_WARNING, "no provider modules (ndk-*.so) in the provider path '%s' (NDK_PROVIDER_PATH or "
               "provider_path in the config file sets it)", rt->provider_path ? rt->provider_path : "");
}

/* May block (provider unload); rt->lock not held; every adapter must be halted already. */
void rt_loader_unload_all(struct ndk_rt *rt)
{
    for (;;) {
        pthread_mutex_lock(&rt->lock);
        if (ndk_list_empty(&rt->providers)) {
            pthread_mutex_unlock(&rt->lock);
            return;
        }
        struct rt_provider *p = ndk_list_entry(rt->providers.next, struct rt_provider, link);
        ndk_list_del(&p->link);
        pthread_mutex_unlock(&rt->lock);
        if (p->dl) {
            if (p->chars.UnloadHandler)
                p->chars.UnloadHandler(p->driver_context);
            /* Sanitizer runs keep modules mapped so that leak reports can name their frames. */
            if (!getenv("NDK_NO_DLCLOSE"))
                dlclose(p->dl);
        }
        rt_config_free(p->config_cache);
        pthread_mutex_destroy(&p->config_lock);
        free(p);
    }
}
