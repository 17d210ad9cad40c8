/* test_throttle_external: co-tenants Slurm started, held in the cgroups Slurm made for them — on
 * fake trees laid out as Slurm 22.05-24.11 lays them out (cgroup v2 and v1), with real processes
 * where a signal must reach one. What is written where, what is never written (step_<s>/user's
 * cgroup.freeze, slurmstepd), Slurm's suspension and pending signals respected, the journal
 * written before each hold and undone after a crash, and finding a job's cgroups from a task's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "slurm_cgroup.h"
#include "throttle.h"
#include "throttle_testlib.h"

typedef struct fixture {
    char tmp[64], journal[128], job2[256], user[320], job1[256], step1[320], cpu1[256];
    throttle_config_t cfg;
    throttle_t *t;
    throttle_group_t *g;
    tt_child_t a, b;
    pid_t other; /* a child of a test's own making, killed by teardown whatever happened */
    char err[2048], buf[4096];
} fixture_t;

static fixture_t fx;

/* How long a let-go may last, as coschedd passes it (Slurm's KillWait and a margin). */
#define LET_GO_MAX 40

static int setup(void **state)
{
    (void)state;
    memset(&fx, 0, sizeof fx);
    tt_tmpdir(fx.tmp, sizeof fx.tmp);
    snprintf(fx.journal, sizeof fx.journal, "%s/journal", fx.tmp);
    assert_int_equal(mkdir(fx.journal, 0700), 0);
    tt_config(&fx.cfg, 0);
    snprintf(fx.cfg.resctrl_root, sizeof fx.cfg.resctrl_root, "none");
    snprintf(fx.cfg.cgroup2_root, sizeof fx.cfg.cgroup2_root, "none");
    snprintf(fx.cfg.cgroup1_root, sizeof fx.cfg.cgroup1_root, "none");
    snprintf(fx.cfg.journal_dir, sizeof fx.cfg.journal_dir, "%s", fx.journal);
    /* cgroup v2: job_7 with two tasks in step_0 */
    snprintf(fx.job2, sizeof fx.job2, "%s/cg2/system.slice/slurmstepd.scope/job_7", fx.tmp);
    snprintf(fx.user, sizeof fx.user, "%s/step_0/user", fx.job2);
    tt_write(fx.job2, "cpu.max", "150000 100000\n");
    tt_write(fx.job2, "step_0/slurm/cgroup.procs", "1\n");
    tt_write(fx.user, "cgroup.freeze", "0\n");
    tt_write(fx.user, "task_0/cgroup.freeze", "0\n");
    tt_write(fx.user, "task_1/cgroup.freeze", "0\n");
    /* cgroup v1: job_8's freezer tree (its slurmstepd in job_8 itself) and its cpu directory */
    snprintf(fx.job1, sizeof fx.job1, "%s/freezer/slurm_cn1/uid_0/job_8", fx.tmp);
    snprintf(fx.step1, sizeof fx.step1, "%s/step_0", fx.job1);
    snprintf(fx.cpu1, sizeof fx.cpu1, "%s/cpu/slurm_cn1/uid_0/job_8", fx.tmp);
    tt_write(fx.job1, "cgroup.procs", "1\n");
    tt_write(fx.step1, "freezer.state", "THAWED\n");
    tt_write(fx.cpu1, "cpu.cfs_quota_us", "-1\n");
    tt_write(fx.cpu1, "cpu.cfs_period_us", "50000\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    throttle_group_destroy(fx.g);
    tt_child_end(&fx.a);
    tt_child_end(&fx.b);
    if (fx.other > 0) {
        kill(fx.other, SIGKILL);
        waitpid(fx.other, NULL, 0);
    }
    throttle_free(fx.t);
    tt_rm_rf(fx.tmp);
    return 0;
}

static const char *read_file(const char *dir, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return tt_read(path, fx.buf, sizeof fx.buf);
}

static void procs(const char *dir, const pid_t *pids, int n)
{
    char text[256] = "";
    for (int i = 0; i < n; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d\n", (int)pids[i]);
    tt_write(dir, "cgroup.procs", text);
}

static void attach(const throttle_slurm_job_t *job, int ncpus)
{
    fx.t = throttle_detect(&fx.cfg);
    fx.g = throttle_group_attach(fx.t, "job7", ncpus, job, fx.err, sizeof fx.err);
    if (!fx.g)
        fail_msg("cannot attach: %s", fx.err);
    assert_true(throttle_group_attached(fx.g));
}

static throttle_slurm_job_t v2_job(void)
{
    throttle_slurm_job_t j = {0};
    snprintf(j.cgroup2, sizeof j.cgroup2, "%s", fx.job2);
    return j;
}

static throttle_slurm_job_t v1_job(bool with_cpu)
{
    throttle_slurm_job_t j = {0};
    snprintf(j.freezer1, sizeof j.freezer1, "%s", fx.job1);
    if (with_cpu)
        snprintf(j.cpu1, sizeof j.cpu1, "%s", fx.cpu1);
    return j;
}

static const char *journal(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/job7", fx.journal);
    return access(path, F_OK) == 0 ? tt_read(path, fx.buf, sizeof fx.buf) : NULL;
}

static void set_share(double share)
{
    if (throttle_group_set_share(fx.g, share, 100, fx.err, sizeof fx.err) < 0)
        fail_msg("share %g: %s", share, fx.err);
}

/* A daemon that attaches, holds the job at share 0 and is killed with -9 (no leak check, no undo). */
static void crash_while_holding(throttle_slurm_job_t job)
{
    int report[2];
    assert_int_equal(pipe(report), 0);
    pid_t daemon = fork();
    assert_true(daemon >= 0);
    if (daemon == 0) {
        throttle_t *t = throttle_detect(&fx.cfg);
        throttle_group_t *g = t ? throttle_group_attach(t, "job7", 1, &job, fx.err, sizeof fx.err) : NULL;
        char held = g && throttle_group_set_share(g, 0, 100, fx.err, sizeof fx.err) == 0 ? 'h' : 'e';
        if (write(report[1], &held, 1) == 1)
            for (;;)
                pause(); /* until the kill -9 */
        _exit(1);
    }
    close(report[1]);
    char held = 0;
    assert_int_equal(read(report[0], &held, 1), 1);
    close(report[0]);
    kill(daemon, SIGKILL);
    int status;
    assert_int_equal(waitpid(daemon, &status, 0), daemon);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(held, 'h');
}

static bool is_stopped(const void *arg)
{
    return process_state(*(const pid_t *)arg) == 'T';
}

static bool is_running(const void *arg)
{
    char s = process_state(*(const pid_t *)arg);
    return s != 'T' && s != '?';
}

static void v2_quota_goes_on_slurms_job_cgroup_and_is_given_back(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v2_job();
    attach(&job, 2);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_CPU_MAX);
    char line[512];
    snprintf(line, sizeof line, "quota %s/cpu.max 150000 100000", fx.job2);
    assert_non_null(journal());
    assert_non_null(strstr(journal(), line)); /* recorded before anything is written */
    assert_string_equal(read_file(fx.job2, "cpu.max"), "150000 100000");
    set_share(0.5);
    assert_string_equal(read_file(fx.job2, "cpu.max"), "100000 100000"); /* 0.5 x 2 CPUs */
    throttle_group_destroy(fx.g);
    fx.g = NULL;
    assert_string_equal(read_file(fx.job2, "cpu.max"), "150000 100000");
    assert_null(journal());
}

/* Slurm freezes step_<s>/user to suspend; cosched freezes the task leaves below it, and never
 * the step (slurmstepd lives in step_<s>/slurm). */
static void v2_a_pause_freezes_the_task_leaves_only(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v2_job();
    attach(&job, 1);
    set_share(0);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "1");
    assert_string_equal(read_file(fx.user, "task_1/cgroup.freeze"), "1");
    assert_string_equal(read_file(fx.user, "cgroup.freeze"), "0");
    char line[512];
    snprintf(line, sizeof line, "frozen %s/task_1", fx.user);
    assert_non_null(strstr(journal(), line));
    set_share(1);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "0");
    assert_null(strstr(journal(), "frozen"));
    assert_string_equal(read_file(fx.job2, "cpu.max"), "150000 100000"); /* share 1: Slurm's own */
}

