/* ndk/ntstatus.h and src/common/ndk_status: a sample of codes against ntstatus.h's values, the
 * severity of each class, the #ifndef guards, and naming/parsing/twin matching of both NDIS
 * spellings (docs/status.md). */
/* A consumer that defines a code itself before the headers, with the same value, still compiles. */
#define STATUS_TIMEOUT ((NTSTATUS)0x00000102L)
#include <ndk/nt.h>
#include "ndk_status.h"
#include "testlib.h"

#include <errno.h>

#define VALUE(name, v) _Static_assert((uint32_t)(name) == (v), #name " value")
VALUE(STATUS_WAIT_0, 0x00000000u); VALUE(STATUS_WAIT_63, 0x0000003Fu); VALUE(STATUS_ABANDONED, 0x00000080u);
VALUE(STATUS_USER_APC, 0x000000C0u); VALUE(STATUS_ALERTED, 0x00000101u); VALUE(STATUS_TIMEOUT, 0x00000102u);
VALUE(STATUS_PENDING, 0x00000103u); VALUE(STATUS_BUFFER_OVERFLOW, 0x80000005u); VALUE(STATUS_DEVICE_BUSY, 0x80000011u);
VALUE(STATUS_UNSUCCESSFUL, 0xC0000001u); VALUE(STATUS_INVALID_HANDLE, 0xC0000008u);
VALUE(STATUS_INVALID_PARAMETER, 0xC000000Du); VALUE(STATUS_OBJECT_TYPE_MISMATCH, 0xC0000024u);
VALUE(STATUS_OBJECT_NAME_COLLISION, 0xC0000035u); VALUE(STATUS_DELETE_PENDING, 0xC0000056u);
VALUE(STATUS_INSUFFICIENT_RESOURCES, 0xC000009Au); VALUE(STATUS_DEVICE_NOT_READY, 0xC00000A3u);
VALUE(STATUS_IO_TIMEOUT, 0xC00000B5u); VALUE(STATUS_NOT_SUPPORTED, 0xC00000BBu);
VALUE(STATUS_INVALID_DEVICE_STATE, 0xC0000184u); VALUE(STATUS_INVALID_PARAMETER_1, 0xC00000EFu);
VALUE(STATUS_INVALID_PARAMETER_12, 0xC00000FAu); VALUE(STATUS_IO_DEVICE_ERROR, 0xC0000185u);
VALUE(STATUS_CONNECTION_REFUSED, 0xC0000236u); VALUE(STATUS_REQUEST_ABORTED, 0xC0000240u);
VALUE(STATUS_NOT_FOUND, 0xC0000225u); VALUE(STATUS_NOINTERFACE, 0xC00002B9u);
VALUE(STATUS_ASSERTION_FAILURE, 0xC0000420u); VALUE(STATUS_IMPLEMENTATION_LIMIT, 0xC000042Bu);
VALUE(STATUS_NDIS_BAD_VERSION, 0xC0230004u); VALUE(NDIS_STATUS_BAD_VERSION, 0xC0010004u);

int main(void)
{
    /* Severity: success/informational pass NT_SUCCESS, warnings and errors do not. */
    CHECK(NT_SUCCESS(STATUS_TIMEOUT) && NT_SUCCESS(STATUS_WAIT_63) && NT_SUCCESS(STATUS_USER_APC));
    CHECK(NT_INFORMATION(STATUS_NDIS_INDICATION_REQUIRED) && NT_SUCCESS(STATUS_NDIS_INDICATION_REQUIRED));
    CHECK(NT_WARNING(STATUS_DEVICE_BUSY) && !NT_SUCCESS(STATUS_DEVICE_BUSY));
    CHECK(NT_ERROR(NDIS_STATUS_BAD_VERSION) && NT_ERROR(STATUS_NDIS_BAD_VERSION));

    /* Names: each NDIS spelling has its own; an alias is named by the generic code. */
    CHECK(!strcmp(ndk_status_lookup_name(NDIS_STATUS_BAD_VERSION), "NDIS_STATUS_BAD_VERSION"));
    CHECK(!strcmp(ndk_status_lookup_name(STATUS_NDIS_BAD_VERSION), "STATUS_NDIS_BAD_VERSION"));
    CHECK(!strcmp(ndk_status_lookup_name(NDIS_STATUS_BUFFER_TOO_SHORT), "NDIS_STATUS_BUFFER_TOO_SHORT"));
    CHECK(!strcmp(ndk_status_lookup_name(STATUS_NDIS_BUFFER_TOO_SHORT), "STATUS_NDIS_BUFFER_TOO_SHORT"));
    CHECK(!strcmp(ndk_status_lookup_name(NDIS_STATUS_NOT_SUPPORTED), "STATUS_NOT_SUPPORTED"));
    CHECK(!strcmp(ndk_status_lookup_name(STATUS_SUCCESS), "STATUS_SUCCESS"));
    CHECK(!strcmp(ndk_status_lookup_name(STATUS_TIMEOUT), "STATUS_TIMEOUT"));
    CHECK(!strcmp(ndk_status_lookup_name(STATUS_INVALID_DEVICE_STATE), "STATUS_INVALID_DEVICE_STATE"));
    CHECK(ndk_status_lookup_name((NTSTATUS)0xC0DEC0DE) == NULL);

    /* Parsing: every name, aliases included, and hex. */
    NTSTATUS st = 0;
    CHECK(ndk_status_parse_name("NDIS_STATUS_BAD_VERSION", &st) == 0 && st == NDIS_STATUS_BAD_VERSION);
    CHECK(ndk_status_parse_name("STATUS_NDIS_BAD_VERSION", &st) == 0 && st == STATUS_NDIS_BAD_VERSION);
    CHECK(ndk_status_parse_name("NDIS_STATUS_NOT_SUPPORTED", &st) == 0 && st == STATUS_NOT_SUPPORTED);
    CHECK(ndk_status_parse_name("STATUS_IO_TIMEOUT", &st) == 0 && st == STATUS_IO_TIMEOUT);
    CHECK(ndk_status_parse_name("0xC0230016", &st) == 0 && st == STATUS_NDIS_BUFFER_TOO_SHORT);
    CHECK(ndk_status_parse_name("0x", &st) == -EINVAL);
    CHECK(ndk_status_parse_name("0x1C0000001", &st) == -EINVAL);
    CHECK(ndk_status_parse_name("STATUS_NO_SUCH_THING", &st) == -EINVAL);
    CHECK(ndk_status_parse_name("", &st) == -EINVAL);

    /* Twins compare equal; unrelated codes do not. */
    CHECK(ndk_status_same(NDIS_STATUS_BAD_VERSION, STATUS_NDIS_BAD_VERSION));
    CHECK(ndk_status_same(STATUS_NDIS_BUFFER_TOO_SHORT, NDIS_STATUS_BUFFER_TOO_SHORT));
    CHECK(ndk_status_same(STATUS_NOT_SUPPORTED, STATUS_NDIS_NOT_SUPPORTED));
    CHECK(ndk_status_same(NDIS_STATUS_ADAPTER_NOT_READY, STATUS_NDIS_ADAPTER_NOT_READY));
    CHECK(ndk_status_same(STATUS_PENDING, STATUS_PENDING));
    CHECK(!ndk_status_same(NDIS_STATUS_BAD_VERSION, STATUS_NDIS_ADAPTER_NOT_READY));
    CHECK(!ndk_status_same(STATUS_BUFFER_TOO_SMALL, NDIS_STATUS_BUFFER_TOO_SHORT));
    printf("status: values, classes, names and twins as documented\n");
    return 0;
}
