/*
 * vfy_rules.h - the verify filter's rules: every consumer obligation of NDKPI that a filter
 * between the consumer and the provider can check, each with a stable id, a severity and the
 * section that states it (a section name of our own, mapped to Microsoft's page title in
 * ndk-filters(7)). Ambiguous obligations are warnings, never errors.
 */
#ifndef VFY_RULES_H
#define VFY_RULES_H

enum flt_verify_severity { VFY_ERROR = 0, VFY_WARNING = 1 };

/* One X(...) per rule: enum tag, id, severity, section, Microsoft page title, one-line text. */
#define VFY_RULE_LIST(X) \
    X(USE_AFTER_CLOSE, "use-after-close", VFY_ERROR, "lifetime", "NDKPI Object Lifetime Requirements", \
      "a call into an object whose close was already issued") \
    X(DOUBLE_CLOSE, "double-close", VFY_ERROR, "lifetime", "NDKPI Object Lifetime Requirements", \
      "a second close of the same object") \
    X(CLOSE_DURING_CALL, "close-during-call", VFY_ERROR, "completion", "NDKPI Completion Handling Requirements", \
      "a close issued while another of the consumer's calls into the object is running, outside a completion callback") \
    X(ADAPTER_CLOSE_OPEN, "adapter-close-open-objects", VFY_WARNING, "adapter-close", "CLOSE_NDK_ADAPTER_HANDLER", \
      "the adapter closed while objects created from it are open: the close blocks until they are closed") \
    X(BLOCKING_IN_CALLBACK, "blocking-in-callback", VFY_ERROR, "adapter-close", "CLOSE_NDK_ADAPTER_HANDLER", \
      "a blocking (PASSIVE_LEVEL) call made from inside an NDK callback") \
    X(QUEUE_DEPTH, "queue-depth", VFY_ERROR, "posting", "NDKPI Work Request Posting Requirements", \
      "more requests outstanding on a queue than its depth") \
    X(SGE_COUNT, "sge-count", VFY_ERROR, "posting", "NDKPI Work Request Posting Requirements", \
      "more SGEs than the queue was created with") \
    X(INLINE_SIZE, "inline-size", VFY_ERROR, "sge", "NDK_SGE", \
      "an inline request larger than the QP's InlineDataSize") \
    X(SGE_FOREIGN_PD, "sge-foreign-pd", VFY_ERROR, "sge", "NDK_SGE", \
      "an SGE whose memory token belongs to another protection domain") \
    X(SGE_INVALID_TOKEN, "sge-invalid-token", VFY_ERROR, "sge", "NDK_SGE", \
      "an SGE whose memory token was deregistered, closed or invalidated") \
    X(SGE_RANGE, "sge-range", VFY_ERROR, "sge", "NDK_SGE", \
      "an SGE that is not inside the registered range of its memory region") \
    X(MR_IN_USE, "mr-in-use", VFY_WARNING, "memory", "NDK_FN_DEREGISTER_MR", \
      "a memory region deregistered or closed while a posted request still uses it") \
    X(MR_KIND, "mr-kind", VFY_ERROR, "memory", "NDK_FN_REGISTER_MR", \
      "a registration call that does not match how the memory region was created or registered") \
    X(DEREGISTER_UNREGISTERED, "deregister-unregistered", VFY_ERROR, "memory", "NDK_FN_DEREGISTER_MR", \
      "NdkDeregisterMr on a memory region that is not registered") \
    X(CONCURRENT_QUEUE, "concurrent-queue", VFY_ERROR, "posting", "NDKPI Work Request Posting Requirements", \
      "two work-request calls running at once on the same queue") \
    X(CONCURRENT_CQ, "concurrent-cq", VFY_ERROR, "cq", "NDK_FN_GET_CQ_RESULTS", \
      "NdkGetCqResults(Ex) or NdkArmCq running at once on the same CQ") \
    X(ARM_TYPE, "arm-type", VFY_ERROR, "cq", "NDK_FN_ARM_CQ", \
      "NdkArmCq with a type that is not NDK_CQ_NOTIFY_*") \
    X(CQ_FEATURE, "cq-feature", VFY_ERROR, "cq", "NDK_FN_RESIZE_CQ", \
      "NdkResizeCq or NdkControlCqInterruptModeration on an adapter that does not advertise it") \
    X(CONNECTOR_STATE, "connector-state", VFY_ERROR, "cm", "NDK_FN_ACCEPT", \
      "Connect, CompleteConnect, Accept or Reject on a connector in the wrong state") \
    X(CONNECTION_DATA_STATE, "connection-data-state", VFY_WARNING, "cm", "NDK_FN_GET_CONNECTION_DATA", \
      "NdkGetConnectionData after the connection was accepted or completed") \
    X(QP_REUSE, "qp-reuse", VFY_ERROR, "disconnect", "NDK_FN_DISCONNECT", \
      "a QP bound to a second connection") \
    X(ADDRESS_LENGTH, "address-length", VFY_ERROR, "addressing", "NDK_FN_CONNECT", \
      "an address whose length is too small for its family, or of another family") \
    X(PRIVATE_DATA_LENGTH, "private-data-length", VFY_ERROR, "cm", "NDK_FN_CONNECT", \
      "more private data than MaxCallerData / MaxCalleeData") \
    X(BUFFER_PROTOCOL, "buffer-protocol", VFY_ERROR, "cm", "NDK_FN_GET_CONNECTION_DATA", \
      "a NULL buffer with a nonzero length, or a NULL length pointer, for a sized call") \
    X(OP_FLAGS, "op-flags", VFY_WARNING, "posting", "NDKPI Work Request Posting Requirements", \
      "operation flags that the call does not document") \
    X(DEFER_UNTERMINATED, "defer-unterminated", VFY_WARNING, "defer", "NDKPI Deferred Processing Scheme", \
      "a chain of NDK_OP_FLAG_DEFER requests not ended by a request without it") \
    X(DISCONNECT_OUTSTANDING, "disconnect-outstanding", VFY_WARNING, "disconnect", "NDK_FN_DISCONNECT", \
      "NdkDisconnect while initiator requests are outstanding") \
    X(RECEIVE_ON_SRQ_QP, "receive-on-srq-qp", VFY_WARNING, "posting", "NDK_FN_CREATE_QP_WITH_SRQ", \
      "NdkReceive on a QP that takes its receives from an SRQ")

enum flt_verify_rule {
#define VFY_ENUM(tag, id, sev, sec, page, text) VFY_##tag,
    VFY_RULE_LIST(VFY_ENUM)
#undef VFY_ENUM
    VFY_RULE_COUNT
};

struct flt_verify_rule_info {
    const char *id;
    enum flt_verify_severity severity;
    const char *section;
    const char *page;
    const char *text;
};

/* The rule's row; never NULL for a valid rule. */
const struct flt_verify_rule_info *flt_verify_rule_info(enum flt_verify_rule rule);

#endif