static void v2_a_task_that_starts_during_a_pause_is_frozen_too(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v2_job();
    attach(&job, 1);
    set_share(0);
    tt_write(fx.user, "task_2/cgroup.freeze", "0\n");
    throttle_watch_t w;
    throttle_group_watch(fx.g, 101, LET_GO_MAX, &w);
    assert_int_equal(w.joined, 1);
    assert_string_equal(read_file(fx.user, "task_2/cgroup.freeze"), "1");
}

static void v2_slurms_suspension_is_slurms_to_end(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v2_job();
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    tt_write(fx.user, "cgroup.freeze", "1\n"); /* scontrol suspend */
    throttle_group_watch(fx.g, 101, LET_GO_MAX, &w);
    assert_true(w.suspended);
    assert_non_null(strstr(w.detail, "Slurm suspended it"));
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "0"); /* ours let go ... */
    assert_string_equal(read_file(fx.user, "cgroup.freeze"), "1");        /* ... Slurm's kept */
    set_share(0.5);
    set_share(0);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "0");
    tt_write(fx.user, "cgroup.freeze", "0\n"); /* scontrol resume */
    throttle_group_watch(fx.g, 102, LET_GO_MAX, &w);
    assert_false(w.suspended);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "1");
}

static void v2_a_task_someone_else_froze_stays_theirs(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v2_job();
    tt_write(fx.user, "task_1/cgroup.freeze", "1\n");
    attach(&job, 1);
    set_share(0);
    char line[512];
    snprintf(line, sizeof line, "frozen %s/task_1", fx.user);
    assert_null(strstr(journal(), line));
    set_share(1);
    assert_string_equal(read_file(fx.user, "task_1/cgroup.freeze"), "1");
}

