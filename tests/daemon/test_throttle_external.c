/* test_throttle_external: co-tenants Slurm started, held in the cgroups Slurm made for them — on
 * fake trees laid out as Slurm 22.05-24.11 lays them out (cgroup v2 and v1), with real processes
 * where a signal must reach one. What is written where, what is never written (step_<s>/user's
 * cgroup.freeze, slurmstepd), Slurm's suspension respected, a signal only let through unless the
 * job ends (Slurm's word, or an exit), the journal written before each hold and undone after a
 * crash, and finding a job's cgroups from a task's. */
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

#include "ending.h"
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
    throttle_group_watch(fx.g, 101, &w);
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
    throttle_group_watch(fx.g, 101, &w);
    assert_true(w.suspended);
    assert_non_null(strstr(w.detail, "Slurm suspended it"));
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "0"); /* ours let go ... */
    assert_string_equal(read_file(fx.user, "cgroup.freeze"), "1");        /* ... Slurm's kept */
    set_share(0.5);
    set_share(0);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "0");
    tt_write(fx.user, "cgroup.freeze", "0\n"); /* scontrol resume */
    throttle_group_watch(fx.g, 102, &w);
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

static const char *skip_under_valgrind =
    "# not under valgrind, which blocks every signal of its processes; the plain and ASan runs test it\n";

/* Whether sig waits on pid (/proc/PID/status ShdPnd or SigPnd). */
static bool waits(pid_t pid, int sig)
{
    char path[64], status[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    tt_read(path, status, sizeof status);
    unsigned long long pending = 0;
    for (const char *key = "\nShdPnd:"; key; key = strcmp(key, "\nShdPnd:") == 0 ? "\nSigPnd:" : NULL) {
        const char *at = strstr(status, key);
        if (at)
            pending |= strtoull(at + strlen(key), NULL, 16);
    }
    return pending & (1ULL << (sig - 1));
}

static bool usr1_taken(const void *arg)
{
    return !waits(*(const pid_t *)arg, SIGUSR1);
}

static bool caught_one(const void *counter)
{
    return *(volatile const unsigned long *)counter >= 1;
}

static void assert_let_go_counts(unsigned long whole, unsigned long delivery)
{
    unsigned long w, d;
    throttle_group_let_go_counts(fx.g, &w, &d);
    assert_int_equal(w, whole);
    assert_int_equal(d, delivery);
}

/* A signal alone is no evidence that the job ends (its owner may send one every 100 ms from
 * outside its cgroups): it is let through — the stopped process continued and stopped again at
 * once, its handler set up to run at its share — at most once per window, and nothing else of
 * the hold moves. The watch reports it as news, for Slurm to be asked. */
static void v1_a_signal_alone_is_let_through_once_a_window_and_the_hold_kept(void **state)
{
    (void)state;
    if (under_valgrind()) {
        print_message("%s", skip_under_valgrind);
        return;
    }
    fx.a = tt_child_start_catching(SIGUSR1);
    pid_t pids[] = {fx.a.pid};
    procs(fx.step1, pids, 1);
    throttle_slurm_job_t job = v1_job(true);
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    kill(fx.a.pid, SIGUSR1);
    throttle_group_watch(fx.g, 200, &w);
    assert_true(w.news && w.delivered);
    assert_false(w.let_go);
    assert_false(throttle_group_let_go(fx.g));
    assert_non_null(strstr(w.news_detail, "a signal waits on process"));
    assert_let_go_counts(0, 1);
    assert_true(tt_poll(usr1_taken, &fx.a.pid)); /* taken, its handler set up */
    assert_true(tt_poll(is_stopped, &fx.a.pid)); /* and stopped again (its handler may have run in the
                                                  * moment between the SIGCONT and the SIGSTOP) */
    assert_true(tt_still(fx.a.counter));
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "1000");
    assert_non_null(strstr(journal(), "stopped"));
    set_share(1); /* its share: the handler runs */
    assert_true(tt_poll(caught_one, (const void *)(uintptr_t)fx.a.grand_counter));
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    kill(fx.a.pid, SIGUSR1); /* within the window: it waits */
    throttle_group_watch(fx.g, 200 + THROTTLE_DELIVERY_WINDOW - 1, &w);
    assert_true(w.news);
    assert_false(w.delivered || w.let_go);
    assert_let_go_counts(0, 1);
    assert_true(waits(fx.a.pid, SIGUSR1));
    throttle_group_watch(fx.g, 200 + THROTTLE_DELIVERY_WINDOW, &w); /* the next window */
    assert_true(w.delivered);
    assert_let_go_counts(0, 2);
    assert_true(tt_poll(usr1_taken, &fx.a.pid));
    assert_true(tt_poll(is_stopped, &fx.a.pid));
}

/* Slurm shows the job ending (the caller asked it about the watch's news): every hold is lifted —
 * the pause and the quota as Slurm had it — until every process the job had then is gone; a
 * share set meanwhile waits for the let-go's end. */
