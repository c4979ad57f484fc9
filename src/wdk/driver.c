/*
 * driver.c - the driver and its devices ("DRIVER_OBJECT structure (wdm.h)", "IoCreateDevice
 * function (wdm.h)"). The host fills one DRIVER_OBJECT per loaded driver: every MajorFunction
 * entry starts as a routine that fails the IRP with STATUS_INVALID_DEVICE_REQUEST, the name is
 * \Driver\<name>. Devices are zero-filled objects with a zero-filled extension, linked on
 * DriverObject->DeviceObject; a named device's name must be unique. Devices the driver has not
 * deleted by the end of DriverUnload are reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include "wdk_internal.h"

#undef IoCreateDevice

DRIVER_OBJECT *wdk_driver;

struct device_kit {
    UNICODE_STRING name;               /* pool copy of the device name, or empty */
    const char *site;
};

/* Devices are allocated as [DEVICE_OBJECT][struct device_kit][extension]. devices_lock guards
 * the driver's device list. */
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;

static struct device_kit *kit_of(PDEVICE_OBJECT d)
{
    return (struct device_kit *)(d + 1);
}

static NTSTATUS invalid_request(PDEVICE_OBJECT DeviceObject, PIRP Irp)
{
    Irp->IoStatus.Status = STATUS_INVALID_DEVICE_REQUEST;
    Irp->IoStatus.Information = 0;
    IofCompleteRequest(Irp, IO_NO_INCREMENT);
    return STATUS_INVALID_DEVICE_REQUEST;
}

static WCHAR *wide_copy(const char *s, USHORT *bytes)
{
    size_t n = strlen(s);
    WCHAR *w = calloc(n + 1, sizeof(WCHAR));
    if (!w)
        return NULL;
    for (size_t i = 0; i < n; i++)
        w[i] = (WCHAR)(unsigned char)s[i];
    *bytes = (USHORT)(n * sizeof(WCHAR));
    return w;
}

static void set_ustr(UNICODE_STRING *u, const char *s)
{
    USHORT n = 0;
    u->Buffer = wide_copy(s, &n);
    u->Length = u->Buffer ? n : 0;
    u->MaximumLength = u->Buffer ? (USHORT)(n + sizeof(WCHAR)) : 0;
}

/* Builds the driver object for a driver named name (the .so's base name). */
DRIVER_OBJECT *wdk_driver_create(const char *name, PDRIVER_INITIALIZE entry, void *start)
{
    DRIVER_OBJECT *d = calloc(1, sizeof *d);
    DRIVER_EXTENSION *x = calloc(1, sizeof *x);
    if (!d || !x) {
        free(d);
        free(x);
        return NULL;
    }
    char buf[256];
    d->Type = 4;   /* IO_TYPE_DRIVER */
    d->Size = (CSHORT)sizeof *d;
    d->DriverExtension = x;
    x->DriverObject = d;
    d->DriverStart = start;
    d->DriverInit = entry;
    snprintf(buf, sizeof buf, "\\Driver\\%s", name);
    set_ustr(&d->DriverName, buf);
    set_ustr(&x->ServiceKeyName, name);
    static UNICODE_STRING hwdb;
    set_ustr(&hwdb, "\\REGISTRY\\MACHINE\\HARDWARE\\DESCRIPTION\\SYSTEM");
    d->HardwareDatabase = &hwdb;
    for (int i = 0; i <= IRP_MJ_MAXIMUM_FUNCTION; i++)
        d->MajorFunction[i] = invalid_request;
    wdk_driver = d;
    return d;
}

NTSTATUS wdk_IoCreateDevice_at(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                               DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, BOOLEAN Exclusive,
                               PDEVICE_OBJECT *DeviceObject, const char *site)
{
    if (!DriverObject || !DeviceObject)
        return STATUS_INVALID_PARAMETER;
    if (wdk_irql_get() > APC_LEVEL)
        wdk_verify_report("IRQL_TOO_HIGH", site, "IoCreateDevice at IRQL %u", wdk_irql_get());
    *DeviceObject = NULL;
    size_t ext_off = (sizeof(DEVICE_OBJECT) + sizeof(struct device_kit) + 15) & ~(size_t)15;
    PDEVICE_OBJECT d = wdk_mem_alloc(ext_off + DeviceExtensionSize, 1, 0, WDK_MEM_DEVICE, "IoCreateDevice", site);
    if (!d)
        return STATUS_INSUFFICIENT_RESOURCES;
    struct device_kit *k = kit_of(d);
    k->site = site;
    if (DeviceName && DeviceName->Length) {
        k->name.Buffer = malloc(DeviceName->Length);
        if (!k->name.Buffer) {
            wdk_mem_free(d, WDK_MEM_DEVICE, NULL);
            return STATUS_INSUFFICIENT_RESOURCES;
        }
        memcpy(k->name.Buffer, DeviceName->Buffer, DeviceName->Length);
        k->name.Length = k->name.MaximumLength = DeviceName->Length;
    }
    d->Type = 3;   /* IO_TYPE_DEVICE */
    d->Size = (USHORT)sizeof(DEVICE_OBJECT);
    d->ReferenceCount = 1;
    d->DriverObject = DriverObject;
    d->DeviceType = DeviceType;
    d->Characteristics = DeviceCharacteristics;
    d->Flags = DO_DEVICE_INITIALIZING | (Exclusive ? DO_EXCLUSIVE : 0);
    d->StackSize = 1;
    d->AlignmentRequirement = 0;
    d->DeviceExtension = DeviceExtensionSize ? (char *)d + ext_off : NULL;
    KeInitializeEvent(&d->DeviceLock, SynchronizationEvent, TRUE);
    pthread_mutex_lock(&devices_lock);
    for (PDEVICE_OBJECT o = DriverObject->DeviceObject; o && k->name.Length; o = o->NextDevice)
        if (RtlEqualUnicodeString(&kit_of(o)->name, &k->name, TRUE)) {
            pthread_mutex_unlock(&devices_lock);
            free(k->name.Buffer);
            wdk_mem_free(d, WDK_MEM_DEVICE, NULL);
            return STATUS_OBJECT_NAME_COLLISION;
        }
    d->NextDevice = DriverObject->DeviceObject;
    DriverObject->DeviceObject = d;
    pthread_mutex_unlock(&devices_lock);
    *DeviceObject = d;
    return STATUS_SUCCESS;
}

