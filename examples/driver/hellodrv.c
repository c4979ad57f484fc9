/*
 * hellodrv.c - the smallest NDK consumer driver, written against the WDK's headers only, that
 * OpenNDK's kernel-API kit builds into a shared object and ndkdrv(1) loads:
 *
 *     ndkdrv run hellodrv.so --param IfIndex=1
 *
 * DriverEntry does what a Windows kernel consumer does to reach NDK: it registers with Winsock
 * Kernel, captures the provider NPI, asks WskControlClient for the NDK extension's dispatch
 * table and opens the NDK adapter of one interface (by its index). It then registers a buffer
 * from nonpaged pool, described by an MDL, with the adapter. DriverUnload undoes all of it in
 * reverse order; ndkdrv reports anything left behind. Nothing in this file is specific to
 * OpenNDK: the same source builds with the WDK.
 */
#include <ntddk.h>
#include <ndkpi.h>
#include <wsk.h>
#include <wskndk.h>

#define HELLO_TAG  'oleH'    /* pool tag: shows as "Helo" in pool dumps */
#define HELLO_SIZE (16 * 1024)

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD HelloUnload;

/* What the driver holds between DriverEntry and DriverUnload. */
static struct {
    WSK_REGISTRATION          Registration;
    WSK_PROVIDER_NPI          Provider;
    WSK_PROVIDER_NDK_DISPATCH Ndk;
    NDK_ADAPTER              *Adapter;
    NDK_PD                   *Pd;
    NDK_MR                   *Mr;
    PVOID                     Buffer;
    PMDL                      Mdl;
    BOOLEAN                   Registered, Captured;
} Hello;

/* A request the driver waits for at PASSIVE_LEVEL. */
typedef struct _HELLO_REQUEST {
    KEVENT   Event;
    NTSTATUS Status;
} HELLO_REQUEST;

/* NDK completions arrive at up to DISPATCH_LEVEL: never wait here, only record and wake. */
static VOID HelloRequestDone(PVOID Context, NTSTATUS Status)
{
    HELLO_REQUEST *request = (HELLO_REQUEST *)Context;
    request->Status = Status;
    KeSetEvent(&request->Event, IO_NO_INCREMENT, FALSE);
}

static VOID HelloCloseDone(PVOID Context)
{
    KeSetEvent((PKEVENT)Context, IO_NO_INCREMENT, FALSE);
}

/* Closes an NDK object, waiting when the provider completes the close later. PASSIVE_LEVEL. */
static VOID HelloClose(NDK_OBJECT_HEADER *Object, NDK_FN_CLOSE_OBJECT Close)
{
    KEVENT done;
    KeInitializeEvent(&done, NotificationEvent, FALSE);
    if (Close(Object, HelloCloseDone, &done) == STATUS_PENDING)
        KeWaitForSingleObject(&done, Executive, KernelMode, FALSE, NULL);
}

/* The IfIndex value of the service's Parameters key (ndkdrv --param IfIndex=N puts it there). */
static NTSTATUS HelloReadIfIndex(PUNICODE_STRING RegistryPath, PULONG IfIndex)
{
    UNICODE_STRING path, name = RTL_CONSTANT_STRING(L"IfIndex");
    OBJECT_ATTRIBUTES attributes;
    struct {
        KEY_VALUE_PARTIAL_INFORMATION Info;
        WCHAR                         Room[16];
    } value;
    WCHAR buffer[256];
    HANDLE key;
    ULONG length;
    NTSTATUS status;

    path.Buffer = buffer;
    path.Length = 0;
    path.MaximumLength = sizeof(buffer);
    RtlCopyUnicodeString(&path, RegistryPath);
    status = RtlAppendUnicodeToString(&path, L"\\Parameters");
    if (!NT_SUCCESS(status))
        return status;
    InitializeObjectAttributes(&attributes, &path, OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE, NULL, NULL);
    status = ZwOpenKey(&key, KEY_READ, &attributes);
    if (!NT_SUCCESS(status))
        return status;
    status = ZwQueryValueKey(key, &name, KeyValuePartialInformation, &value, sizeof(value), &length);
    ZwClose(key);
    if (!NT_SUCCESS(status))
        return status;
    if (value.Info.Type == REG_DWORD) {
        *IfIndex = *(PULONG)value.Info.Data;
        return STATUS_SUCCESS;
    }
    /* A REG_SZ number: UNICODE_STRING to ULONG. */
    UNICODE_STRING text = { (USHORT)(value.Info.DataLength - sizeof(WCHAR)), (USHORT)value.Info.DataLength,
                            (PWCH)value.Info.Data };
    return RtlUnicodeStringToInteger(&text, 10, IfIndex);
}

