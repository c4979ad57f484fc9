/* ndk/nt.h as the WDK kit includes it: with NDK_NT_NO_MDL_HELPERS the header leaves its inline
 * MDL helpers out, so a translation unit can define the WDK's own IoAllocateMdl (whose last
 * parameter is a PIRP) and MmGetMdlVirtualAddress as a macro without a clash. */
#define NDK_NT_NO_MDL_HELPERS 1
#include <ndk/nt.h>

#define MmGetMdlVirtualAddress(Mdl) ((PVOID)((PCHAR)(Mdl)->StartVa + (Mdl)->ByteOffset))

struct _IRP;
PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota,
                   struct _IRP *Irp);
int nt_kit_mode_check(void);

static MDL kit_mdl;

PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota,
                   struct _IRP *Irp)
{
    (void)SecondaryBuffer, (void)ChargeQuota, (void)Irp;
    kit_mdl.StartVa = VirtualAddress;
    kit_mdl.ByteCount = Length;
    return &kit_mdl;
}

/* 0 when the kit-mode definitions above are the ones in effect. */
int nt_kit_mode_check(void)
{
    static char buf[16];
    PMDL m = IoAllocateMdl(buf, sizeof buf, FALSE, FALSE, NULL);
    return (m == &kit_mdl && MmGetMdlVirtualAddress(m) == buf && MDL_PAGES_LOCKED == 2) ? 0 : 1;
}
