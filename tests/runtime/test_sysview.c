/* The system view's runtime side (issue 38): the registry file of a process, its permissions,
 * records that follow objects, OID_NDK_STATISTICS over every process of the adapter, registries
 * of dead processes ignored and removed, publishing off, a fork child, and a hostile file.
 * One case per process: test_sysview CASE. The test provider publishes with "publish". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ndk/sysview.h>

#include "rttest.h"
#include "testlib.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static char dir[256];

static ndk_rt *open_rt(void)
{
    ndk_rt_config cfg = { 0 };
    cfg.provider_path = rttest_provider_dir();
    cfg.config_file = "/nonexistent/openndk.conf";
    cfg.providers = "testgood";
    cfg.interfaces = "lo";
    cfg.no_monitor = TRUE;
    cfg.log = rttest_log;
    cfg.log_level = NDK_LOG_INFO;
    ndk_rt *rt = NULL;
    CHECK_STATUS(ndk_rt_open(&cfg, &rt), STATUS_SUCCESS);
    return rt;
}

static ndk_rt_adapter_id lo_adapter(ndk_rt *rt)
{
    ndk_rt_adapter_id id = 0;
    CHECK_STATUS(ndk_rt_find_adapter_by_ifname(rt, "lo", "testgood", &id), STATUS_SUCCESS);
    return id;
}

static const NDK_VERSION v21 = { .Major = 2, .Minor = 1 };

static const ndk_rt_sv_process *find_pid(const ndk_rt_sysview *sv, pid_t pid)
{
    for (ULONG i = 0; i < sv->count; i++)
        if (sv->processes[i].header.pid == (uint32_t)pid)
            return &sv->processes[i];
    return NULL;
}

static int count_type(const ndk_rt_sv_process *p, unsigned type)
{
    int n = 0;
    for (ULONG i = 0; p && i < p->count; i++)
        n += p->records[i].type == type;
    return n;
}

static const struct ndk_sv_rec *first_of(const ndk_rt_sv_process *p, unsigned type)
{
    for (ULONG i = 0; p && i < p->count; i++)
        if (p->records[i].type == type)
            return &p->records[i];
    return NULL;
}

static ULONG64 connect_counter(ndk_rt *rt, ndk_rt_adapter_id id)
{
    NDIS_NDK_STATISTICS_INFO s;
    ULONG written = 0, needed = 0;
    CHECK_STATUS(ndk_rt_query_oid(rt, id, OID_NDK_STATISTICS, &s, sizeof s, &written, &needed), STATUS_SUCCESS);
    return s.CounterSet.Connect;
}

static int file_exists(pid_t pid)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%d.ndk", dir, (int)pid);
    return access(path, F_OK) == 0;
}

/* The file, its mode, and records that come and go with the objects. */
static void case_publish(void)
{
    ndk_rt *rt = open_rt();
    char path[512];
    snprintf(path, sizeof path, "%s/%d.ndk", dir, (int)getpid());
    struct stat st;
    CHECK_MSG(stat(path, &st) == 0, "no registry file %s: %s", path, strerror(errno));
    CHECK_MSG((st.st_mode & 0777) == 0600, "registry mode %o, not 0600", st.st_mode & 0777);
    CHECK_EQ(st.st_uid, geteuid());

    ndk_rt_sysview *sv = NULL;
    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    const ndk_rt_sv_process *me = find_pid(sv, getpid());
    CHECK_MSG(me, "our own process is not listed (%u processes)", sv->count);
    CHECK_MSG(strcmp(me->header.comm, "test_sysview") == 0, "comm \"%s\"", me->header.comm);
    CHECK_EQ(count_type(me, NDK_SV_ADAPTER), 1);
    const struct ndk_sv_rec *ad = first_of(me, NDK_SV_ADAPTER);
    CHECK_MSG(!strcmp(ad->u.adapter.provider, "testgood") && !strcmp(ad->u.adapter.ifname, "lo"),
              "adapter record %s/%s", ad->u.adapter.provider, ad->u.adapter.ifname);
    CHECK_EQ(ad->adapter, ad->id);
    CHECK_EQ(ad->u.adapter.open_instances, 0);
    /* The counter the test provider does not keep (its MissingCounterMask), for the readers. */
    CHECK_EQ(ad->u.adapter.missing, 1u << 28);
    CHECK_EQ(count_type(me, NDK_SV_PD), 0);
    uint64_t adapter_rec = ad->id;
    ndk_rt_sysview_free(sv);

    NDK_ADAPTER *a1 = NULL, *a2 = NULL;
    CHECK_STATUS(ndk_rt_open_adapter(rt, lo_adapter(rt), v21, &a1), STATUS_SUCCESS);
    CHECK_STATUS(ndk_rt_open_adapter(rt, lo_adapter(rt), v21, &a2), STATUS_SUCCESS);
    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    me = find_pid(sv, getpid());
    CHECK_EQ(count_type(me, NDK_SV_PD), 2);
    CHECK_EQ(first_of(me, NDK_SV_PD)->adapter, adapter_rec);
    CHECK_EQ(first_of(me, NDK_SV_ADAPTER)->u.adapter.open_instances, 2);
    CHECK_EQ(first_of(me, NDK_SV_ADAPTER)->u.adapter.counters[0], 2);
    ndk_rt_sysview_free(sv);

    ndk_rt_close_adapter(rt, a1);
    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    me = find_pid(sv, getpid());
    CHECK_EQ(count_type(me, NDK_SV_PD), 1);
    CHECK_EQ(first_of(me, NDK_SV_ADAPTER)->u.adapter.open_instances, 1);
    ndk_rt_sysview_free(sv);
    ndk_rt_close_adapter(rt, a2);
    ndk_rt_close(rt);
    CHECK_MSG(!file_exists(getpid()), "the registry outlived the last runtime");
}