static VOID HelloUnload(PDRIVER_OBJECT DriverObject)
{
    UNREFERENCED_PARAMETER(DriverObject);
    PAGED_CODE();
    if (Hello.Mr)
        HelloClose(&Hello.Mr->Header, Hello.Mr->Dispatch->NdkCloseMr);   /* also deregisters */
    if (Hello.Pd)
        HelloClose(&Hello.Pd->Header, Hello.Pd->Dispatch->NdkClosePd);
    if (Hello.Adapter)
        Hello.Ndk.WskCloseNdkAdapter(Hello.Provider.Client, Hello.Adapter);
    if (Hello.Captured)
        WskReleaseProviderNPI(&Hello.Registration);
    if (Hello.Registered)
        WskDeregister(&Hello.Registration);
    if (Hello.Mdl)
        IoFreeMdl(Hello.Mdl);
    if (Hello.Buffer)
        ExFreePoolWithTag(Hello.Buffer, HELLO_TAG);
    DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "hellodrv: unloaded\n");
}

NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    static const WSK_CLIENT_DISPATCH dispatch = { MAKE_WSK_VERSION(1, 0), 0, NULL };
    WSK_CLIENT_NPI client = { NULL, &dispatch };
    NDK_VERSION version = { 1, 0 };   /* major 1, lowest minor we accept: 0 */
    NDK_ADAPTER_INFO info;
    ULONG ifIndex = 0, size = sizeof(info);
    HELLO_REQUEST request;
    NTSTATUS status;

    PAGED_CODE();
    /* From here on DriverUnload cleans up whatever was set up, also after a failure below. */
    DriverObject->DriverUnload = HelloUnload;
    status = HelloReadIfIndex(RegistryPath, &ifIndex);
    if (!NT_SUCCESS(status)) {
        DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "hellodrv: no IfIndex parameter (0x%08X)\n", status);
        return status;
    }

    /* 1. Winsock Kernel: register, capture the provider, fetch the NDK extension's table. */
    status = WskRegister(&client, &Hello.Registration);
    if (NT_SUCCESS(status)) {
        Hello.Registered = TRUE;
        status = WskCaptureProviderNPI(&Hello.Registration, WSK_INFINITE_WAIT, &Hello.Provider);
    }
    if (NT_SUCCESS(status)) {
        Hello.Captured = TRUE;
        status = Hello.Provider.Dispatch->WskControlClient(Hello.Provider.Client, WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH,
                                                           0, NULL, sizeof(Hello.Ndk), &Hello.Ndk, NULL, NULL);
    }
    /* 2. The NDK adapter of the interface, and what it can do. */
    if (NT_SUCCESS(status))
        status = Hello.Ndk.WskOpenNdkAdapter(Hello.Provider.Client, version, ifIndex, &Hello.Adapter);
    if (NT_SUCCESS(status))
        status = Hello.Adapter->Dispatch->NdkQueryAdapterInfo(Hello.Adapter, &info, &size);
    if (!NT_SUCCESS(status)) {
        DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "hellodrv: no NDK adapter on interface %lu (0x%08X)\n",
                   (unsigned long)ifIndex, status);
        HelloUnload(DriverObject);   /* a failed DriverEntry gets no DriverUnload */
        return status;
    }
    DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL,
               "hellodrv: NDK %u.%u on interface %lu: %lu-byte transfers, %lu SGEs, queues of %lu\n",
               info.Version.Major, info.Version.Minor, (unsigned long)ifIndex, (unsigned long)info.MaxTransferLength,
               (unsigned long)info.MaxInitiatorRequestSge, (unsigned long)info.MaxInitiatorQueueDepth);

    /* 3. A buffer from nonpaged pool, described by an MDL, registered as a memory region. */
    Hello.Buffer = ExAllocatePool2(POOL_FLAG_NON_PAGED, HELLO_SIZE, HELLO_TAG);
    Hello.Mdl = Hello.Buffer ? IoAllocateMdl(Hello.Buffer, HELLO_SIZE, FALSE, FALSE, NULL) : NULL;
    status = Hello.Mdl ? STATUS_SUCCESS : STATUS_INSUFFICIENT_RESOURCES;
    if (NT_SUCCESS(status)) {
        MmBuildMdlForNonPagedPool(Hello.Mdl);
        status = Hello.Adapter->Dispatch->NdkCreatePd(Hello.Adapter, NULL, NULL, &Hello.Pd);
    }
    if (NT_SUCCESS(status))
        status = Hello.Pd->Dispatch->NdkCreateMr(Hello.Pd, FALSE, NULL, NULL, &Hello.Mr);
    if (NT_SUCCESS(status)) {
        KeInitializeEvent(&request.Event, NotificationEvent, FALSE);
        status = Hello.Mr->Dispatch->NdkRegisterMr(Hello.Mr, Hello.Mdl, HELLO_SIZE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                                   HelloRequestDone, &request);
        if (status == STATUS_PENDING) {   /* the completion comes later, on another thread */
            KeWaitForSingleObject(&request.Event, Executive, KernelMode, FALSE, NULL);
            status = request.Status;
        }
    }
    if (!NT_SUCCESS(status)) {
        DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "hellodrv: registering memory failed (0x%08X)\n", status);
        HelloUnload(DriverObject);
        return status;
    }
    DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "hellodrv: %u bytes registered, local token 0x%08X\n",
               HELLO_SIZE, Hello.Mr->Dispatch->NdkGetLocalTokenFromMr(Hello.Mr));
    return STATUS_SUCCESS;
}
