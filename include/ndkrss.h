/*
 * ndkrss.h - the NDK adapter's RSS extension: which processors the adapter steers receive
 * processing to, so a consumer can place its CQs and their notification work beside them.
 *
 * A consumer asks the adapter for it through NdkQueryExtension with
 * NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH; a provider that cannot name such processors answers
 * STATUS_NOT_SUPPORTED (docs/status.md: both OpenNDK providers do, their progress threads are not
 * bound to processors).
 */
#ifndef NDKRSS_H
#define NDKRSS_H

#include "ndkpi.h"
#include "ndisndk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* {bab27026-86c3-4e31-9f72-4936ded76d42} */
#define NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH_INIT \
    { 0xbab27026, 0x86c3, 0x4e31, { 0x9f, 0x72, 0x49, 0x36, 0xde, 0xd7, 0x6d, 0x42 } }
DEFINE_GUID(NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH, 0xbab27026, 0x86c3, 0x4e31, 0x9f, 0x72, 0x49, 0x36, 0xde,
            0xd7, 0x6d, 0x42);

/* Fills up to *Size bytes at RssProcessorInfo (which may be NULL to ask for the size) and sets
 * *Size to the bytes needed; an NDIS_STATUS. At most DISPATCH_LEVEL. */
typedef NDIS_STATUS (*NDK_FN_GET_RSS_PROCESSOR_INFO)(NDK_ADAPTER *pNdkAdapter,
                                                     PNDIS_RSS_PROCESSOR_INFO RssProcessorInfo, PSIZE_T Size);

typedef struct _NDK_EXTENSION_ADAPTER_RSS_DISPATCH {
    NDK_FN_GET_RSS_PROCESSOR_INFO NdkGetRssProcessorInfo;
} NDK_EXTENSION_ADAPTER_RSS_DISPATCH;

#ifdef __cplusplus
}
#endif

#endif /* NDKRSS_H */