/* A second process with the adapter open: the OID counts both; once it dies, only ours, and
 * its file is gone after the next read. */
static void case_peers(void)
{
    int ready[2], go[2];
    CHECK(pipe(ready) == 0 && pipe(go) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        ndk_rt *rt = open_rt();
        NDK_ADAPTER *a = NULL, *b = NULL;
        CHECK_STATUS(ndk_rt_open_adapter(rt, lo_adapter(rt), v21, &a), STATUS_SUCCESS);
        CHECK_STATUS(ndk_rt_open_adapter(rt, lo_adapter(rt), v21, &b), STATUS_SUCCESS);
        char c = 'r';
        CHECK(write(ready[1], &c, 1) == 1);
        CHECK(read(go[0], &c, 1) >= 0);   /* killed before it returns */
        _exit(0);
    }
    char c;
    CHECK_MSG(read(ready[0], &c, 1) == 1, "child did not get ready");
    ndk_rt *rt = open_rt();
    NDK_ADAPTER *a = NULL;
    CHECK_STATUS(ndk_rt_open_adapter(rt, lo_adapter(rt), v21, &a), STATUS_SUCCESS);
    CHECK_EQ(connect_counter(rt, lo_adapter(rt)), 3);

    ndk_rt_sysview *sv = NULL;
    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    CHECK_EQ(sv->count, 2);
    const ndk_rt_sv_process *cp = find_pid(sv, child);
    CHECK_MSG(cp, "the child is not listed");
    CHECK_EQ(count_type(cp, NDK_SV_PD), 2);
    ndk_rt_sysview_free(sv);

    kill(child, SIGKILL);
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK_MSG(file_exists(child), "the dead child's file vanished before anyone read it");
    CHECK_EQ(connect_counter(rt, lo_adapter(rt)), 1);
    CHECK_MSG(!file_exists(child), "the dead child's registry was not removed");
    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    CHECK_EQ(sv->count, 1);
    CHECK_MSG(!find_pid(sv, child), "the dead child is still listed");
    ndk_rt_sysview_free(sv);
    ndk_rt_close_adapter(rt, a);
    ndk_rt_close(rt);
}

/* NDK_SYSVIEW=0: no file, and the provider's records still work (private memory). */
static void case_off(void)
{
    setenv("NDK_SYSVIEW", "0", 1);
    ndk_rt *rt = open_rt();
    NDK_ADAPTER *a = NULL;
    CHECK_STATUS(ndk_rt_open_adapter(rt, lo_adapter(rt), v21, &a), STATUS_SUCCESS);
    CHECK_MSG(!file_exists(getpid()), "a registry file although NDK_SYSVIEW=0");
    CHECK_EQ(connect_counter(rt, lo_adapter(rt)), 1);
    ndk_rt_sysview *sv = NULL;
    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    CHECK_EQ(sv->count, 0);
    ndk_rt_sysview_free(sv);
    ndk_rt_close_adapter(rt, a);
    ndk_rt_close(rt);
}

