/* throttle_testlib: helpers for the throttle tests. Waits are bounded polls that end as soon as
 * the kernel has done what was asked, so no test depends on how fast the machine is. */
#include "throttle_testlib.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { POLL_STEPS = 2000, POLL_STEP_NS = 5 * 1000 * 1000, STILL_NS = 50 * 1000 * 1000 };

static void nap(long ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void tt_config(throttle_config_t *cfg, unsigned knobs_allowed)
{
    throttle_config_defaults(cfg);
    snprintf(cfg->subtree, sizeof cfg->subtree, "cosched-test-%d", (int)getpid());
    cfg->knobs_allowed = knobs_allowed;
}

void tt_tmpdir(char *out, size_t len)
{
    snprintf(out, len, "/tmp/cosched-throttle-XXXXXX");
    assert_non_null(mkdtemp(out));
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void tt_rm_rf(const char *dir)
{
    if (strncmp(dir, "/tmp/cosched-throttle-", 22) != 0)
        fail_msg("refusing to remove %s: not a test directory", dir);
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int rmdir_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    return 0;
}

void tt_rmdir_tree(const char *dir)
{
    nftw(dir, rmdir_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void tt_write(const char *dir, const char *file, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    for (char *p = path + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            fail_msg("cannot create %s: %s", path, strerror(errno));
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    if (!f)
        fail_msg("cannot write %s: %s", path, strerror(errno));
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

const char *tt_read(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot read %s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    return buf;
}

bool tt_file_has_id(const char *path, pid_t id)
{
    char buf[65536];
    tt_read(path, buf, sizeof buf);
    for (char *p = buf, *end; *p; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (v == id)
            return true;
    }
    return false;
}

/* The child reports over a pipe whether it joined (and its grandchild's pid), then counts until
 * killed. The grandchild stays in the child's process group: it is what kill(-pid) must reach. */
static _Noreturn void child_main(const throttle_group_t *g, volatile unsigned long *counters, bool family, int report)
{
    setsid();
    char ok = g && throttle_group_join_self(g) < 0 ? 'e' : 'j';
    pid_t grandchild = 0;
    if (family && (grandchild = fork()) == 0) {
        close(report);
        for (;;)
            counters[1]++;
    }
    if (write(report, &ok, 1) != 1 || write(report, &grandchild, sizeof grandchild) != sizeof grandchild)
        _exit(2);
    close(report);
    for (;;)
        counters[0]++;
}

static volatile unsigned long *caught_counter;

static void count_caught(int sig)
{
    (void)sig;
    caught_counter[0]++;
}

static tt_child_t start(const throttle_group_t *g, bool family, int catching)
{
    tt_child_t c = {0};
    if (family)
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    void *shared = mmap(NULL, 2 * sizeof *c.counter, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(shared != MAP_FAILED);
    c.counter = shared;
    c.grand_counter = c.counter + 1;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    c.pid = fork();
    assert_true(c.pid >= 0);
    if (c.pid == 0) {
        close(fds[0]);
        if (catching) {
            caught_counter = c.grand_counter;
            struct sigaction sa = {.sa_handler = count_caught};
            sigaction(catching, &sa, NULL);
        }
        child_main(g, c.counter, family, fds[1]);
    }
    close(fds[1]);
    char got = 0;
    bool ok = read(fds[0], &got, 1) == 1 && got == 'j' &&
              read(fds[0], &c.grandchild, sizeof c.grandchild) == sizeof c.grandchild && (!family || c.grandchild > 0);
    close(fds[0]);
    if (!ok) {
        tt_child_end(&c);
        fail_msg("the child could not start%s", got == 'e' ? ": join_self failed" : "");
    }
    return c;
}

tt_child_t tt_child_start(const throttle_group_t *g)
{
    return start(g, false, 0);
}

tt_child_t tt_family_start(const throttle_group_t *g)
{
    return start(g, true, 0);
}

tt_child_t tt_child_start_catching(int sig)
{
    return start(NULL, false, sig);
}

/* SIGKILL works on stopped processes too; a frozen v1 cgroup must have been thawed (destroyed)
 * before, or the reaping would wait for the thaw. */
void tt_child_end(tt_child_t *c)
{
    if (c->pid > 0) {
        kill(-c->pid, SIGKILL);
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
    }
    if (c->grandchild > 0) {
        kill(c->grandchild, SIGKILL);
        waitpid(c->grandchild, NULL, 0);
    }
    if (c->counter)
        munmap((void *)c->counter, 2 * sizeof *c->counter);
    *c = (tt_child_t){0};
}

bool tt_poll(bool (*cond)(const void *arg), const void *arg)
{
    for (int i = 0; i < POLL_STEPS; i++) {
        if (cond(arg))
            return true;
        nap(POLL_STEP_NS);
    }
    return cond(arg);
}

bool tt_progresses(volatile unsigned long *counter)
{
    unsigned long before = *counter;
    for (int i = 0; i < POLL_STEPS; i++) {
        if (*counter != before)
            return true;
        nap(POLL_STEP_NS);
    }
    return false;
}

bool tt_still(volatile unsigned long *counter)
{
    unsigned long before = *counter;
    nap(STILL_NS);
    return *counter == before;
}
