/* GUID_NDIS_NDK_CAPABILITIES and GUID_NDIS_NDK_STATE: declared by ndisndk.h, defined once where
 * INITGUID is set (guids_define.c), and equal to their registry form as ntddndis.h gives it. */
#include <ndisndk.h>
#include <ndkrss.h>
#include <stdio.h>
#include <string.h>
#include "testlib.h"

static void check_guid(const GUID *g, const char *name, const char *want)
{
    char s[40];
    snprintf(s, sizeof s, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", (unsigned)g->Data1, g->Data2, g->Data3,
             g->Data4[0], g->Data4[1], g->Data4[2], g->Data4[3], g->Data4[4], g->Data4[5], g->Data4[6], g->Data4[7]);
    if (strcmp(s, want) != 0)
        ndk_test_fail(__FILE__, __LINE__, "%s is {%s}, expected {%s}", name, s, want);
}

int main(void)
{
    static const GUID caps = GUID_NDIS_NDK_CAPABILITIES_INIT, state = GUID_NDIS_NDK_STATE_INIT;
    check_guid(&GUID_NDIS_NDK_CAPABILITIES, "GUID_NDIS_NDK_CAPABILITIES", "7969ba4d-dd80-4bc7-b3e6-68043997e519");
    check_guid(&GUID_NDIS_NDK_STATE, "GUID_NDIS_NDK_STATE", "530c69c9-2f51-49de-a1af-088d54ffa474");
    check_guid(&caps, "GUID_NDIS_NDK_CAPABILITIES_INIT", "7969ba4d-dd80-4bc7-b3e6-68043997e519");
    check_guid(&state, "GUID_NDIS_NDK_STATE_INIT", "530c69c9-2f51-49de-a1af-088d54ffa474");
    static const GUID rss = NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH_INIT;
    check_guid(&NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH, "NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH",
               "bab27026-86c3-4e31-9f72-4936ded76d42");
    check_guid(&rss, "NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH_INIT", "bab27026-86c3-4e31-9f72-4936ded76d42");
    printf("guids: GUID_NDIS_NDK_CAPABILITIES, GUID_NDIS_NDK_STATE and the RSS extension id have the WDK's values\n");
    return 0;
}