/* A directory others may write is refused (publishing off, a warning), never used. */
static void case_perm(void)
{
    CHECK(chmod(dir, 0777) == 0);
    ndk_rt *rt = open_rt();
    CHECK_MSG(rttest_log_contains("system view off"), "no warning about the unsafe directory");
    CHECK_MSG(!file_exists(getpid()), "a registry file in a world-writable directory");
    ndk_rt_close(rt);
    ndk_rt_sysview *sv = NULL;
    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    CHECK_EQ(sv->count, 0);
    CHECK_EQ(sv->skipped, 1);
    ndk_rt_sysview_free(sv);
    CHECK(chmod(dir, 0700) == 0);
}

/* A fork child publishes its own file and leaves the parent's alone. */
static void case_fork(void)
{
#ifdef UNDER_TSAN
    ndk_test_skip("ThreadSanitizer cannot start threads in a child forked from a threaded process");
#endif
#ifdef UNDER_ASAN
    /* Seen with clang 14: the child waits in SizeClassAllocator64::GetFromAllocator for ever. */
    ndk_test_skip("AddressSanitizer's allocator is not locked across fork: the child can inherit one of its "
                  "locks held by another thread of the parent");
#endif
    ndk_rt *rt = open_rt();
    NDK_ADAPTER *a = NULL;
    CHECK_STATUS(ndk_rt_open_adapter(rt, lo_adapter(rt), v21, &a), STATUS_SUCCESS);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        ndk_rt *crt = open_rt();
        NDK_ADAPTER *ca = NULL;
        CHECK_STATUS(ndk_rt_open_adapter(crt, lo_adapter(crt), v21, &ca), STATUS_SUCCESS);
        CHECK_MSG(file_exists(getpid()), "the child has no registry of its own");
        ndk_rt_sysview *sv = NULL;
        CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
        CHECK_EQ(count_type(find_pid(sv, getpid()), NDK_SV_PD), 1);
        CHECK_EQ(count_type(find_pid(sv, getppid()), NDK_SV_PD), 1);
        ndk_rt_sysview_free(sv);
        ndk_rt_close_adapter(crt, ca);
        ndk_rt_close(crt);
        _exit(file_exists(getpid()) ? 3 : 0);
    }
    /* A child forked from a threaded process may block for ever on a lock of a library that
     * does not prepare for fork (the sanitizers' allocators do not): that is not the registry's
     * fault, so it is reported as a skip with the reason, never waited on without end. */
    int status = 0;
    uint64_t until = ndk_test_now_ms() + 30000;
    pid_t got;
    while ((got = waitpid(child, &status, WNOHANG)) == 0 && ndk_test_now_ms() < until)
        usleep(20000);
    if (got == 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        ndk_test_skip("the fork child did not finish within 30 s: blocked on a lock another thread of the parent held "
                      "at fork time");
    }
    CHECK(got == child);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed (status %#x)", status);
    CHECK_MSG(file_exists(getpid()), "the child removed the parent's registry");
    ndk_rt_sysview *sv = NULL;
    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    CHECK_EQ(sv->count, 1);
    CHECK_EQ(count_type(find_pid(sv, getpid()), NDK_SV_PD), 1);
    ndk_rt_sysview_free(sv);
    ndk_rt_close_adapter(rt, a);
    ndk_rt_close(rt);
}

/* Hundreds of records: the file grows chunk by chunk, and every record can be free at once. */
static void case_many(void)
{
    enum { N = 300 };
    static NDK_ADAPTER *a[N];
    ndk_rt *rt = open_rt();
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++)
            CHECK_STATUS(ndk_rt_open_adapter(rt, lo_adapter(rt), v21, &a[i]), STATUS_SUCCESS);
        ndk_rt_sysview *sv = NULL;
        CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
        CHECK_EQ(count_type(find_pid(sv, getpid()), NDK_SV_PD), N);
        ndk_rt_sysview_free(sv);
        for (int i = 0; i < N; i++)
            ndk_rt_close_adapter(rt, a[i]);
        CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
        CHECK_EQ(count_type(find_pid(sv, getpid()), NDK_SV_PD), 0);
        ndk_rt_sysview_free(sv);
    }
    ndk_rt_close(rt);
}

