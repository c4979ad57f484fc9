/*
 * registry.c - the driver's registry: its service key \Registry\Machine\System\
 * CurrentControlSet\Services\<name> (the RegistryPath DriverEntry receives) and that key's
 * Parameters subkey, whose values come from `ndkdrv --param NAME=VALUE`. A value is REG_DWORD
 * when VALUE is a decimal or 0x-hex number that fits 32 bits and REG_SZ otherwise; a prefix
 * forces the type: sz:, expand_sz:, dword:, qword:, multi_sz: (comma-separated), binary: (hex
 * bytes). ZwOpenKey/ZwCreateKey open those two keys by absolute name or relative to an open one
 * (names compare case-insensitively); every other key is STATUS_OBJECT_NAME_NOT_FOUND. Values
 * set with ZwSetValueKey live until the process ends. All PASSIVE_LEVEL calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include "wdk_handle.h"

#undef ZwOpenKey

enum { KEY_SERVICE, KEY_PARAMETERS, KEY_COUNT };

struct value {
    struct value *next;
    WCHAR *name;                       /* NUL-terminated */
    ULONG type;
    ULONG size;
    unsigned char *data;
};

struct key {
    int which;
};

/* reg_lock guards the value lists and the path strings; leaf lock. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct value *values[KEY_COUNT];
static char service_name[128] = "driver";
static char key_paths[KEY_COUNT][320];
static WCHAR registry_path_w[320];

static void set_paths(void)
{
    snprintf(key_paths[KEY_SERVICE], sizeof key_paths[0],
             "\\Registry\\Machine\\System\\CurrentControlSet\\Services\\%s", service_name);
    snprintf(key_paths[KEY_PARAMETERS], sizeof key_paths[0],
             "\\Registry\\Machine\\System\\CurrentControlSet\\Services\\%s\\Parameters", service_name);
    wdk_utf8_to_utf16(key_paths[KEY_SERVICE], strlen(key_paths[KEY_SERVICE]), registry_path_w,
                      sizeof registry_path_w / sizeof registry_path_w[0]);
}

void wdk_registry_set_service(const char *name)
{
    pthread_mutex_lock(&reg_lock);
    snprintf(service_name, sizeof service_name, "%s", name);
    set_paths();
    pthread_mutex_unlock(&reg_lock);
}

const WCHAR *wdk_registry_path(void)
{
    if (!registry_path_w[0])
        set_paths();
    return registry_path_w;
}

static int wname_eq(const WCHAR *a, size_t an, const WCHAR *b, size_t bn)
{
    if (an != bn)
        return 0;
    for (size_t i = 0; i < an; i++)
        if (RtlUpcaseUnicodeChar(a[i]) != RtlUpcaseUnicodeChar(b[i]))
            return 0;
    return 1;
}

/* Lock held. */
static struct value *find_value(int which, const WCHAR *name, size_t n)
{
    for (struct value *v = values[which]; v; v = v->next)
        if (wname_eq(v->name, wdk_wcslen(v->name), name, n))
            return v;
    return NULL;
}

/* Lock held. Replaces or adds a value; takes ownership of data. */
static int set_value(int which, const WCHAR *name, size_t n, ULONG type, unsigned char *data, ULONG size)
{
    struct value *v = find_value(which, name, n);
    if (!v) {
        v = calloc(1, sizeof *v);
        if (!v)
            return -ENOMEM;
        v->name = calloc(n + 1, sizeof(WCHAR));
        if (!v->name) {
            free(v);
            return -ENOMEM;
        }
        memcpy(v->name, name, n * sizeof(WCHAR));
        v->next = values[which];
        values[which] = v;
    }
    free(v->data);
    v->type = type;
    v->data = data;
    v->size = size;
    return 0;
}

