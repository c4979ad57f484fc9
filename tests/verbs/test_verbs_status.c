/* test_verbs_status: the verbs provider's one status table (ndk-verbs(7), STATUS codes), row by row
 * for the entries the conformance suite and consumers depend on. */
#include <errno.h>
#include <stdio.h>

#include "verbs.h"
#include "testlib.h"

#define EXPECT(call, want) CHECK_MSG((call) == (want), "%s = 0x%08x, expected %s", #call, (unsigned)(call), #want)

int main(void)
{
    EXPECT(vb_status_from_wc(IBV_WC_SUCCESS, false), STATUS_SUCCESS);
    EXPECT(vb_status_from_wc(IBV_WC_WR_FLUSH_ERR, true), STATUS_CANCELLED);
    EXPECT(vb_status_from_wc(IBV_WC_LOC_LEN_ERR, true), STATUS_BUFFER_TOO_SMALL);
    EXPECT(vb_status_from_wc(IBV_WC_LOC_LEN_ERR, false), STATUS_INVALID_PARAMETER);
    EXPECT(vb_status_from_wc(IBV_WC_REM_ACCESS_ERR, false), STATUS_ACCESS_VIOLATION);
    EXPECT(vb_status_from_wc(IBV_WC_LOC_PROT_ERR, false), STATUS_ACCESS_VIOLATION);
    EXPECT(vb_status_from_wc(IBV_WC_REM_OP_ERR, false), STATUS_DATA_ERROR);
    EXPECT(vb_status_from_wc(IBV_WC_GENERAL_ERR, false), STATUS_DATA_ERROR);
    EXPECT(vb_status_from_wc(IBV_WC_RETRY_EXC_ERR, false), STATUS_IO_TIMEOUT);
    EXPECT(vb_status_from_wc(IBV_WC_RNR_RETRY_EXC_ERR, false), STATUS_IO_TIMEOUT);
    EXPECT(vb_status_from_wc(IBV_WC_REM_ABORT_ERR, false), STATUS_CONNECTION_ABORTED);
    EXPECT(vb_status_from_wc(IBV_WC_FATAL_ERR, false), STATUS_INTERNAL_ERROR);

    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_REJECTED, 28, false, false), STATUS_CONNECTION_REFUSED);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_REJECTED, 4, false, false), STATUS_IO_TIMEOUT);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_REJECTED, -ECONNREFUSED, true, false), STATUS_CONNECTION_REFUSED);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_REJECTED, 28, false, true), STATUS_CONNECTION_ABORTED);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT, false, false), STATUS_IO_TIMEOUT);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_ADDR_ERROR, -ENETUNREACH, false, false), STATUS_NETWORK_UNREACHABLE);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH, false, false), STATUS_HOST_UNREACHABLE);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, false, false), STATUS_IO_TIMEOUT);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET, true, false), STATUS_CONNECTION_RESET);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL, true, false), STATUS_CONNECTION_REFUSED);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL, false, false), STATUS_CONNECTION_ABORTED);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_DISCONNECTED, 0, false, false), STATUS_SUCCESS);
    EXPECT(vb_status_from_cm(RDMA_CM_EVENT_DISCONNECTED, -ETIMEDOUT, false, false), STATUS_IO_TIMEOUT);

    EXPECT(vb_status_from_bind(-EADDRINUSE, false), STATUS_SHARING_VIOLATION);
    EXPECT(vb_status_from_bind(-EADDRNOTAVAIL, true), STATUS_TOO_MANY_ADDRESSES);
    EXPECT(vb_status_from_bind(-EADDRNOTAVAIL, false), STATUS_INVALID_ADDRESS);
    EXPECT(vb_status_from_bind(-ENODEV, false), STATUS_INVALID_ADDRESS);
    printf("ok: status table\n");
    return 0;
}
