/*
 * rdmapair.h - the shared part of two NDK consumer drivers written the way a Windows driver
 * developer writes them (WDM, WSK's NDK extension), which OpenNDK builds with its kernel-API kit
 * and runs under ndkdrv:
 *
 *   rdmapair_server.sys  listens on Address:Port of the interface IfIndex, accepts one
 *                        connection, exposes 64 KiB through a fast-registered MR;
 *   rdmapair_client.sys  connects, RDMA-Reads the first half of the server's region, RDMA-Writes
 *                        the second half, and exchanges Send/Receive messages around both.
 *
 * Every byte that crosses is checked against a seeded pattern. Parameters come from the
 * service key's Parameters subkey (IfIndex, Address, Port; the client also LocalAddress).
 *
 * Message flow:  server -> HELLO {token, address, length, seeds}
 *                client: RDMA Read of [0, 32 KiB), RDMA Write of [32 KiB, 64 KiB)
 *                client -> DONE;  server checks the written half;  server -> ACK {status}
 *                client disconnects; both close everything and unload.
 */
#ifndef RDMAPAIR_H
#define RDMAPAIR_H

#include <ntddk.h>
#include <ndis.h>
#include <ndkpi.h>
#include <wsk.h>
#include <wskndk.h>

#define PAIR_TAG            'riaP'
#define PAIR_DATA_SIZE      (64 * 1024)          /* the region the server exposes */
#define PAIR_HALF           (PAIR_DATA_SIZE / 2) /* read half, then written half */
#define PAIR_MSG_SIZE       1024                 /* every Send/Receive message */
#define PAIR_MSG_SLOTS      3                    /* 2 receive slots + 1 send slot */
#define PAIR_MSG_AREA       (PAIR_MSG_SIZE * PAIR_MSG_SLOTS)
#define PAIR_WAIT_MS        20000                /* every wait for the peer */
#define PAIR_MAGIC          0x5244504Eu          /* "NPDR" */
#define PAIR_PRIVATE_DATA   "openndk-rdmapair"
#define PAIR_BENCH_DEPTH    16                   /* RDMA Writes in flight in the client's bench */

typedef enum _PAIR_MSG_TYPE { PairMsgHello = 1, PairMsgDone = 2, PairMsgAck = 3 } PAIR_MSG_TYPE;

/* The fixed head of every message; the rest of the PAIR_MSG_SIZE bytes is pattern(Seed). */
typedef struct _PAIR_MSG {
    ULONG   Magic;
    ULONG   Type;
    ULONG64 RemoteAddress;   /* HELLO: where the region starts, as the peer addresses it */
    ULONG   RemoteToken;     /* HELLO: its remote token */
    ULONG   Length;          /* HELLO: region length */
    ULONG   ReadSeed;        /* HELLO: pattern of the first half */
    ULONG   WriteSeed;       /* HELLO: pattern the client writes into the second half */
    ULONG   Seed;            /* pattern of this message's tail */
    LONG    Status;          /* ACK: the server's verdict on the written half */
} PAIR_MSG, *PPAIR_MSG;

/* One operation a thread waits for: a request completion, a create/close completion or a work
 * request's CQ result. The event is set at DISPATCH_LEVEL by the callback. */
typedef struct _PAIR_REQUEST {
    KEVENT             Event;
    NTSTATUS           Status;
    ULONG              Bytes;
    NDK_OBJECT_HEADER *Object;   /* create completions */
} PAIR_REQUEST, *PPAIR_REQUEST;

/* Everything one driver instance owns; allocated from nonpaged pool in DriverEntry. */
typedef struct _PAIR_CONTEXT {
    const char               *Name;             /* "server" or "client", for messages */
    PDEVICE_OBJECT            Device;           /* for the IO work item */
    PIO_WORKITEM              WorkItem;
    EX_RUNDOWN_REF            Rundown;          /* callbacks and the work item vs. teardown */

    /* parameters */
    ULONG                     IfIndex;
    SOCKADDR_INET             Address;          /* server: listen here; client: connect here */
    SOCKADDR_INET             LocalAddress;     /* client: the source address */

    /* WSK */
    WSK_REGISTRATION          WskRegistration;
    WSK_PROVIDER_NPI          WskProvider;
    WSK_PROVIDER_NDK_DISPATCH NdkDispatch;
    BOOLEAN                   WskRegistered, WskCaptured;

    /* NDK objects */
    NDK_ADAPTER              *Adapter;
    NDK_ADAPTER_INFO          AdapterInfo;
    NDK_CQ                   *Cq;
    NDK_PD                   *Pd;
    NDK_QP                   *Qp;
    NDK_LISTENER             *Listener;
    NDK_CONNECTOR            *Connector;
    NDK_MR                   *MsgMr;            /* the message slots, registered */
    NDK_MR                   *DataMr;           /* the data region (server: fast-registered) */
    NDK_LOGICAL_ADDRESS_MAPPING *Lam;           /* server: the data region's pages */
    BOOLEAN                   Connected;

    /* memory: one nonpaged allocation, data region first, then the message slots */
    PUCHAR                    Buffer;
    PMDL                      DataMdl;
    PMDL                      MsgMdl;
    UINT32                    MsgToken;         /* local token of the message slots */
    UINT32                    DataToken;        /* local token of the data region */

    /* completions */
    KSPIN_LOCK                CqLock;           /* serialises NdkArmCq and NdkGetCqResults */
    KEVENT                    CqFailed;         /* set when the CQ reports an error */
    NTSTATUS                  CqStatus;
    KEVENT                    Accepted;         /* server: the work item finished the accept */
    NTSTATUS                  AcceptStatus;
    KEVENT                    PeerDisconnected;
    KSPIN_LOCK                StateLock;        /* guards Connector hand-over from the connect event */
    PAIR_REQUEST              Req;              /* the one create/request under way at PASSIVE */
    PAIR_REQUEST              CloseReq;         /* closes (teardown, one at a time) */
    PAIR_REQUEST              Recv[2];          /* receive slots' CQ results */
    PAIR_REQUEST              SendReq;
    PAIR_REQUEST              RdmaReq;          /* Read, Write, FastRegister */

    /* client bench (BenchWrites parameter): 64 KiB RDMA Writes reposted from the CQ callback */
    PAIR_REQUEST              Bench[PAIR_BENCH_DEPTH];
    ULONG                     BenchTotal, BenchPosted, BenchCompleted;   /* under CqLock */
    NTSTATUS                  BenchStatus;
    KEVENT                    BenchDone;
    NDK_SGE                   BenchSge;
    ULONG64                   BenchRemote;
    UINT32                    BenchToken;
} PAIR_CONTEXT, *PPAIR_CONTEXT;