static unsigned char *wide_sz(const char *s, size_t n, ULONG *size)
{
    size_t units = wdk_utf8_to_utf16(s, n, NULL, 0);
    WCHAR *w = calloc(units + 1, sizeof(WCHAR));
    if (!w)
        return NULL;
    wdk_utf8_to_utf16(s, n, w, units + 1);
    *size = (ULONG)((units + 1) * sizeof(WCHAR));
    return (unsigned char *)w;
}

/* "NAME=VALUE" with an optional type prefix on VALUE; 0 or -EINVAL/-ENOMEM. */
int wdk_registry_param(const char *spec)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        return -EINVAL;
    size_t nlen = (size_t)(eq - spec);
    const char *val = eq + 1;
    ULONG type = REG_NONE, size = 0;
    unsigned char *data = NULL;
    static const struct { const char *prefix; ULONG type; } prefixes[] = {
        { "sz:", REG_SZ }, { "expand_sz:", REG_EXPAND_SZ }, { "dword:", REG_DWORD }, { "qword:", REG_QWORD },
        { "multi_sz:", REG_MULTI_SZ }, { "binary:", REG_BINARY },
    };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncasecmp(val, prefixes[i].prefix, strlen(prefixes[i].prefix))) {
            type = prefixes[i].type;
            val += strlen(prefixes[i].prefix);
            break;
        }
    if (type == REG_NONE) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(val, &end, 0);
        type = (*val && !*end && !errno && val[0] != '-' && n <= 0xffffffffULL) ? REG_DWORD : REG_SZ;
    }
    switch (type) {
    case REG_DWORD:
    case REG_QWORD: {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(val, &end, 0);
        if (!*val || *end || errno || (type == REG_DWORD && n > 0xffffffffULL))
            return -EINVAL;
        size = type == REG_DWORD ? 4 : 8;
        data = malloc(size);
        if (!data)
            return -ENOMEM;
        if (type == REG_DWORD) {
            uint32_t d = (uint32_t)n;
            memcpy(data, &d, 4);
        } else {
            uint64_t q = n;
            memcpy(data, &q, 8);
        }
        break;
    }
    case REG_SZ:
    case REG_EXPAND_SZ:
        data = wide_sz(val, strlen(val), &size);
        if (!data)
            return -ENOMEM;
        break;
    case REG_MULTI_SZ: {
        /* "a,b,c" -> "a\0b\0c\0\0" */
        char *copy = strdup(val);
        if (!copy)
            return -ENOMEM;
        size_t len = strlen(copy);
        for (size_t i = 0; i < len; i++)
            if (copy[i] == ',')
                copy[i] = 0;
        size_t units = 0;
        for (size_t i = 0; i <= len;) {
            size_t l = strlen(copy + i);
            units += wdk_utf8_to_utf16(copy + i, l, NULL, 0) + 1;
            i += l + 1;
        }
        WCHAR *w = calloc(units + 1, sizeof(WCHAR));
        if (!w) {
            free(copy);
            return -ENOMEM;
        }
        size_t at = 0;
        for (size_t i = 0; i <= len;) {
            size_t l = strlen(copy + i);
            at += wdk_utf8_to_utf16(copy + i, l, w + at, units + 1 - at) + 1;
            i += l + 1;
        }
        free(copy);
        data = (unsigned char *)w;
        size = (ULONG)((units + 1) * sizeof(WCHAR));
        break;
    }
    case REG_BINARY: {
        size_t len = strlen(val);
        if (len % 2)
            return -EINVAL;
        data = malloc(len / 2 + 1);
        if (!data)
            return -ENOMEM;
        for (size_t i = 0; i < len; i += 2) {
            char hex[3] = { val[i], val[i + 1], 0 };
            char *end;
            data[i / 2] = (unsigned char)strtoul(hex, &end, 16);
            if (*end) {
                free(data);
                return -EINVAL;
            }
        }
        size = (ULONG)(len / 2);
        break;
    }
    }
    WCHAR wname[256];
    size_t wn = wdk_utf8_to_utf16(spec, nlen, wname, 256);
    if (wn >= 256) {
        free(data);
        return -EINVAL;
    }
    pthread_mutex_lock(&reg_lock);
    int rc = set_value(KEY_PARAMETERS, wname, wn, type, data, size);
    pthread_mutex_unlock(&reg_lock);
    if (rc)
        free(data);
    return rc;
}