NTSTATUS IoCreateDevice(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                        DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, BOOLEAN Exclusive,
                        PDEVICE_OBJECT *DeviceObject)
{
    return wdk_IoCreateDevice_at(DriverObject, DeviceExtensionSize, DeviceName, DeviceType, DeviceCharacteristics,
                                 Exclusive, DeviceObject, WDK_CALLER);
}

VOID IoDeleteDevice(PDEVICE_OBJECT DeviceObject)
{
    if (!DeviceObject || !DeviceObject->DriverObject) {
        wdk_verify_report("DEVICE_INVALID", WDK_CALLER, "IoDeleteDevice of %p", (void *)DeviceObject);
        return;
    }
    PDRIVER_OBJECT drv = DeviceObject->DriverObject;
    int found = 0;
    pthread_mutex_lock(&devices_lock);
    for (PDEVICE_OBJECT *pp = &drv->DeviceObject; *pp; pp = &(*pp)->NextDevice)
        if (*pp == DeviceObject) {
            *pp = DeviceObject->NextDevice;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&devices_lock);
    if (!found) {
        wdk_verify_report("DEVICE_INVALID", WDK_CALLER, "IoDeleteDevice of %p, not a device of this driver",
                          (void *)DeviceObject);
        return;
    }
    free(kit_of(DeviceObject)->name.Buffer);
    wdk_mem_free(DeviceObject, WDK_MEM_DEVICE, NULL);
}

void wdk_devices_check(void)
{
    if (!wdk_driver)
        return;
    pthread_mutex_lock(&devices_lock);
    for (PDEVICE_OBJECT d = wdk_driver->DeviceObject; d; d = d->NextDevice)
        wdk_verify_report("DEVICE_NOT_DELETED", kit_of(d)->site, "device %p was not deleted by DriverUnload",
                          (void *)d);
    pthread_mutex_unlock(&devices_lock);
}

/* Symbolic links have no namespace to live in: they are accepted and forgotten. */
NTSTATUS IoCreateSymbolicLink(PUNICODE_STRING SymbolicLinkName, PUNICODE_STRING DeviceName)
{
    return (SymbolicLinkName && DeviceName) ? STATUS_SUCCESS : STATUS_INVALID_PARAMETER;
}

NTSTATUS IoDeleteSymbolicLink(PUNICODE_STRING SymbolicLinkName)
{
    return SymbolicLinkName ? STATUS_SUCCESS : STATUS_INVALID_PARAMETER;
}

BOOLEAN IoIsWdmVersionAvailable(UCHAR MajorVersion, UCHAR MinorVersion)
{
    return (BOOLEAN)(MajorVersion < 6 || (MajorVersion == 6 && MinorVersion <= 0x30));
}

/* One driver-object extension per client id, freed with the driver object (kit-internal). */
struct drv_ext {
    struct drv_ext *next;
    PVOID id;
    char data[];
};
static struct drv_ext *extensions;   /* under devices_lock */

NTSTATUS IoAllocateDriverObjectExtension(PDRIVER_OBJECT DriverObject, PVOID ClientIdentificationAddress,
                                         ULONG DriverObjectExtensionSize, PVOID *DriverObjectExtension)
{
    *DriverObjectExtension = NULL;
    pthread_mutex_lock(&devices_lock);
    for (struct drv_ext *e = extensions; e; e = e->next)
        if (e->id == ClientIdentificationAddress) {
            pthread_mutex_unlock(&devices_lock);
            return STATUS_OBJECT_NAME_COLLISION;
        }
    struct drv_ext *e = calloc(1, sizeof *e + DriverObjectExtensionSize);
    if (!e) {
        pthread_mutex_unlock(&devices_lock);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    e->id = ClientIdentificationAddress;
    e->next = extensions;
    extensions = e;
    pthread_mutex_unlock(&devices_lock);
    *DriverObjectExtension = e->data;
    return STATUS_SUCCESS;
}

PVOID IoGetDriverObjectExtension(PDRIVER_OBJECT DriverObject, PVOID ClientIdentificationAddress)
{
    pthread_mutex_lock(&devices_lock);
    for (struct drv_ext *e = extensions; e; e = e->next)
        if (e->id == ClientIdentificationAddress) {
            pthread_mutex_unlock(&devices_lock);
            return e->data;
        }
    pthread_mutex_unlock(&devices_lock);
    return NULL;
}