/* rdmapair_params.c: PASSIVE_LEVEL */
NTSTATUS PairReadParameters(PUNICODE_STRING RegistryPath, PPAIR_CONTEXT Ctx, BOOLEAN Client);
NTSTATUS PairOpenParameters(PUNICODE_STRING RegistryPath, PHANDLE Key);   /* <RegistryPath>\Parameters */
NTSTATUS PairQueryUlong(HANDLE Key, PCWSTR Name, PULONG Out);
NTSTATUS PairQueryAddress(HANDLE Key, PCWSTR Name, USHORT Port, SOCKADDR_INET *Address);

/* rdmapair_wsk.c: PASSIVE_LEVEL */
NTSTATUS PairOpenAdapter(PPAIR_CONTEXT Ctx);
VOID PairCloseAdapter(PPAIR_CONTEXT Ctx);

/* rdmapair_ndk.c */
PPAIR_CONTEXT PairContextAllocate(const char *Name);                 /* zeroed, locks and events set up */
VOID PairRequestInit(PPAIR_REQUEST Req);
VOID PairRequestDone(PVOID Context, NTSTATUS Status);                /* NDK_FN_REQUEST_COMPLETION */
VOID PairCreateDone(PVOID Context, NTSTATUS Status, NDK_OBJECT_HEADER *Object);  /* NDK_FN_CREATE_COMPLETION */
/* Status as the call returned it; waits when it is STATUS_PENDING. PASSIVE. */
NTSTATUS PairFinish(PPAIR_CONTEXT Ctx, PPAIR_REQUEST Req, NTSTATUS Status, const char *What);
/* For a create: as PairFinish; *Late is the object a pending create delivered (else NULL). */
NTSTATUS PairCreated(PPAIR_CONTEXT Ctx, NTSTATUS Status, NDK_OBJECT_HEADER **Late, const char *What);
VOID PairClose(PPAIR_CONTEXT Ctx, NDK_OBJECT_HEADER *Object, NDK_FN_CLOSE_OBJECT Close);       /* PASSIVE */
/* Closes an object with no context of ours, waiting (bounded) when the close pends. PASSIVE. */
VOID PairCloseAndWait(NDK_OBJECT_HEADER *Object, NDK_FN_CLOSE_OBJECT Close);
NTSTATUS PairCreateResources(PPAIR_CONTEXT Ctx);     /* PASSIVE: CQ, PD, QP, buffers, MRs */
NTSTATUS PairPostReceive(PPAIR_CONTEXT Ctx, ULONG Slot);
NTSTATUS PairSendMessage(PPAIR_CONTEXT Ctx, const PAIR_MSG *Head);  /* PASSIVE: posts and waits */
NTSTATUS PairWaitReceive(PPAIR_CONTEXT Ctx, ULONG Slot, ULONG Type, PPAIR_MSG Out);  /* PASSIVE */
NTSTATUS PairRdma(PPAIR_CONTEXT Ctx, BOOLEAN Write, ULONG LocalOffset, ULONG64 RemoteAddress, UINT32 RemoteToken,
                  ULONG Length);                                     /* PASSIVE: posts and waits */
VOID PairTeardown(PPAIR_CONTEXT Ctx);                                /* PASSIVE */
/* Posts BenchTotal RDMA Writes of PAIR_DATA_SIZE to RemoteAddress, PAIR_BENCH_DEPTH at a time,
 * reposting from the CQ callback; waits for the last. PASSIVE. */
NTSTATUS PairBenchWrites(PPAIR_CONTEXT Ctx, ULONG64 RemoteAddress, UINT32 RemoteToken, ULONG Count,
                         PULONG64 ElapsedUs);
VOID PairDisconnectEvent(PVOID Context);                             /* DISPATCH */
VOID PairFillPattern(PUCHAR Buffer, ULONG Length, ULONG Seed);
/* Offset of the first byte that differs from pattern(Seed), or Length when all match. */
ULONG PairCheckPattern(const UCHAR *Buffer, ULONG Length, ULONG Seed);
PUCHAR PairMsgSlot(PPAIR_CONTEXT Ctx, ULONG Slot);

#define PairLog(Ctx, Format, ...) \
    DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "rdmapair-%s: " Format "\n", (Ctx)->Name, ##__VA_ARGS__)

#endif /* RDMAPAIR_H */
