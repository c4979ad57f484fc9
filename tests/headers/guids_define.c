/* The one file of the test that defines the GUIDs, as a Windows driver does with <initguid.h>. */
#define INITGUID
#include <ndisndk.h>
#include <ndkrss.h>