static void v1_a_job_slurm_shows_ending_is_let_go_whole_until_its_processes_are_gone(void **state)
{
    (void)state;
    if (under_valgrind()) {
        print_message("%s", skip_under_valgrind);
        return;
    }
    fx.a = tt_child_start_catching(SIGTERM);
    fx.b = tt_child_start(NULL);
    pid_t pids[] = {fx.a.pid, fx.b.pid};
    procs(fx.step1, pids, 2);
    throttle_slurm_job_t job = v1_job(true);
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    assert_true(tt_poll(is_stopped, &fx.b.pid));
    kill(fx.a.pid, SIGTERM);
    throttle_group_watch(fx.g, 200, &w);
    assert_true(w.news);
    assert_false(w.let_go);
    assert_true(throttle_group_let_go_whole(fx.g, 201, LET_GO_MAX, "a signal waits, and Slurm shows it CANCELLED"));
    assert_true(throttle_group_let_go(fx.g));
    assert_non_null(strstr(throttle_group_let_go_reason(fx.g), "Slurm shows it CANCELLED"));
    assert_false(throttle_group_let_go_whole(fx.g, 201, LET_GO_MAX, "again")); /* let go already */
    assert_let_go_counts(1, 1);
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "-1"); /* Slurm's, as it was */
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_period_us"), "50000");
    assert_true(tt_poll(caught_one, (const void *)(uintptr_t)fx.a.grand_counter)); /* it acts on it */
    assert_true(tt_progresses(fx.b.counter));                                      /* nothing of the job is held */
    set_share(0.25);
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "-1");
    tt_child_end(&fx.a);
    procs(fx.step1, &fx.b.pid, 1);
    throttle_group_watch(fx.g, 202, &w); /* b, of the job then, still runs */
    assert_false(w.held_again);
    tt_child_end(&fx.b);
    procs(fx.step1, pids, 0);
    throttle_group_watch(fx.g, 203, &w);
    assert_true(w.held_again);
    assert_non_null(strstr(w.let_go_detail, "are gone: held again at share 0.25"));
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_period_us"), "100000");
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "25000");
}

/* A whole let-go whose processes go on (a checkpoint that outlasts KillWait) ends at its bound;
 * a signal after it is only let through: a new whole let-go needs Slurm's word again. */
static void a_whole_let_go_ends_at_its_bound_and_a_later_signal_is_only_let_through(void **state)
{
    (void)state;
    if (under_valgrind()) {
        print_message("%s", skip_under_valgrind);
        return;
    }
    fx.a = tt_child_start_catching(SIGUSR1);
    procs(fx.step1, &fx.a.pid, 1);
    throttle_slurm_job_t job = v1_job(false);
    throttle_watch_t w;
    attach(&job, 1);
    set_share(0);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    assert_true(throttle_group_let_go_whole(fx.g, 300, LET_GO_MAX, "Slurm shows it PREEMPTED"));
    assert_true(tt_progresses(fx.a.counter));
    throttle_group_watch(fx.g, 300 + LET_GO_MAX - 1, &w);
    assert_false(w.held_again);
    assert_true(tt_progresses(fx.a.counter)); /* still let go just before the bound */
    throttle_group_watch(fx.g, 300 + LET_GO_MAX, &w);
    assert_true(w.held_again);
    assert_non_null(strstr(w.let_go_detail, "ran out"));
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    kill(fx.a.pid, SIGUSR1);
    throttle_group_watch(fx.g, 300 + LET_GO_MAX + 1, &w);
    assert_true(w.news && w.delivered);
    assert_false(w.let_go);
    assert_true(tt_poll(usr1_taken, &fx.a.pid));
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    assert_let_go_counts(1, 1);
}

/* Slurm continues a job's processes before it signals them (scancel: SIGCONT, SIGTERM), but so
 * can the job's owner, as often as it likes: a process cosched stopped and someone continued is
 * stopped again at once, whether the group saw it stopped in between or not, and reported as
 * news (Slurm is asked whether the job ends); the hold stays, and no let-go is counted. */
static void a_stopped_process_someone_else_continued_is_stopped_again(void **state)
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
    throttle_group_watch(fx.g, 401, &w);
    assert_true(w.news);
    assert_false(w.let_go || w.delivered);
    assert_int_equal(w.stopped_again, 1);
    assert_non_null(strstr(w.news_detail, "was continued by someone else"));
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    assert_string_equal(read_file(fx.cpu1, "cpu.cfs_quota_us"), "1000"); /* what it ran meanwhile */
    assert_non_null(strstr(journal(), "stopped"));
    throttle_group_watch(fx.g, 402, &w); /* seen stopped */
    assert_false(w.news);
    kill(fx.a.pid, SIGCONT);
    assert_true(tt_poll(is_running, &fx.a.pid));
    throttle_group_watch(fx.g, 403, &w);
    assert_int_equal(w.stopped_again, 1);
    assert_true(tt_poll(is_stopped, &fx.a.pid));
    assert_let_go_counts(0, 0);
    assert_true(throttle_group_let_go_whole(fx.g, 404, LET_GO_MAX, "Slurm shows it COMPLETING"));
    assert_true(tt_poll(is_running, &fx.a.pid));
    assert_null(strstr(journal(), "stopped")); /* nothing of it held, nothing to undo */
}

