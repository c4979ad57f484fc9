/* filter_testempty.c - ndk-filter-testempty.so: a filter module with no hooks at all, so every
 * call and callback goes through the layer's own forwarding (the pass-through layer alone). Its
 * one setting, testempty.refuse=1, makes it refuse adapters (the open-failure path). */
#include <ndk/filter.h>
#include <string.h>

static NTSTATUS empty_open(void *module_ctx, ndk_filter_module *module, const char *adapter_name, void **inst_ctx)
{
    (void)adapter_name;
    const char *refuse = ndk_filter_config(module, "refuse");
    *inst_ctx = module_ctx;
    return refuse && strcmp(refuse, "1") == 0 ? STATUS_NOT_SUPPORTED : STATUS_SUCCESS;
}

static const ndk_filter_ops empty_ops = {
    .size = sizeof(ndk_filter_ops),
    .abi_version = NDK_FILTER_ABI_VERSION,
    .name = "testempty",
    .open = empty_open,
};

__attribute__((visibility("default"))) NTSTATUS NdkFilterEntry(ULONG abi_version, const ndk_filter_ops **ops)
{
    if (abi_version < NDK_FILTER_ABI_VERSION)
        return STATUS_NOT_SUPPORTED;
    *ops = &empty_ops;
    return STATUS_SUCCESS;
}