/* A live process's file that lies (chunk count beyond the file, strings without an end, a
 * record type out of range) is read within its bounds. */
static void case_hostile(void)
{
    int ready[2];
    CHECK(pipe(ready) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        char path[512];
        snprintf(path, sizeof path, "%s/%d.ndk", dir, (int)getpid());
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
        size_t size = NDK_SV_PAGE + (size_t)NDK_SV_CHUNK_RECORDS * NDK_SV_RECORD_SIZE;
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
        if (fd < 0 || ftruncate(fd, (off_t)size) < 0 || fcntl(fd, F_SETLK, &fl) < 0)
            _exit(2);
        uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
            _exit(2);
        struct ndk_sv_header *h = (void *)m;
        memset(h->comm, 'A', sizeof h->comm);
        memset(h->exe, 'B', sizeof h->exe);
        h->version = NDK_SV_VERSION;
        h->record_size = NDK_SV_RECORD_SIZE;
        h->chunk_records = NDK_SV_CHUNK_RECORDS;
        h->nchunks = 1000000;
        h->pid = (uint32_t)getpid();
        struct ndk_sv_rec *r = (void *)(m + NDK_SV_PAGE);
        r[0].type = NDK_SV_QP;
        memset(r[0].u.qp.state, 'C', sizeof r[0].u.qp.state);
        r[1].type = 999;
        r[2].type = NDK_SV_ADAPTER;
        memset(r[2].u.adapter.provider, 'D', sizeof r[2].u.adapter.provider);
        r[3].seq = 1;                 /* forever being rewritten */
        r[3].type = NDK_SV_CQ;
        h->magic = NDK_SV_MAGIC;
        char c = 'r';
        if (write(ready[1], &c, 1) != 1)
            _exit(2);
        pause();
        _exit(0);
    }
    char c;
    CHECK_MSG(read(ready[0], &c, 1) == 1, "child did not get ready");
    ndk_rt_sysview *sv = NULL;
    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    const ndk_rt_sv_process *p = find_pid(sv, child);
    CHECK_MSG(p, "the hostile but live registry is not listed");
    CHECK_EQ(strlen(p->header.comm), sizeof p->header.comm - 1);
    CHECK_EQ(strlen(p->header.exe), sizeof p->header.exe - 1);
    CHECK_EQ(p->count, 2);            /* the QP and the adapter; not type 999, not the torn CQ */
    CHECK_EQ(strlen(first_of(p, NDK_SV_QP)->u.qp.state), sizeof p->records[0].u.qp.state - 1);
    CHECK_EQ(strlen(first_of(p, NDK_SV_ADAPTER)->u.adapter.provider),
             sizeof p->records[0].u.adapter.provider - 1);
    ndk_rt_sysview_free(sv);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        ndk_test_fail(__FILE__, __LINE__, "usage: test_sysview CASE");
    ndk_test_enter_netns();           /* only lo, and a network namespace of our own */
    snprintf(dir, sizeof dir, "/tmp/ndk-sysview-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    setenv("NDK_RUNTIME_DIR", dir, 1);
    setenv("NDK_TESTGOOD_PUBLISH", "1", 1);
    unsetenv("NDK_SYSVIEW");
    if (!strcmp(argv[1], "publish"))
        case_publish();
    else if (!strcmp(argv[1], "peers"))
        case_peers();
    else if (!strcmp(argv[1], "off"))
        case_off();
    else if (!strcmp(argv[1], "perm"))
        case_perm();
    else if (!strcmp(argv[1], "fork"))
        case_fork();
    else if (!strcmp(argv[1], "many"))
        case_many();
    else if (!strcmp(argv[1], "hostile"))
        case_hostile();
    else
        ndk_test_fail(__FILE__, __LINE__, "unknown case %s", argv[1]);
    ndk_test_sh("rm -rf %s", dir);
    printf("PASS test_sysview %s\n", argv[1]);
    return 0;
}