/* kill -9 mid-throttle: the next daemon's sweep undoes exactly what the journal says. */
static void v2_a_crashed_daemons_holds_are_undone_from_its_journal(void **state)
{
    (void)state;
    crash_while_holding(v2_job());
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "1");
    assert_string_equal(read_file(fx.job2, "cpu.max"), "1000 100000");
    fx.t = throttle_detect(&fx.cfg);
    throttle_sweep(fx.t);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "0");
    assert_string_equal(read_file(fx.user, "task_1/cgroup.freeze"), "0");
    assert_string_equal(read_file(fx.job2, "cpu.max"), "150000 100000");
    assert_null(journal());
}

static void v1_quota_goes_on_slurms_cpu_cgroup_and_is_given_back(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v1_job(true);
    attach(&job, 1);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_CFS_QUOTA);
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_period_us"), "100000");
    set_share(0.25);
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "25000");
    throttle_group_destroy(fx.g);
    fx.g = NULL;
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "-1");
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_period_us"), "50000");
}

/* v1 pauses with SIGSTOP, never the freezer: a task frozen under v1 cannot die. */
static void v1_a_pause_stops_the_jobs_tasks_and_resumes_them(void **state)
{
    (void)state;
    fx.a = tt_child_start(NULL);
    fx.b = tt_child_start(NULL);
    pid_t pids[] = {fx.a.pid, fx.b.pid};
    procs(fx.step1, pids, 2);
    throttle_slurm_job_t job = v1_job(false);
    attach(&job, 1);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_SIGSTOP);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    assert_true(tt_poll(is_stopped, &fx.b.pid));
    assert_string_equal(read_file(fx.step1, "freezer.state"), "THAWED");
    char line[64];
    snprintf(line, sizeof line, "stopped %d ", (int)fx.b.pid);
    assert_non_null(strstr(journal(), line));
    set_share(1);
    assert_true(tt_poll(is_running, &fx.a.pid));
    assert_true(tt_progresses(fx.b.counter));
}