void wdk_registry_reset(void)
{
    pthread_mutex_lock(&reg_lock);
    for (int k = 0; k < KEY_COUNT; k++)
        while (values[k]) {
            struct value *v = values[k];
            values[k] = v->next;
            free(v->name);
            free(v->data);
            free(v);
        }
    pthread_mutex_unlock(&reg_lock);
}

void wdk_key_close(void *key)
{
    free(key);
}

/* Which key an absolute or relative name designates; -1 if none. */
static int resolve(int root, const UNICODE_STRING *name)
{
    char path[640];
    size_t n = name && name->Buffer ? wdk_utf16_to_utf8(name->Buffer, name->Length / 2, path, sizeof path) : 0;
    if (n >= sizeof path)
        return -1;
    if (!name || !name->Buffer)
        path[0] = 0;
    while (n && path[n - 1] == '\\')
        path[--n] = 0;
    if (root >= 0) {
        if (!n)
            return root;
        if (root == KEY_SERVICE && !strcasecmp(path, "Parameters"))
            return KEY_PARAMETERS;
        return -1;
    }
    pthread_mutex_lock(&reg_lock);
    if (!key_paths[0][0])
        set_paths();
    int which = -1;
    for (int k = 0; k < KEY_COUNT; k++)
        if (!strcasecmp(path, key_paths[k]))
            which = k;
    pthread_mutex_unlock(&reg_lock);
    return which;
}

