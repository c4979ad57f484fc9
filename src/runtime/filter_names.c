/* filter_names.c - names of the filter API's function ids, callback types and object types,
 * for filters that log (trace) or report (verify). */
#pragma GCC visibility push(default)
#include <ndk/filter.h>
#pragma GCC visibility pop

static const struct {
    const char     *name;
    NDK_OBJECT_TYPE type;
} fn_table[NDK_FILTER_FN_COUNT] = {
    [NDK_FILTER_FN_NONE] = { "?", NdkObjectTypeUndefined },
#define NF_NAME_ENTRY_(id, slot, otype) [NDK_FILTER_FN_##id] = { #slot, NdkObjectType##otype },
    NDK_FILTER_FN_LIST(NF_NAME_ENTRY_)
#undef NF_NAME_ENTRY_
};

const char *ndk_filter_fn_name(ndk_filter_fn fn)
{
    return (unsigned)fn < NDK_FILTER_FN_COUNT ? fn_table[fn].name : "?";
}

NDK_OBJECT_TYPE ndk_filter_fn_object_type(ndk_filter_fn fn)
{
    return (unsigned)fn < NDK_FILTER_FN_COUNT ? fn_table[fn].type : NdkObjectTypeUndefined;
}

const char *ndk_filter_object_type_name(NDK_OBJECT_TYPE type)
{
    switch (type) {
    case NdkObjectTypeAdapter: return "adapter";
    case NdkObjectTypeQp: return "qp";
    case NdkObjectTypeCq: return "cq";
    case NdkObjectTypeMr: return "mr";
    case NdkObjectTypeMw: return "mw";
    case NdkObjectTypePd: return "pd";
    case NdkObjectTypeSharedEndpoint: return "sep";
    case NdkObjectTypeConnector: return "connector";
    case NdkObjectTypeListener: return "listener";
    case NdkObjectTypeSrq: return "srq";
    default: return "object";
    }
}

const char *ndk_filter_cb_name(ndk_filter_cb_type type)
{
    switch (type) {
    case NDK_FILTER_CB_CLOSE_COMPLETION: return "NdkCloseCompletion";
    case NDK_FILTER_CB_CREATE_COMPLETION: return "NdkCreateCompletion";
    case NDK_FILTER_CB_REQUEST_COMPLETION: return "NdkRequestCompletion";
    case NDK_FILTER_CB_CQ_NOTIFICATION: return "NdkCqNotificationCallback";
    case NDK_FILTER_CB_CONNECT_EVENT: return "NdkConnectEventCallback";
    case NDK_FILTER_CB_DISCONNECT_EVENT: return "NdkDisconnectEventCallback";
    case NDK_FILTER_CB_DISCONNECT_EVENT_EX: return "NdkDisconnectEventCallbackEx";
    case NDK_FILTER_CB_SRQ_NOTIFICATION: return "NdkSrqNotificationCallback";
    }
    return "?";
}