/* cgroup v2: a signal alone thaws the task leaves only to deliver it, and freezes them again;
 * Slurm's word that the job ends thaws them and gives Slurm's cpu.max back. */
static void v2_a_signal_is_let_through_a_thaw_and_an_ending_job_gets_cpu_max_back(void **state)
{
    (void)state;
    if (under_valgrind()) {
        print_message("%s", skip_under_valgrind);
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
    throttle_group_watch(fx.g, 500, &w);
    assert_true(w.news && w.delivered);
    assert_false(w.let_go);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "1"); /* frozen again */
    assert_string_equal(read_file(fx.job2, "cpu.max"), "1000 100000");
    assert_true(throttle_group_let_go_whole(fx.g, 501, LET_GO_MAX, "Slurm shows it TIMEOUT"));
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "0");
    assert_string_equal(read_file(fx.job2, "cpu.max"), "150000 100000");
    assert_null(strstr(journal(), "frozen"));
    kill(fx.a.pid, SIGCONT); /* what the thaw does to a real frozen task */
    int status;
    assert_int_equal(waitpid(fx.a.pid, &status, 0), fx.a.pid);
    fx.a.pid = 0;
    procs(task0, pids, 0);
    throttle_group_watch(fx.g, 502, &w);
    assert_true(w.held_again);
    assert_string_equal(read_file(fx.user, "task_0/cgroup.freeze"), "1");
    assert_string_equal(read_file(fx.job2, "cpu.max"), "1000 100000");
    assert_let_go_counts(1, 1);
}

/* The state in a line of `scontrol -o show job`, and which states are a job's end. */
static void slurms_job_state_tells_an_ending_job(void **state)
{
    (void)state;
    char st[64];
    ending_job_state("JobId=12 JobName=x UserId=u(1) JobState=COMPLETING Reason=None Dependency=(null)", st, sizeof st);
    assert_string_equal(st, "COMPLETING");
    ending_job_state("JobId=12 JobName=JobState=RUNNING JobState=CANCELLED Reason=None", st, sizeof st);
    assert_string_equal(st, "CANCELLED"); /* a job named so is not its state */
    ending_job_state("JobId=12 JobName=x JobState=COMPLETING UserId=u(1) JobState=RUNNING Reason=None", st, sizeof st);
    assert_string_equal(st, ""); /* its owner wrote one of them: neither is believed */
    ending_job_state("slurm_load_jobs error: Invalid job id specified\n", st, sizeof st);
    assert_string_equal(st, "");
    static const char *const ends[] = {"COMPLETING", "CANCELLED", "PREEMPTED", "REQUEUED", "TIMEOUT",
                                       "COMPLETED",  "FAILED",    "NODE_FAIL", "DEADLINE", "OUT_OF_MEMORY"};
    /* STOPPED and SIGNALING: what the owner's own `scancel --signal=STOP` (or any signal) shows */
    static const char *const goes_on[] = {"RUNNING",     "SUSPENDED", "PENDING",
                                          "CONFIGURING", "RESIZING",  "STOPPED",
                                          "SIGNALING",   "",          "NEW_STATE_OF_A_LATER_SLURM"};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        assert_true(ending_state_ends(ends[i]));
    for (size_t i = 0; i < sizeof goes_on / sizeof goes_on[0]; i++)
        assert_false(ending_state_ends(goes_on[i]));
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
    throttle_group_watch(fx.g, 600, &w);
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
    throttle_group_watch(fx.g, 700, &w); /* share 1: nothing held */
    assert_false(w.let_go || w.news);
    set_share(0);
    assert_true(tt_poll(is_stopped, &blocker));
    throttle_group_watch(fx.g, 701, &w);
    assert_false(w.let_go || w.news || w.delivered);
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
    throttle_group_watch(fx.g, 300, &w);
    assert_true(w.suspended);
    assert_true(tt_poll(is_running, &fx.a.pid)); /* ours continued: Slurm's freezer holds it */
    assert_null(strstr(journal(), "stopped"));
    tt_write(fx.step1, "freezer.state", "THAWED\n");
    throttle_group_watch(fx.g, 301, &w);
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
    throttle_group_watch(fx.g, 400, &w);
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
    throttle_group_watch(fx.g, 500, &w);
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
        T(v1_a_signal_alone_is_let_through_once_a_window_and_the_hold_kept),
        T(v1_a_job_slurm_shows_ending_is_let_go_whole_until_its_processes_are_gone),
        T(a_whole_let_go_ends_at_its_bound_and_a_later_signal_is_only_let_through),
        T(a_stopped_process_someone_else_continued_is_stopped_again),
        T(v2_a_signal_is_let_through_a_thaw_and_an_ending_job_gets_cpu_max_back),
        T(slurms_job_state_tells_an_ending_job),
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