static NTSTATUS open_which(int which, PHANDLE h)
{
    struct key *k = malloc(sizeof *k);
    if (!k)
        return STATUS_INSUFFICIENT_RESOURCES;
    k->which = which;
    *h = wdk_handle_new(WDK_HANDLE_KEY, k);
    if (!*h) {
        free(k);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    return STATUS_SUCCESS;
}

static NTSTATUS open_key(PHANDLE KeyHandle, POBJECT_ATTRIBUTES ObjectAttributes, const char *api)
{
    if (!KeyHandle || !ObjectAttributes)
        return STATUS_INVALID_PARAMETER;
    *KeyHandle = NULL;
    if (wdk_irql_get() != PASSIVE_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", WDK_CALLER, "%s at IRQL %u (PASSIVE_LEVEL only)", api, wdk_irql_get());
    int root = -1;
    if (ObjectAttributes->RootDirectory) {
        struct key *r = wdk_handle_get(ObjectAttributes->RootDirectory, WDK_HANDLE_KEY);
        if (!r)
            return STATUS_INVALID_HANDLE;
        root = r->which;
    }
    int which = resolve(root, ObjectAttributes->ObjectName);
    if (which < 0)
        return STATUS_OBJECT_NAME_NOT_FOUND;
    return open_which(which, KeyHandle);
}

NTSTATUS ZwOpenKey(PHANDLE KeyHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes)
{
    return open_key(KeyHandle, ObjectAttributes, "ZwOpenKey");
}

/* Only the two existing keys can be "created" (opened); a new key is not supported. */
NTSTATUS ZwCreateKey(PHANDLE KeyHandle, ACCESS_MASK DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                     ULONG TitleIndex, PUNICODE_STRING Class, ULONG CreateOptions, PULONG Disposition)
{
    NTSTATUS st = open_key(KeyHandle, ObjectAttributes, "ZwCreateKey");
    if (st == STATUS_OBJECT_NAME_NOT_FOUND)
        wdk_unsupported("ZwCreateKey", "only the driver's service key and its Parameters subkey exist; pass "
                                       "values with ndkdrv --param");
    if (NT_SUCCESS(st) && Disposition)
        *Disposition = REG_OPENED_EXISTING_KEY;
    return st;
}

static int key_of(HANDLE h)
{
    struct key *k = wdk_handle_get(h, WDK_HANDLE_KEY);
    return k ? k->which : -1;
}

NTSTATUS ZwQueryValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName,
                         KEY_VALUE_INFORMATION_CLASS KeyValueInformationClass, PVOID KeyValueInformation,
                         ULONG Length, PULONG ResultLength)
{
    int which = key_of(KeyHandle);
    if (which < 0)
        return STATUS_INVALID_HANDLE;
    if (!ValueName || !ResultLength)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&reg_lock);
    struct value *v = find_value(which, ValueName->Buffer, ValueName->Length / 2);
    if (!v) {
        pthread_mutex_unlock(&reg_lock);
        return STATUS_OBJECT_NAME_NOT_FOUND;
    }
    ULONG namebytes = (ULONG)(wdk_wcslen(v->name) * sizeof(WCHAR));
    ULONG fixed, need;
    NTSTATUS st = STATUS_SUCCESS;
    switch (KeyValueInformationClass) {
    case KeyValuePartialInformation:
    case KeyValuePartialInformationAlign64:
        fixed = (ULONG)FIELD_OFFSET(KEY_VALUE_PARTIAL_INFORMATION, Data);
        need = fixed + v->size;
        *ResultLength = need;
        if (Length < fixed) {
            st = STATUS_BUFFER_TOO_SMALL;
            break;
        }
        {
            PKEY_VALUE_PARTIAL_INFORMATION p = KeyValueInformation;
            p->TitleIndex = 0;
            p->Type = v->type;
            p->DataLength = v->size;
            ULONG room = Length - fixed;
            memcpy(p->Data, v->data, room < v->size ? room : v->size);
            if (room < v->size)
                st = STATUS_BUFFER_OVERFLOW;
        }
        break;
    case KeyValueBasicInformation:
        fixed = (ULONG)FIELD_OFFSET(KEY_VALUE_BASIC_INFORMATION, Name);
        need = fixed + namebytes;
        *ResultLength = need;
        if (Length < fixed) {
            st = STATUS_BUFFER_TOO_SMALL;
            break;
        }
        {
            PKEY_VALUE_BASIC_INFORMATION b = KeyValueInformation;
            b->TitleIndex = 0;
            b->Type = v->type;
            b->NameLength = namebytes;
            ULONG room = Length - fixed;
            memcpy(b->Name, v->name, room < namebytes ? room : namebytes);
            if (room < namebytes)
                st = STATUS_BUFFER_OVERFLOW;
        }
        break;
    case KeyValueFullInformation:
    case KeyValueFullInformationAlign64: {
        fixed = (ULONG)FIELD_OFFSET(KEY_VALUE_FULL_INFORMATION, Name);
        ULONG dataoff = (fixed + namebytes + 7) & ~7u;
        need = dataoff + v->size;
        *ResultLength = need;
        if (Length < fixed) {
            st = STATUS_BUFFER_TOO_SMALL;
            break;
        }
        PKEY_VALUE_FULL_INFORMATION f = KeyValueInformation;
        f->TitleIndex = 0;
        f->Type = v->type;
        f->DataOffset = dataoff;
        f->DataLength = v->size;
        f->NameLength = namebytes;
        if (Length < need) {
            ULONG room = Length - fixed;
            memcpy(f->Name, v->name, room < namebytes ? room : namebytes);
            st = STATUS_BUFFER_OVERFLOW;
            break;
        }
        memcpy(f->Name, v->name, namebytes);
        memcpy((char *)f + dataoff, v->data, v->size);
        break;
    }
    default:
        st = STATUS_INVALID_PARAMETER;
        break;
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

NTSTATUS ZwSetValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName, ULONG TitleIndex, ULONG Type, PVOID Data,
                       ULONG DataSize)
{
    int which = key_of(KeyHandle);
    if (which < 0)
        return STATUS_INVALID_HANDLE;
    if (!ValueName || (DataSize && !Data))
        return STATUS_INVALID_PARAMETER;
    unsigned char *copy = malloc(DataSize ? DataSize : 1);
    if (!copy)
        return STATUS_INSUFFICIENT_RESOURCES;
    if (DataSize)
        memcpy(copy, Data, DataSize);
    pthread_mutex_lock(&reg_lock);
    int rc = set_value(which, ValueName->Buffer, ValueName->Length / 2, Type, copy, DataSize);
    pthread_mutex_unlock(&reg_lock);
    if (rc) {
        free(copy);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    return STATUS_SUCCESS;
}

NTSTATUS ZwDeleteValueKey(HANDLE KeyHandle, PUNICODE_STRING ValueName)
{
    int which = key_of(KeyHandle);
    if (which < 0)
        return STATUS_INVALID_HANDLE;
    pthread_mutex_lock(&reg_lock);
    for (struct value **pp = &values[which]; *pp; pp = &(*pp)->next) {
        struct value *v = *pp;
        if (wname_eq(v->name, wdk_wcslen(v->name), ValueName->Buffer, ValueName->Length / 2)) {
            *pp = v->next;
            pthread_mutex_unlock(&reg_lock);
            free(v->name);
            free(v->data);
            free(v);
            return STATUS_SUCCESS;
        }
    }
    pthread_mutex_unlock(&reg_lock);
    return STATUS_OBJECT_NAME_NOT_FOUND;
}


/* A legacy driver has no PDO; the kit's choice is to give both the device (hardware) and the
 * driver (software) key of any of the driver's devices as the Parameters key, so drivers that
 * read their settings this way get the --param values. */
NTSTATUS IoOpenDeviceRegistryKey(PDEVICE_OBJECT DeviceObject, ULONG DevInstKeyType, ACCESS_MASK DesiredAccess,
                                 PHANDLE DevInstRegKey)
{
    if (!DeviceObject || !DevInstRegKey ||
        !(DevInstKeyType & (PLUGPLAY_REGKEY_DEVICE | PLUGPLAY_REGKEY_DRIVER)))
        return STATUS_INVALID_PARAMETER;
    return open_which(KEY_PARAMETERS, DevInstRegKey);
}

NTSTATUS IoOpenDriverRegistryKey(PDRIVER_OBJECT DriverObject, DRIVER_REGKEY_TYPE RegKeyType,
                                 ACCESS_MASK DesiredAccess, ULONG Flags, PHANDLE DriverRegKey)
{
    if (!DriverObject || !DriverRegKey || Flags)
        return STATUS_INVALID_PARAMETER;
    if (RegKeyType != DriverRegKeyParameters) {
        wdk_unsupported("IoOpenDriverRegistryKey", "only DriverRegKeyParameters is provided (the --param values)");
        return STATUS_NOT_SUPPORTED;
    }
    return open_which(KEY_PARAMETERS, DriverRegKey);
}

/* ---- RtlQueryRegistryValues: the common DIRECT and QueryRoutine shapes ---- */
static int rtl_key(ULONG RelativeTo, PCWSTR Path)
{
    if (RelativeTo & RTL_REGISTRY_HANDLE)
        return key_of((HANDLE)Path);
    UNICODE_STRING u;
    RtlInitUnicodeString(&u, Path);
    switch (RelativeTo & ~RTL_REGISTRY_OPTIONAL) {
    case RTL_REGISTRY_ABSOLUTE:
        return resolve(-1, &u);
    case RTL_REGISTRY_SERVICES: {
        char path[320], want[2][200];
        wdk_utf16_to_utf8(u.Buffer, u.Length / 2, path, sizeof path);
        snprintf(want[0], sizeof want[0], "%s", service_name);
        snprintf(want[1], sizeof want[1], "%s\\Parameters", service_name);
        return !strcasecmp(path, want[0]) ? KEY_SERVICE : !strcasecmp(path, want[1]) ? KEY_PARAMETERS : -1;
    }
    default:
        return -1;
    }
}

/* Stores one value the DIRECT way into EntryContext. */
static NTSTATUS direct_store(ULONG type, const void *data, ULONG size, PVOID EntryContext)
{
    switch (type) {
    case REG_DWORD:
        if (size >= 4)
            memcpy(EntryContext, data, 4);
        return STATUS_SUCCESS;
    case REG_QWORD:
        if (size >= 8)
            memcpy(EntryContext, data, 8);
        return STATUS_SUCCESS;
    case REG_SZ:
    case REG_EXPAND_SZ:
    case REG_MULTI_SZ: {
        PUNICODE_STRING u = EntryContext;
        ULONG bytes = size;
        if (!u->Buffer) {
            u->Buffer = wdk_pool_alloc_type_at(PagedPool, bytes + 2, 0x74537355u, TRUE, "RtlQueryRegistryValues",
                                               WDK_CALLER);
            if (!u->Buffer)
                return STATUS_NO_MEMORY;
            u->MaximumLength = (USHORT)(bytes + 2);
        }
        if (bytes > u->MaximumLength)
            return STATUS_BUFFER_TOO_SMALL;
        memcpy(u->Buffer, data, bytes);
        u->Length = (USHORT)(bytes >= 2 && ((const WCHAR *)data)[bytes / 2 - 1] == 0 ? bytes - 2 : bytes);
        return STATUS_SUCCESS;
    }
    default: {
        /* REG_BINARY & co.: EntryContext starts with a LONG; negative: buffer size, data after
         * it ("RtlQueryRegistryValues function (wdm.h)"). */
        LONG room;
        memcpy(&room, EntryContext, sizeof room);
        if (room < 0) {
            if ((ULONG)-room < size)
                return STATUS_BUFFER_TOO_SMALL;
            memcpy(EntryContext, data, size);
        }
        return STATUS_SUCCESS;
    }
    }
}

NTSTATUS RtlQueryRegistryValues(ULONG RelativeTo, PCWSTR Path, PRTL_QUERY_REGISTRY_TABLE QueryTable, PVOID Context,
                                PVOID Environment)
{
    int which = rtl_key(RelativeTo, Path);
    if (which < 0)
        return STATUS_OBJECT_NAME_NOT_FOUND;
    int top = which;
    for (PRTL_QUERY_REGISTRY_TABLE e = QueryTable; e->QueryRoutine || e->Name; e++) {
        if (e->Flags & RTL_QUERY_REGISTRY_SUBKEY) {
            UNICODE_STRING sub;
            RtlInitUnicodeString(&sub, e->Name);
            which = resolve(top, &sub);
            if (which < 0)
                return STATUS_OBJECT_NAME_NOT_FOUND;
            if (!e->QueryRoutine)
                continue;
        }
        if (e->Flags & RTL_QUERY_REGISTRY_TOPKEY)
            which = top;
        if (!e->Name && e->QueryRoutine) {
            /* No name: the routine sees every value of the key. */
            pthread_mutex_lock(&reg_lock);
            unsigned n = 0;
            for (struct value *v = values[which]; v; v = v->next)
                n++;
            struct value *snap = calloc(n ? n : 1, sizeof *snap);
            unsigned i = 0;
            for (struct value *v = values[which]; snap && v; v = v->next, i++) {
                snap[i] = *v;
                snap[i].name = malloc((wdk_wcslen(v->name) + 1) * sizeof(WCHAR));
                snap[i].data = malloc(v->size ? v->size : 1);
                if (snap[i].name)
                    memcpy(snap[i].name, v->name, (wdk_wcslen(v->name) + 1) * sizeof(WCHAR));
                if (snap[i].data)
                    memcpy(snap[i].data, v->data, v->size);
            }
            pthread_mutex_unlock(&reg_lock);
            if (!snap)
                return STATUS_NO_MEMORY;
            NTSTATUS st = STATUS_SUCCESS;
            for (i = 0; i < n; i++) {
                if (NT_SUCCESS(st) && snap[i].name && snap[i].data)
                    st = e->QueryRoutine(snap[i].name, snap[i].type, snap[i].data, snap[i].size, Context,
                                         e->EntryContext);
                free(snap[i].name);
                free(snap[i].data);
            }
            free(snap);
            if (!NT_SUCCESS(st))
                return st;
            continue;
        }
        pthread_mutex_lock(&reg_lock);
        struct value *v = find_value(which, e->Name, wdk_wcslen(e->Name));
        ULONG type = 0, size = 0;
        unsigned char *data = NULL;
        if (v) {
            type = v->type;
            size = v->size;
            data = malloc(size ? size : 1);
            if (data)
                memcpy(data, v->data, size);
        }
        pthread_mutex_unlock(&reg_lock);
        if (v && !data)
            return STATUS_NO_MEMORY;
        if (!v) {
            if (e->Flags & RTL_QUERY_REGISTRY_REQUIRED)
                return STATUS_OBJECT_NAME_NOT_FOUND;
            if (e->DefaultType == REG_NONE)
                continue;
            type = e->DefaultType;
            size = e->DefaultLength;
            if (!size && (type == REG_SZ || type == REG_EXPAND_SZ) && e->DefaultData)
                size = (ULONG)((wdk_wcslen(e->DefaultData) + 1) * sizeof(WCHAR));
            data = malloc(size ? size : 1);
            if (!data)
                return STATUS_NO_MEMORY;
            if (size && e->DefaultData)
                memcpy(data, e->DefaultData, size);
        }
        if ((e->Flags & RTL_QUERY_REGISTRY_TYPECHECK) &&
            (e->DefaultType >> RTL_QUERY_REGISTRY_TYPECHECK_SHIFT) != type) {
            free(data);
            return STATUS_OBJECT_TYPE_MISMATCH;
        }
        NTSTATUS st;
        if (e->Flags & RTL_QUERY_REGISTRY_DIRECT)
            st = direct_store(type, data, size, e->EntryContext);
        else
            st = e->QueryRoutine ? e->QueryRoutine(e->Name, type, data, size, Context, e->EntryContext)
                                 : STATUS_SUCCESS;
        free(data);
        if (!NT_SUCCESS(st))
            return st;
    }
    return STATUS_SUCCESS;
}

NTSTATUS RtlQueryRegistryValuesEx(ULONG RelativeTo, PCWSTR Path, PRTL_QUERY_REGISTRY_TABLE QueryTable,
                                  PVOID Context, PVOID Environment)
{
    return RtlQueryRegistryValues(RelativeTo, Path, QueryTable, Context, Environment);
}

NTSTATUS RtlWriteRegistryValue(ULONG RelativeTo, PCWSTR Path, PCWSTR ValueName, ULONG ValueType, PVOID ValueData,
                               ULONG ValueLength)
{
    int which = rtl_key(RelativeTo, Path);
    if (which < 0)
        return STATUS_OBJECT_NAME_NOT_FOUND;
    unsigned char *copy = malloc(ValueLength ? ValueLength : 1);
    if (!copy)
        return STATUS_INSUFFICIENT_RESOURCES;
    if (ValueLength)
        memcpy(copy, ValueData, ValueLength);
    pthread_mutex_lock(&reg_lock);
    int rc = set_value(which, ValueName, wdk_wcslen(ValueName), ValueType, copy, ValueLength);
    pthread_mutex_unlock(&reg_lock);
    if (rc) {
        free(copy);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    return STATUS_SUCCESS;
}
