/* status.c - the one table from verbs and rdma_cm outcomes to NTSTATUS (map §3). The wc column
 * uses the iwarp provider's vocabulary (protection -> ACCESS_VIOLATION, too long ->
 * BUFFER_TOO_SMALL, other protocol errors -> DATA_ERROR) so the conformance suite sees one. */
#include "verbs.h"

#include <errno.h>

NTSTATUS vb_status_from_wc(enum ibv_wc_status st, bool receive)
{
    switch (st) {
    case IBV_WC_SUCCESS: return STATUS_SUCCESS;
    case IBV_WC_WR_FLUSH_ERR: return STATUS_CANCELLED;
    case IBV_WC_LOC_LEN_ERR: return receive ? STATUS_BUFFER_TOO_SMALL : STATUS_INVALID_PARAMETER;
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_MW_BIND_ERR:
    case IBV_WC_REM_ACCESS_ERR: return STATUS_ACCESS_VIOLATION;
    case IBV_WC_LOC_QP_OP_ERR: return STATUS_INVALID_PARAMETER;
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_BAD_RESP_ERR:
    case IBV_WC_GENERAL_ERR: return STATUS_DATA_ERROR;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR: return STATUS_IO_TIMEOUT;
    case IBV_WC_REM_ABORT_ERR: return STATUS_CONNECTION_ABORTED;
    default: return STATUS_INTERNAL_ERROR;
    }
}

/* status is the event's status field (negative errno, or an IB CM reject reason for REJECTED). */
NTSTATUS vb_status_from_cm(enum rdma_cm_event_type ev, int status, bool iwarp, bool passive)
{
    switch (ev) {
    case RDMA_CM_EVENT_ADDR_ERROR:
        if (status == -ETIMEDOUT)
            return STATUS_IO_TIMEOUT;
        if (status == -ENETUNREACH || status == -ENODEV)
            return STATUS_NETWORK_UNREACHABLE;
        return STATUS_HOST_UNREACHABLE;
    case RDMA_CM_EVENT_ROUTE_ERROR:
        return status == -ETIMEDOUT ? STATUS_IO_TIMEOUT : STATUS_HOST_UNREACHABLE;
    case RDMA_CM_EVENT_UNREACHABLE:
        if (passive)
            return status == -ETIMEDOUT ? STATUS_IO_TIMEOUT : STATUS_CONNECTION_ABORTED;
        return status == -ETIMEDOUT || !iwarp ? STATUS_IO_TIMEOUT : STATUS_HOST_UNREACHABLE;
    case RDMA_CM_EVENT_REJECTED:
        if (passive)
            return STATUS_CONNECTION_ABORTED;
        if (!iwarp && status == 4)          /* IB_CM_REJ_TIMEOUT */
            return STATUS_IO_TIMEOUT;
        return STATUS_CONNECTION_REFUSED;
    case RDMA_CM_EVENT_CONNECT_ERROR:
        if (status == -ETIMEDOUT)
            return STATUS_IO_TIMEOUT;
        if (status == -ECONNRESET)
            return STATUS_CONNECTION_RESET;
        /* siw reports both an MPA reject and a TCP connect to a port nobody listens on as
         * CONNECT_ERROR -EINVAL (observed in the guest): for an initiator that is a refusal. */
        if (status == -ECONNREFUSED || (iwarp && !passive))
            return STATUS_CONNECTION_REFUSED;
        return STATUS_CONNECTION_ABORTED;
    case RDMA_CM_EVENT_DISCONNECTED:
        if (status == -ETIMEDOUT)
            return STATUS_IO_TIMEOUT;
        return status == -ECONNRESET ? STATUS_CONNECTION_RESET : STATUS_SUCCESS;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        return STATUS_CANCELLED;
    default:
        return status ? vb_status_from_errno(status) : STATUS_SUCCESS;
    }
}

NTSTATUS vb_status_from_bind(int err, bool port_zero)
{
    if (err < 0)
        err = -err;
    if (err == EADDRINUSE)
        return STATUS_SHARING_VIOLATION;
    if (err == EADDRNOTAVAIL && port_zero)
        return STATUS_TOO_MANY_ADDRESSES;
    if (err == EADDRNOTAVAIL || err == ENODEV)
        return STATUS_INVALID_ADDRESS;
    return vb_status_from_errno(err);
}

NTSTATUS vb_status_from_errno(int err)
{
    return ndk_status_from_errno(err);
}
