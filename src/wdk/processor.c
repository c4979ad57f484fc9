/*
 * processor.c - processors and NUMA nodes ("KeQueryActiveProcessorCountEx function (wdm.h)",
 * "KeGetCurrentProcessorNumberEx function (wdm.h)", "KeSetSystemGroupAffinityThread function
 * (wdm.h)"). A processor index is the Linux CPU number; groups hold 64 processors each (group
 * g, number n is CPU 64 g + n). Nodes come from /sys/devices/system/node (node 0 alone when
 * absent). Group affinity maps to the calling thread's scheduler affinity; an invalid request is
 * ignored and zeroes PreviousAffinity, and an all-zero PreviousAffinity restores the affinity the
 * thread had before its first change, as documented.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "wdk_internal.h"

static unsigned ncpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

static unsigned ngroups(void)
{
    return (ncpus() + MAXIMUM_PROC_PER_GROUP - 1) / MAXIMUM_PROC_PER_GROUP;
}

static unsigned in_group(unsigned g)
{
    unsigned n = ncpus();
    if (g >= ngroups())
        return 0;
    unsigned rest = n - g * MAXIMUM_PROC_PER_GROUP;
    return rest > MAXIMUM_PROC_PER_GROUP ? MAXIMUM_PROC_PER_GROUP : rest;
}

static KAFFINITY mask_of(unsigned count)
{
    return count >= 64 ? ~(KAFFINITY)0 : (((KAFFINITY)1 << count) - 1);
}

ULONG KeQueryActiveProcessorCountEx(USHORT GroupNumber)
{
    return GroupNumber == ALL_PROCESSOR_GROUPS ? ncpus() : in_group(GroupNumber);
}

ULONG KeQueryMaximumProcessorCountEx(USHORT GroupNumber)
{
    return KeQueryActiveProcessorCountEx(GroupNumber);
}

ULONG KeQueryMaximumProcessorCount(VOID)
{
    return in_group(0);
}

ULONG KeQueryActiveProcessorCount(PKAFFINITY ActiveProcessors)
{
    if (ActiveProcessors)
        *ActiveProcessors = mask_of(in_group(0));
    return in_group(0);
}

KAFFINITY KeQueryActiveProcessors(VOID)
{
    return mask_of(in_group(0));
}

USHORT KeQueryActiveGroupCount(VOID)
{
    return (USHORT)ngroups();
}

USHORT KeQueryMaximumGroupCount(VOID)
{
    return (USHORT)ngroups();
}

KAFFINITY KeQueryGroupAffinity(USHORT GroupNumber)
{
    return mask_of(in_group(GroupNumber));
}

ULONG KeGetCurrentProcessorNumberEx(PPROCESSOR_NUMBER ProcNumber)
{
    int cpu = sched_getcpu();
    if (cpu < 0)
        cpu = 0;
    if (ProcNumber) {
        ProcNumber->Group = (USHORT)(cpu / MAXIMUM_PROC_PER_GROUP);
        ProcNumber->Number = (UCHAR)(cpu % MAXIMUM_PROC_PER_GROUP);
        ProcNumber->Reserved = 0;
    }
    return (ULONG)cpu;
}

ULONG KeGetCurrentProcessorNumber(VOID)
{
    int cpu = sched_getcpu();
    return cpu < 0 ? 0 : (ULONG)(cpu % MAXIMUM_PROC_PER_GROUP);
}

NTSTATUS KeGetProcessorNumberFromIndex(ULONG ProcIndex, PPROCESSOR_NUMBER ProcNumber)
{
    if (!ProcNumber || ProcIndex >= ncpus())
        return STATUS_INVALID_PARAMETER;
    ProcNumber->Group = (USHORT)(ProcIndex / MAXIMUM_PROC_PER_GROUP);
    ProcNumber->Number = (UCHAR)(ProcIndex % MAXIMUM_PROC_PER_GROUP);
    ProcNumber->Reserved = 0;
    return STATUS_SUCCESS;
}

ULONG KeGetProcessorIndexFromNumber(PPROCESSOR_NUMBER ProcNumber)
{
    if (!ProcNumber || ProcNumber->Number >= in_group(ProcNumber->Group))
        return (ULONG)-1;   /* INVALID_PROCESSOR_INDEX */
    return (ULONG)ProcNumber->Group * MAXIMUM_PROC_PER_GROUP + ProcNumber->Number;
}

/* Node list from sysfs ("0-1", "0,2"): highest node and, per node, its CPUs. */
static int read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(buf, (int)n, f)) {
        fclose(f);
        return -1;
    }
    fclose(f);
    return 0;
}

static void parse_list(const char *s, cpu_set_t *set, unsigned *highest)
{
    CPU_ZERO(set);
    *highest = 0;
    while (*s && *s != '\n') {
        char *end;
        unsigned long a = strtoul(s, &end, 10), b = a;
        if (end == s)
            break;
        if (*end == '-')
            b = strtoul(end + 1, &end, 10);
        for (unsigned long i = a; i <= b && i < CPU_SETSIZE; i++) {
            CPU_SET(i, set);
            if (i > *highest)
                *highest = (unsigned)i;
        }
        s = *end == ',' ? end + 1 : end;
    }
}