static void v1_slurmstepd_and_processes_someone_else_stopped_are_left_alone(void **state)
{
    (void)state;
    fx.a = tt_child_start(NULL);
    fx.b = tt_child_start(NULL);
    kill(fx.b.pid, SIGSTOP); /* a suspend under proctrack/linuxproc, say */
    assert_true(tt_poll(is_stopped, &fx.b.pid));
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t stepd = fx.other = fork();
    if (stepd == 0) {
        prctl(PR_SET_NAME, "slurmstepd");
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char r;
    assert_int_equal(read(ready[0], &r, 1), 1); /* named slurmstepd before the job is looked at */
    close(ready[0]);
    close(ready[1]);
    pid_t pids[] = {fx.a.pid, fx.b.pid, stepd};
    procs(fx.step1, pids, 3);
    throttle_slurm_job_t job = v1_job(false);
    attach(&job, 1);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    set_share(1);
    assert_true(tt_poll(is_running, &fx.a.pid));
    assert_true(tt_still(fx.b.counter)); /* still someone else's stop */
    assert_int_equal(process_state(fx.b.pid), 'T');
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    assert_int_not_equal(process_state(stepd), 'T');
    kill(fx.b.pid, SIGCONT);
}

/* valgrind keeps every signal blocked in the processes it runs (it delivers them itself), so the
 * children of a test under valgrind show a full SigBlk: the pending-signal rule, which reads it,
 * cannot be tested there (it is in the plain and ASan runs). */
static bool under_valgrind(void)
{
    const char *preload = getenv("LD_PRELOAD");
    return preload && strstr(preload, "vgpreload");
}

/* A signal waiting on a stopped task (scancel --signal, a time limit): every hold is lifted — the
 * pause and Slurm's quota as Slurm had it — until the process it waited on is gone; a share set
 * meanwhile waits for the let-go's end. */
static void v1_a_signal_waiting_on_a_held_job_lifts_every_hold_until_it_is_acted_on(void **state)
{
    (void)state;
    if (under_valgrind()) {
        print_message(
            "# not under valgrind, which blocks every signal of its processes; the plain and ASan runs test it\n");
        return;
    }
    fx.a = tt_child_start(NULL);
    fx.b = tt_child_start(NULL);
    pid_t pids[] = {fx.a.pid, fx.b.pid};
    procs(fx.step1, pids, 2);
    throttle_slurm_job_t job = v1_job(true);
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    assert_true(tt_poll(is_stopped, &fx.b.pid));
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "1000");
    kill(fx.a.pid, SIGTERM);
    throttle_group_watch(fx.g, 200, LET_GO_MAX, &w);
    assert_true(w.let_go);
    assert_true(throttle_group_let_go(fx.g));
    assert_non_null(strstr(w.let_go_detail, "a signal waits on process"));
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "-1"); /* Slurm's, as it was */
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_period_us"), "50000");
    int status;
    assert_int_equal(waitpid(fx.a.pid, &status, 0), fx.a.pid); /* it got to act on it */
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    fx.a.pid = 0;
    assert_true(tt_progresses(fx.b.counter)); /* nothing of the job is held */
    set_share(0.25);
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "-1");
    pid_t only_b[] = {fx.b.pid};
    procs(fx.step1, only_b, 1);
    throttle_group_watch(fx.g, 201, LET_GO_MAX, &w); /* the process it waited for is gone */
    assert_true(w.held_again);
    assert_false(w.let_go);
    assert_non_null(strstr(w.let_go_detail, "are gone: held again at share 0.25"));
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_period_us"), "100000");
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "25000");
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.b.pid));
}

static bool caught_one(const void *counter)
{
    return *(volatile const unsigned long *)counter >= 1;
}

/* A signal the job catches and goes on (a checkpoint before the time limit): let go for the bound,
 * then held again; another signal lets it go again, at once. */
static void a_let_go_ends_after_its_bound_and_every_new_signal_starts_one(void **state)
{
    (void)state;
    if (under_valgrind()) {
        print_message(
            "# not under valgrind, which blocks every signal of its processes; the plain and ASan runs test it\n");
        return;
    }
    fx.a = tt_child_start_catching(SIGUSR1);
    pid_t pids[] = {fx.a.pid};
    procs(fx.step1, pids, 1);
    throttle_slurm_job_t job = v1_job(false);
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    kill(fx.a.pid, SIGUSR1);
    throttle_group_watch(fx.g, 300, LET_GO_MAX, &w);
    assert_true(w.let_go);
    assert_true(tt_poll(caught_one, (const void *)(uintptr_t)fx.a.grand_counter)); /* it caught it */
    assert_true(tt_progresses(fx.a.counter));
    throttle_group_watch(fx.g, 300 + LET_GO_MAX - 1, LET_GO_MAX, &w);
    assert_false(w.held_again);
    assert_true(tt_progresses(fx.a.counter)); /* still let go just before the bound */
    throttle_group_watch(fx.g, 300 + LET_GO_MAX, LET_GO_MAX, &w);
    assert_true(w.held_again);
    assert_non_null(strstr(w.let_go_detail, "ran out"));
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    kill(fx.a.pid, SIGUSR1); /* the time limit's SIGTERM would come so, right after */
    throttle_group_watch(fx.g, 300 + LET_GO_MAX + 1, LET_GO_MAX, &w);
    assert_true(w.let_go);
    assert_true(tt_poll(is_running, &fx.a.pid));
}

