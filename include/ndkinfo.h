/*
 * ndkinfo.h - NDK version, adapter limits and RDMA technology (Microsoft's "ndkinfo.h header").
 */
#ifndef NDKINFO_H
#define NDKINFO_H

#include "ndk/nt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _NDK_VERSION {
    USHORT Major;
    USHORT Minor;
} NDK_VERSION;

/* The versions this interface describes; 2.1 is the newest. */
#define NDK_VERSION_1_1_MAJOR 1
#define NDK_VERSION_1_1_MINOR 1
#define NDK_VERSION_1_2_MINOR 2
#define NDK_VERSION_2_MAJOR   2
#define NDK_VERSION_2_1_MINOR 1

typedef enum _NDK_RDMA_TECHNOLOGY {
    NdkUndefined = 0,
    NdkiWarp,
    NdkInfiniBand,
    NdkRoCE,
    NdkRoCEv2,
    NdkMaxTechnology
} NDK_RDMA_TECHNOLOGY;

#define NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED               0x00000001
#define NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED          0x00000002
#define NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED    0x00000004
#define NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED               0x00000008
#define NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED 0x00000010
#define NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED                  0x00000100
#define NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED       0x00010000

typedef struct _NDK_ADAPTER_INFO {
    NDK_VERSION         Version;
    UINT32              VendorId;
    UINT32              DeviceId;
    SIZE_T              MaxRegistrationSize;
    SIZE_T              MaxWindowSize;
    ULONG               FRMRPageCount;
    ULONG               MaxInitiatorRequestSge;
    ULONG               MaxReceiveRequestSge;
    ULONG               MaxReadRequestSge;
    ULONG               MaxTransferLength;
    ULONG               MaxInlineDataSize;
    ULONG               MaxInboundReadLimit;
    ULONG               MaxOutboundReadLimit;
    ULONG               MaxReceiveQueueDepth;
    ULONG               MaxInitiatorQueueDepth;
    ULONG               MaxSrqDepth;
    ULONG               MaxCqDepth;
    ULONG               LargeRequestThreshold;
    ULONG               MaxCallerData;
    ULONG               MaxCalleeData;
    ULONG               AdapterFlags;
    NDK_RDMA_TECHNOLOGY RdmaTechnology;
} NDK_ADAPTER_INFO;

/* Size of the structure in headers that predate RdmaTechnology (WDKs before NDK 2.0). */
#define NDK_ADAPTER_INFO_SIZE_WITHOUT_TECHNOLOGY ((ULONG)offsetof(NDK_ADAPTER_INFO, RdmaTechnology))

#ifdef __cplusplus
}
#endif

#endif /* NDKINFO_H */