USHORT KeQueryHighestNodeNumber(VOID)
{
    char buf[256];
    cpu_set_t set;
    unsigned highest = 0;
    if (read_line("/sys/devices/system/node/possible", buf, sizeof buf) == 0)
        parse_list(buf, &set, &highest);
    return (USHORT)highest;
}

USHORT KeGetCurrentNodeNumber(VOID)
{
    unsigned cpu = 0, node = 0;
    if (getcpu(&cpu, &node))
        return 0;
    return (USHORT)node;
}

VOID KeQueryNodeActiveAffinity(USHORT NodeNumber, PGROUP_AFFINITY Affinity, PUSHORT Count)
{
    char path[96], buf[1024];
    cpu_set_t set;
    unsigned highest;
    snprintf(path, sizeof path, "/sys/devices/system/node/node%u/cpulist", NodeNumber);
    if (read_line(path, buf, sizeof buf)) {
        CPU_ZERO(&set);
        if (NodeNumber == 0)
            for (unsigned i = 0; i < ncpus(); i++)
                CPU_SET(i, &set);
    } else {
        parse_list(buf, &set, &highest);
    }
    /* The node's primary group is the group of its first processor. */
    int first = -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set)) {
            first = i;
            break;
        }
    USHORT group = first < 0 ? 0 : (USHORT)(first / MAXIMUM_PROC_PER_GROUP);
    KAFFINITY mask = 0;
    USHORT count = 0;
    for (unsigned n = 0; n < MAXIMUM_PROC_PER_GROUP; n++)
        if (CPU_ISSET(group * MAXIMUM_PROC_PER_GROUP + n, &set)) {
            mask |= (KAFFINITY)1 << n;
            count++;
        }
    if (Affinity) {
        memset(Affinity, 0, sizeof *Affinity);
        Affinity->Mask = mask;
        Affinity->Group = group;
    }
    if (Count)
        *Count = count;
}

/* The affinity the thread had before the kit first changed it (restored by an all-zero
 * PreviousAffinity). */
static __thread int saved_user;
static __thread cpu_set_t user_set;

static void current_group_affinity(PGROUP_AFFINITY out)
{
    cpu_set_t set;
    memset(out, 0, sizeof *out);
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set))
        return;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set)) {
            out->Group = (USHORT)(i / MAXIMUM_PROC_PER_GROUP);
            break;
        }
    for (unsigned n = 0; n < MAXIMUM_PROC_PER_GROUP; n++)
        if (CPU_ISSET(out->Group * MAXIMUM_PROC_PER_GROUP + n, &set))
            out->Mask |= (KAFFINITY)1 << n;
}

static int apply(const GROUP_AFFINITY *a)
{
    if (a->Group >= ngroups() || !a->Mask || (a->Mask & ~mask_of(in_group(a->Group))))
        return -1;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned n = 0; n < MAXIMUM_PROC_PER_GROUP; n++)
        if (a->Mask & ((KAFFINITY)1 << n))
            CPU_SET(a->Group * MAXIMUM_PROC_PER_GROUP + n, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) ? -1 : 0;
}

VOID KeSetSystemGroupAffinityThread(PGROUP_AFFINITY Affinity, PGROUP_AFFINITY PreviousAffinity)
{
    GROUP_AFFINITY prev;
    current_group_affinity(&prev);
    if (!saved_user) {
        pthread_getaffinity_np(pthread_self(), sizeof user_set, &user_set);
        saved_user = 1;
    }
    if (!Affinity || apply(Affinity)) {
        if (PreviousAffinity)
            memset(PreviousAffinity, 0, sizeof *PreviousAffinity);
        return;
    }
    if (PreviousAffinity)
        *PreviousAffinity = prev;
}

VOID KeRevertToUserGroupAffinityThread(PGROUP_AFFINITY PreviousAffinity)
{
    if (PreviousAffinity && PreviousAffinity->Mask) {
        apply(PreviousAffinity);
        return;
    }
    if (saved_user)
        pthread_setaffinity_np(pthread_self(), sizeof user_set, &user_set);
}

VOID KeSetSystemAffinityThread(KAFFINITY Affinity)
{
    GROUP_AFFINITY a = { .Mask = Affinity, .Group = 0 };
    KeSetSystemGroupAffinityThread(&a, NULL);
}

KAFFINITY KeSetSystemAffinityThreadEx(KAFFINITY Affinity)
{
    GROUP_AFFINITY a = { .Mask = Affinity, .Group = 0 }, prev;
    KeSetSystemGroupAffinityThread(&a, &prev);
    return prev.Mask;
}

VOID KeRevertToUserAffinityThread(VOID)
{
    KeRevertToUserGroupAffinityThread(NULL);
}

VOID KeRevertToUserAffinityThreadEx(KAFFINITY Affinity)
{
    GROUP_AFFINITY a = { .Mask = Affinity, .Group = 0 };
    KeRevertToUserGroupAffinityThread(Affinity ? &a : NULL);
}