/* Slurm continues a job's processes before it signals them (scancel: SIGCONT, SIGTERM, KillWait,
 * SIGKILL): a process cosched stopped and someone else continued lets the job go, whether the
 * group saw it stopped in between or not; once held again and seen stopped, a second SIGCONT
 * lets it go again. */
static void a_stopped_process_someone_else_continued_lets_the_job_go(void **state)
{
    (void)state;
    fx.a = tt_child_start(NULL);
    pid_t pids[] = {fx.a.pid};
    procs(fx.step1, pids, 1);
    throttle_slurm_job_t job = v1_job(true);
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    kill(fx.a.pid, SIGCONT); /* before the group has looked again: no SIGSTOP waits, it runs */
    assert_true(tt_poll(is_running, &fx.a.pid));
    throttle_group_watch(fx.g, 401, LET_GO_MAX, &w);
    assert_true(w.let_go);
    assert_non_null(strstr(w.let_go_detail, "was continued by someone else"));
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "-1");
    assert_true(tt_progresses(fx.a.counter));
    assert_null(strstr(journal(), "stopped")); /* nothing of it held, nothing to undo */
    throttle_group_watch(fx.g, 401 + LET_GO_MAX, LET_GO_MAX, &w);
    assert_true(w.held_again);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "1000");
    throttle_group_watch(fx.g, 402 + LET_GO_MAX, LET_GO_MAX, &w); /* seen stopped */
    assert_false(w.let_go);
    kill(fx.a.pid, SIGCONT);
    assert_true(tt_poll(is_running, &fx.a.pid));
    throttle_group_watch(fx.g, 403 + LET_GO_MAX, LET_GO_MAX, &w);
    assert_true(w.let_go);
}

/* cgroup v2: the let-go thaws the task leaves cosched froze and gives Slurm's cpu.max back. */
static void v2_a_signal_waiting_on_a_frozen_task_thaws_it_and_gives_back_cpu_max(void **state)
{
    (void)state;
    if (under_valgrind()) {
        print_message(
            "# not under valgrind, which blocks every signal of its processes; the plain and ASan runs test it\n");
        return;
    }
    fx.a = tt_child_start(NULL);
    kill(fx.a.pid, SIGSTOP); /* stands for a frozen task: a signal sent now waits */
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    char task0[400];
    snprintf(task0, sizeof task0, "%s/task_0", fx.user);
    pid_t pids[] = {fx.a.pid};
    procs(task0, pids, 1);
    throttle_slurm_job_t job = v2_job();
    throttle_watch_t w;
    attach(&job, 2);
    set_share(0);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "1");
    assert_string_equal(read_file(fx.job2, "cpu.max"), "1000 100000");
    kill(fx.a.pid, SIGTERM);
    throttle_group_watch(fx.g, 500, LET_GO_MAX, &w);
    assert_true(w.let_go);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "0");
    assert_string_equal(read_file(fx.job2, "cpu.max"), "150000 100000");
    assert_null(strstr(journal(), "frozen"));
    kill(fx.a.pid, SIGCONT); /* what the thaw does to a real frozen task */
    int status;
    assert_int_equal(waitpid(fx.a.pid, &status, 0), fx.a.pid);
    fx.a.pid = 0;
    procs(task0, pids, 0);
    throttle_group_watch(fx.g, 501, LET_GO_MAX, &w);
    assert_true(w.held_again);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "1");
    assert_string_equal(read_file(fx.job2, "cpu.max"), "1000 100000");
}

/* A pid seen in the job once may be someone else's by the pause: what is not listed in the job's
 * cgroups when it starts is not stopped. */
static void a_process_that_left_the_job_is_not_stopped(void **state)
{
    (void)state;
    fx.a = tt_child_start(NULL);
    fx.b = tt_child_start(NULL);
    pid_t both[] = {fx.a.pid, fx.b.pid}, only_b[] = {fx.b.pid};
    procs(fx.step1, both, 2);
    throttle_slurm_job_t job = v1_job(false);
    attach(&job, 1);
    procs(fx.step1, only_b, 1); /* a left; the group has not looked since */
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.b.pid));
    assert_true(tt_progresses(fx.a.counter));
}

/* A scan that comes back short (a cgroup read that failed) forgets no hold. */
static void a_short_scan_forgets_no_stopped_process(void **state)
{
    (void)state;
    fx.a = tt_child_start(NULL);
    pid_t pids[] = {fx.a.pid};
    procs(fx.step1, pids, 1);
    throttle_slurm_job_t job = v1_job(false);
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    procs(fx.step1, pids, 0);
    throttle_group_watch(fx.g, 600, LET_GO_MAX, &w);
    set_share(1);
    assert_true(tt_poll(is_running, &fx.a.pid));
}

/* A signal the process blocks is not waiting on cosched (a sigwait thread's), nor is one for a
 * job held at share 1 (nothing to let go of). */
static void blocked_signals_and_unheld_jobs_do_not_let_go(void **state)
{
    (void)state;
    if (under_valgrind()) {
        print_message(
            "# not under valgrind, which blocks every signal of its processes; the plain and ASan runs test it\n");
        return;
    }
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t blocker = fx.other = fork();
    if (blocker == 0) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigprocmask(SIG_BLOCK, &set, NULL);
        if (write(ready[1], "b", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char b;
    assert_int_equal(read(ready[0], &b, 1), 1); /* SIGTERM blocked before anything is sent */
    close(ready[0]);
    close(ready[1]);
    pid_t pids[] = {blocker};
    procs(fx.step1, pids, 1);
    throttle_slurm_job_t job = v1_job(false);
    throttle_watch_t w;
    attach(&job, 1);
    kill(blocker, SIGTERM);
    throttle_group_watch(fx.g, 700, LET_GO_MAX, &w); /* share 1: nothing held */
    assert_false(w.let_go);
    set_share(0);
    assert_true(tt_poll(is_stopped, &blocker));
    throttle_group_watch(fx.g, 701, LET_GO_MAX, &w);
    assert_false(w.let_go);
    assert_int_equal(process_state(blocker), 'T');
}

static void v1_slurms_freezer_suspension_is_respected(void **state)
{
    (void)state;
    fx.a = tt_child_start(NULL);
    pid_t pids[] = {fx.a.pid};
    procs(fx.step1, pids, 1);
    throttle_slurm_job_t job = v1_job(false);
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    tt_write(fx.step1, "freezer.state", "FROZEN\n");
    throttle_group_watch(fx.g, 300, LET_GO_MAX, &w);
    assert_true(w.suspended);
    assert_true(tt_poll(is_running, &fx.a.pid)); /* ours continued: Slurm's freezer holds it */
    assert_null(strstr(journal(), "stopped"));
    tt_write(fx.step1, "freezer.state", "THAWED\n");
    throttle_group_watch(fx.g, 301, LET_GO_MAX, &w);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
}

static void v1_a_crashed_daemon_is_followed_by_one_that_continues_exactly_its_stops(void **state)
{
    (void)state;
    fx.a = tt_child_start(NULL);
    fx.b = tt_child_start(NULL);
    pid_t pids[] = {fx.a.pid};
    procs(fx.step1, pids, 1);
    crash_while_holding(v1_job(false));
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    kill(fx.b.pid, SIGSTOP); /* someone else's, after the crash */
    assert_true(tt_poll(is_stopped, &fx.b.pid));
    fx.t = throttle_detect(&fx.cfg);
    throttle_sweep(fx.t);
    assert_true(tt_poll(is_running, &fx.a.pid));
    assert_int_equal(process_state(fx.b.pid), 'T');
    assert_null(journal());
    kill(fx.b.pid, SIGCONT);
}

static void a_job_whose_cgroup_is_gone_is_reported_gone(void **state)
{
    (void)state;
    throttle_slurm_job_t job = v2_job();
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    char path[512];
    snprintf(path, sizeof path, "%s/cg2", fx.tmp);
    snprintf(fx.buf, sizeof fx.buf, "rm -rf '%s'", path);
    assert_int_equal(system(fx.buf), 0);
    throttle_group_watch(fx.g, 400, LET_GO_MAX, &w);
    assert_true(w.gone);
    assert_non_null(strstr(w.detail, "is gone"));
    throttle_group_destroy(fx.g); /* nothing left to undo, nothing to fail on */
    fx.g = NULL;
    assert_null(journal());
}

/* resctrl MB first where the node has it: the job's tasks moved to cosched's group, newcomers too. */
static void a_jobs_tasks_are_moved_to_a_resctrl_group_and_newcomers_follow(void **state)
{
    (void)state;
    char resctrl[128], group[256], path[320];
    snprintf(resctrl, sizeof resctrl, "%s/resctrl", fx.tmp);
    tt_write(resctrl, "info/MB/min_bandwidth", "10\n");
    tt_write(resctrl, "info/MB/bandwidth_gran", "10\n");
    tt_write(resctrl, "info/MB/num_closids", "8\n");
    tt_write(resctrl, "schemata", "MB:0=100\n");
    snprintf(fx.cfg.resctrl_root, sizeof fx.cfg.resctrl_root, "%s", resctrl);
    fx.a = tt_child_start(NULL);
    pid_t pids[] = {fx.a.pid};
    procs(fx.step1, pids, 1);
    throttle_slurm_job_t job = v1_job(false);
    attach(&job, 1);
    assert_int_equal(throttle_group_knob(fx.g), KNOB_RESCTRL_MB);
    snprintf(group, sizeof group, "%s/%s-job7", resctrl, fx.cfg.subtree);
    snprintf(path, sizeof path, "%s/tasks", group);
    assert_true(tt_file_has_id(path, fx.a.pid));
    set_share(0.5);
    assert_string_equal(read_file(group, "schemata"), "MB:0=50");
    fx.b = tt_child_start(NULL);
    pid_t more[] = {fx.a.pid, fx.b.pid};
    procs(fx.step1, more, 2);
    throttle_watch_t w;
    throttle_group_watch(fx.g, 500, LET_GO_MAX, &w);
    assert_int_equal(w.joined, 1);
    assert_true(tt_file_has_id(path, fx.b.pid));
    set_share(0.05); /* below resctrl's 10 %: the rest is SIGSTOP duty cycling, v1 */
    assert_string_equal(read_file(group, "schemata"), "MB:0=10");
    assert_true(throttle_group_duty_cycling(fx.g));
}

static void attaching_needs_a_cgroup_of_slurms(void **state)
{
    (void)state;
    throttle_slurm_job_t none = {0}, spaced = {0};
    snprintf(spaced.cgroup2, sizeof spaced.cgroup2, "/sys/fs/cgroup/a b/job_7");
    fx.t = throttle_detect(&fx.cfg);
    assert_null(throttle_group_attach(fx.t, "job7", 1, &none, fx.err, sizeof fx.err));
    assert_non_null(strstr(fx.err, "job confine has not run"));
    assert_null(throttle_group_attach(fx.t, "job7", 1, &spaced, fx.err, sizeof fx.err));
    assert_non_null(strstr(fx.err, "without spaces"));
    throttle_free(fx.t);
    fx.cfg.journal_dir[0] = '\0'; /* nowhere to record holds: none are taken */
    fx.t = throttle_detect(&fx.cfg);
    throttle_slurm_job_t job = v2_job();
    assert_null(throttle_group_attach(fx.t, "job7", 1, &job, fx.err, sizeof fx.err));
    assert_non_null(strstr(fx.err, "no journal directory"));
}

/* job confine: the task's cgroup lines and the mounts give the job's directories, each checked as
 * one root made. */
static void a_tasks_cgroups_give_its_jobs_directories(void **state)
{
    (void)state;
    char mountinfo[256], text[2048];
    snprintf(mountinfo, sizeof mountinfo, "%s/mountinfo", fx.tmp);
    snprintf(text, sizeof text,
             "30 23 0:28 / %s/cg2 rw,relatime - cgroup2 cgroup2 rw\n"
             "31 23 0:29 / %s/freezer rw,relatime - cgroup cgroup rw,freezer\n"
             "32 23 0:30 / %s/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
             "33 23 0:31 / %s/cpu rw,relatime - cgroup cgroup rw,cpu,cpuacct\n",
             fx.tmp, fx.tmp, fx.tmp, fx.tmp);
    tt_write(fx.tmp, "mountinfo", text);
    tt_write(fx.tmp, "cpuset/slurm_cn1/uid_0/job_8/step_0/task_0/cpuset.cpus", "1\n");
    tt_write(fx.tmp, "cpu/slurm_cn1/uid_0/job_8/step_0/task_0/cpu.shares", "1024\n");
    throttle_slurm_job_t out;
    char why[512];
    const char *v1 = "12:freezer:/slurm_cn1/uid_0/job_8/step_0\n"
                     "11:cpuset:/slurm_cn1/uid_0/job_8/step_0/task_0\n"
                     "4:cpu,cpuacct:/slurm_cn1/uid_0/job_8/step_0/task_0\n"
                     "0::/system.slice/slurmd.service\n";
    assert_int_equal(slurm_cgroup_parse(v1, mountinfo, "8", &out, why, sizeof why), 0);
    assert_string_equal(out.freezer1, fx.job1);
    assert_string_equal(out.cpu1, fx.cpu1);
    assert_string_equal(out.cgroup2, "");
    const char *v2 = "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n";
    assert_int_equal(slurm_cgroup_parse(v2, mountinfo, "7", &out, why, sizeof why), 0);
    assert_string_equal(out.cgroup2, fx.job2);
    assert_int_equal(slurm_cgroup_parse(v2, mountinfo, "9", &out, why, sizeof why), -1);
    assert_non_null(strstr(why, "job 9"));
    /* a job_<id> a user made (in a directory a user may write to) is not Slurm's */
    char user_dir[256];
    snprintf(user_dir, sizeof user_dir, "%s/cg2/home/job_7", fx.tmp);
    tt_write(user_dir, "cgroup.procs", "");
    snprintf(text, sizeof text, "%s/cg2/home", fx.tmp);
    chmod(text, 0777);
    const char *planted = "0::/home/job_7/step_0\n";
    assert_int_equal(slurm_cgroup_parse(planted, mountinfo, "7", &out, why, sizeof why), -1);
    assert_non_null(strstr(why, "writable by others than root"));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(v2_quota_goes_on_slurms_job_cgroup_and_is_given_back),
        T(v2_a_pause_freezes_the_task_leaves_only),
        T(v2_a_task_that_starts_during_a_pause_is_frozen_too),
        T(v2_slurms_suspension_is_slurms_to_end),
        T(v2_a_task_someone_else_froze_stays_theirs),
        T(v2_a_crashed_daemons_holds_are_undone_from_its_journal),
        T(v1_quota_goes_on_slurms_cpu_cgroup_and_is_given_back),
        T(v1_a_pause_stops_the_jobs_tasks_and_resumes_them),
        T(v1_slurmstepd_and_processes_someone_else_stopped_are_left_alone),
        T(v1_a_signal_waiting_on_a_held_job_lifts_every_hold_until_it_is_acted_on),
        T(a_let_go_ends_after_its_bound_and_every_new_signal_starts_one),
        T(a_stopped_process_someone_else_continued_lets_the_job_go),
        T(v2_a_signal_waiting_on_a_frozen_task_thaws_it_and_gives_back_cpu_max),
        T(a_process_that_left_the_job_is_not_stopped),
        T(a_short_scan_forgets_no_stopped_process),
        T(blocked_signals_and_unheld_jobs_do_not_let_go),
        T(v1_slurms_freezer_suspension_is_respected),
        T(v1_a_crashed_daemon_is_followed_by_one_that_continues_exactly_its_stops),
        T(a_job_whose_cgroup_is_gone_is_reported_gone),
        T(a_jobs_tasks_are_moved_to_a_resctrl_group_and_newcomers_follow),
        T(attaching_needs_a_cgroup_of_slurms),
        T(a_tasks_cgroups_give_its_jobs_directories),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
