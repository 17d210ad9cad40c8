/* test_escalation: a co-tenant Slurm started, held at the minimum share too long, requeued
 * through a stand-in scontrol (a shell script that records each call and the state of the held
 * process at that moment) — only where its job says Requeue=1, its process resumed before the
 * requeue, then this node added to its ExcNodeList; never when requeue_after is 0, pinned by an
 * operator, not a Slurm job id or Requeue=0; a failing or hanging scontrol is retried later and
 * never waited on; a failing exclusion leaves the job requeued; a requeue under way goes on to its
 * exclusion when the job is released meanwhile (its epilog, as Slurm ends its tasks). Times are simulated; only
 * the stand-in's own run is waited for, in a bounded poll. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cotenants.h"
#include "slurm_fixture.h"
#include "escalation.h"
#include "requeue_limits.h"
#include "process.h"
#include "throttle.h"

static daemon_t *d;
static throttle_t *t;
static pid_t held;
static char calls[4300];

static const char scontrol_text[] =
    "#!/bin/sh\n"
    "dir=$(dirname \"$0\")\n"
    "echo \"$* $(awk '{print $3}' /proc/$(cat \"$dir/pid\")/stat)\" >>\"$dir/calls\"\n"
    "echo \"$SLURM_CONF\" >\"$dir/slurm_conf\"\n"
    "case \"$1 $3\" in\n"
    "'show 81') printf 'JobId=81 JobName=noise\\n   Requeue=1 Restarts=0 BatchFlag=1\\n   ExcNodeList=cn9\\n' ;;\n"
    "'show 86') printf 'JobId=86 JobName=noise\\n   Requeue=1 Restarts=0 BatchFlag=1\\n   ExcNodeList=(null)\\n' ;;\n"
    "'show 85') printf 'JobId=85 JobName=noise\\n   Requeue=1 Restarts=0 BatchFlag=1\\n   ExcNodeList=(null)\\n' ;;\n"
    "'show 82') printf 'JobId=82 JobName=noise\\n   Requeue=0 Restarts=0 BatchFlag=1\\n' ;;\n"
    "'show 83') echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1 ;;\n"
    "'show 84') exec sleep 100 ;;\n"
    "esac\n"
    "case \"$1 $2\" in 'requeue 81'|'requeue 85'|'update JobId=81'|'update JobId=86') exit 0 ;;\n"
    "'requeue 86') sleep 1; exit 0 ;;\n"
    "'update '*) echo 'Job is no longer pending execution' >&2; exit 1 ;;\n"
    "'requeue '*) echo 'Requested operation is presently disabled' >&2; exit 1 ;; esac\n";

static int setup(void **state)
{
    (void)state;
    d = fixture_daemon("ci-2core-gpu.xml");
    fixture_scontrol(d, scontrol_text);
    char path[4200];
    snprintf(calls, sizeof calls, "%s/calls", d->cfg.state_dir);
    d->cfg.requeue_after = 600;
    snprintf(d->cfg.requeue_partitions[0], sizeof d->cfg.requeue_partitions[0], "harvest");
    d->cfg.n_requeue_partitions = 1;
    snprintf(d->cfg.slurm_node, sizeof d->cfg.slurm_node, "cn1");
    snprintf(d->cfg.slurm_conf, sizeof d->cfg.slurm_conf, "/etc/test-cluster/slurm.conf");
    t = d->throttle = fixture_sigstop_throttle();
    held = fork();
    if (held == 0)
        for (;;)
            pause();
    snprintf(path, sizeof path, "%s/pid", d->cfg.state_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%d\n", (int)held);
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kill(held, SIGKILL);
    waitpid(held, NULL, 0);
    fixture_slurm_free(d, t); /* escalation_record_forget on every job */
    return 0;
}

/* A co-tenant Slurm started, its process held at share 0 by the guard (SIGSTOP here). */
static job_t *held_cotenant(const char *id)
{
    job_t *j = fixture_held_cotenant(d, t, id, 0);
    snprintf(j->partition, sizeof j->partition, "harvest"); /* guard.requeue_partitions lists it */
    char err[512];
    assert_int_equal(throttle_group_add_pid(j->throttle, held, err, sizeof err), 0);
    assert_int_equal(throttle_group_set_share(j->throttle, 0, 1, err, sizeof err), 0);
    /* SIGSTOP takes effect when it runs: wait for it, a minute at most (valgrind, a loaded machine) */
    for (double end = clock_now_mono() + 60; process_state(held) != 'T' && clock_now_mono() < end;)
        usleep(10000);
    assert_int_equal(process_state(held), 'T');
    return j;
}

/* Ticks at the simulated time now until scontrol is done (a wait for the script, a minute at most). */
static void settle(job_t *j, double now)
{
    for (double end = clock_now_mono() + 60; clock_now_mono() < end;) {
        escalation_tick(d, now);
        if (j->escalation.scontrol.pid == 0 && j->escalation.step != ESCALATION_CHECKING &&
            j->escalation.step != ESCALATION_REQUEUEING)
            return;
        usleep(10000);
    }
    fail_msg("scontrol still running after 60 s (step %s)", escalation_step_name(j->escalation.step));
}

static const char *read_calls(char *buf, size_t len)
{
    return fixture_read(calls, buf, len);
}

static void requeued_after_its_processes_are_resumed_and_this_node_excluded(void **state)
{
    (void)state;
    char buf[1024];
    job_t *j = held_cotenant("81");
    escalation_tick(d, 1000);
    assert_int_equal(j->escalation.step, ESCALATION_NONE);
    settle(j, 1599); /* at the minimum for 599 s: not yet */
    assert_int_equal(access(calls, F_OK), -1);
    assert_int_equal(process_state(held), 'T');
    settle(j, 1600);
    assert_int_equal(j->escalation.step, ESCALATION_REQUEUED);
    assert_int_equal(j->escalation.requeues, 1);
    /* asked first while it was held (T), requeued once it ran again (not T: continued), then
     * kept off this node (cn1) beside the node it was kept off already (cn9) */
    read_calls(buf, sizeof buf);
    assert_true(strncmp(buf, "show job 81 T\nrequeue 81 ", 25) == 0);
    assert_true(buf[25] != 'T' && buf[25] != '\0' && buf[26] == '\n');
    assert_true(strncmp(buf + 27, "update JobId=81 ExcNodeList=cn9,cn1 ", 36) == 0);
    size_t all = strlen(buf);
    assert_null(j->throttle);
    assert_non_null(strstr(j->hold_error, "requeued through Slurm"));
    assert_non_null(
        strstr(j->escalation.detail, "requeued through Slurm after 600 s at the minimum share; cn1 excluded"));
    settle(j, 5000); /* once */
    assert_int_equal(strlen(read_calls(buf, sizeof buf)), all);
    /* scontrol asked the cluster of guard.slurm_conf, whatever coschedd's own environment says */
    char seen[4300], path[4300];
    snprintf(path, sizeof path, "%s/slurm_conf", d->cfg.state_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(seen, sizeof seen, f));
    fclose(f);
    assert_string_equal(seen, "/etc/test-cluster/slurm.conf\n");
}

static void requeued_all_the_same_when_the_exclusion_fails(void **state)
{
    (void)state;
    char buf[1024];
    job_t *j = held_cotenant("85");
    escalation_tick(d, 1);
    settle(j, 601);
    assert_int_equal(j->escalation.step, ESCALATION_REQUEUED);
    assert_int_equal(j->escalation.requeues, 1);
    assert_non_null(strstr(read_calls(buf, sizeof buf), "update JobId=85 ExcNodeList=cn1 "));
    assert_non_null(strstr(j->escalation.detail, "cn1 not excluded: Job is no longer pending execution"));
}

static void a_requeue_goes_on_when_its_job_is_released_meanwhile(void **state)
{
    (void)state;
    char buf[1024];
    job_t *j = held_cotenant("86");
    escalation_tick(d, 1);
    for (double end = clock_now_mono() + 60; j->escalation.step != ESCALATION_REQUEUEING && clock_now_mono() < end;) {
        escalation_tick(d, 601);
        usleep(10000);
    }
    assert_int_equal(j->escalation.step, ESCALATION_REQUEUEING); /* its requeue takes a second */
    escalation_record_forget(&j->escalation, j->id);             /* the epilog's release, meanwhile */
    assert_int_equal(j->escalation.scontrol.pid, 0);
    for (double end = clock_now_mono() + 60;
         !strstr(read_calls(buf, sizeof buf), "update JobId=86 ExcNodeList=cn1 ") && clock_now_mono() < end;)
        usleep(10000);
    assert_non_null(strstr(buf, "requeue 86 "));
    assert_non_null(strstr(buf, "update JobId=86 ExcNodeList=cn1 "));
    escalation_record_reap_detached(clock_now_mono());
}

static void never_when_its_job_may_not_be_requeued(void **state)
{
    (void)state;
    char buf[1024];
    job_t *j = held_cotenant("82");
    escalation_tick(d, 0.5);
    settle(j, 700);
    assert_int_equal(j->escalation.step, ESCALATION_REFUSED);
    assert_non_null(strstr(j->escalation.detail, "Requeue=0"));
    assert_string_equal(read_calls(buf, sizeof buf), "show job 82 T\n");
    assert_non_null(j->throttle); /* still held */
    assert_int_equal(process_state(held), 'T');
    settle(j, 5000); /* asked once per hold */
    assert_string_equal(read_calls(buf, sizeof buf), "show job 82 T\n");
}

static void off_by_default_and_not_for_a_pinned_share(void **state)
{
    (void)state;
    job_t *j = held_cotenant("81");
    d->cfg.requeue_after = 0; /* the default */
    escalation_tick(d, 1);
    settle(j, 1e6);
    assert_int_equal(j->escalation.step, ESCALATION_NONE);
    d->cfg.requeue_after = 600;
    snprintf(d->cfg.slurm_node, sizeof d->cfg.slurm_node, "cn1");
    snprintf(d->cfg.slurm_conf, sizeof d->cfg.slurm_conf, "/etc/test-cluster/slurm.conf");
    j->share_override = 0; /* pinned by an operator: the guard does not hold it */
    escalation_tick(d, 2e6);
    settle(j, 3e6);
    assert_int_equal(j->escalation.step, ESCALATION_NONE);
    assert_int_equal(access(calls, F_OK), -1);
    assert_true(j->escalation.at_minimum_since == 0);
}

static void a_share_above_the_minimum_starts_the_count_again(void **state)
{
    (void)state;
    job_t *j = held_cotenant("81");
    escalation_tick(d, 1);
    settle(j, 500);
    j->share = 0.5;
    escalation_tick(d, 501);
    assert_true(j->escalation.at_minimum_since == 0);
    j->share = 0;
    escalation_tick(d, 502);
    settle(j, 1101); /* 599 s at the minimum since it came back */
    assert_int_equal(access(calls, F_OK), -1);
}

static void not_a_slurm_job_id(void **state)
{
    (void)state;
    job_t *j = held_cotenant("noise-a");
    escalation_tick(d, 1);
    settle(j, 700);
    assert_int_equal(j->escalation.step, ESCALATION_REFUSED);
    assert_non_null(strstr(j->escalation.detail, "not a Slurm job id"));
    assert_int_equal(access(calls, F_OK), -1);
}

static void a_failing_scontrol_is_tried_again_later(void **state)
{
    (void)state;
    char buf[1024];
    job_t *j = held_cotenant("83");
    escalation_tick(d, 1);
    settle(j, 700);
    assert_int_equal(j->escalation.step, ESCALATION_FAILED);
    assert_non_null(strstr(j->escalation.detail, "Invalid job id specified"));
    assert_non_null(j->throttle);
    settle(j, 730); /* within the 60 s before another try */
    assert_string_equal(read_calls(buf, sizeof buf), "show job 83 T\n");
    settle(j, 761);
    assert_string_equal(read_calls(buf, sizeof buf), "show job 83 T\nshow job 83 T\n");
    assert_non_null(strstr(j->escalation.detail, "tried again in 120 s")); /* the second waits twice as long */
    settle(j, 870);
    assert_string_equal(read_calls(buf, sizeof buf), "show job 83 T\nshow job 83 T\n");
    settle(j, 882);
    assert_string_equal(read_calls(buf, sizeof buf), "show job 83 T\nshow job 83 T\nshow job 83 T\n");
}

/* A scontrol that hangs (slurmctld unreachable) is killed after 30 s, never waited on. */
static void a_hanging_scontrol_is_killed(void **state)
{
    (void)state;
    job_t *j = held_cotenant("84");
    escalation_tick(d, 1);
    escalation_tick(d, 700);
    assert_int_equal(j->escalation.step, ESCALATION_CHECKING);
    pid_t pid = j->escalation.scontrol.pid;
    assert_true(pid > 0);
    escalation_tick(d, 710); /* returns at once: still running */
    assert_int_equal(j->escalation.step, ESCALATION_CHECKING);
    settle(j, 731);
    assert_int_equal(j->escalation.step, ESCALATION_FAILED);
    assert_non_null(strstr(j->escalation.detail, "longer than 30 s"));
    assert_int_equal(kill(pid, 0), -1); /* reaped */
}

static void forgetting_a_job_kills_its_scontrol(void **state)
{
    (void)state;
    job_t *j = held_cotenant("84");
    escalation_tick(d, 1);
    escalation_tick(d, 700);
    pid_t pid = j->escalation.scontrol.pid;
    assert_true(pid > 0);
    escalation_record_forget(&j->escalation, j->id);
    assert_int_equal(j->escalation.scontrol.pid, 0);
    assert_int_equal(kill(pid, 0), -1);
    json_t *o = escalation_to_json(j, 710);
    assert_string_equal(json_string_value(json_object_get(o, "step")), "checking");
    json_decref(o);
}

static void never_for_a_partition_the_site_did_not_opt_in(void **state)
{
    (void)state;
    job_t *j = held_cotenant("81");
    snprintf(j->partition, sizeof j->partition, "gpu");
    escalation_tick(d, 1);
    settle(j, 1000);
    assert_int_equal(j->escalation.step, ESCALATION_REFUSED);
    assert_non_null(strstr(j->escalation.detail, "its partition 'gpu' is not in guard.requeue_partitions: left held"));
    assert_int_equal(access(calls, F_OK), -1); /* Slurm was never asked */
    assert_int_equal(process_state(held), 'T');
    j->partition[0] = '\0';
    j->escalation.step = ESCALATION_NONE;
    settle(j, 2000);
    assert_non_null(strstr(j->escalation.detail, "its partition (none given) is not in guard.requeue_partitions"));
}

static void at_most_requeues_per_owner_a_day_on_one_trainer_owners_word(void **state)
{
    (void)state;
    char buf[1024];
    job_t *j = held_cotenant("81");
    job_t *tr = fixture_job(d, "t9", ROLE_TRAINER, PLAN_CORES, 0);
    d->cfg.requeues_per_owner = 2;
    requeue_limits_charge(d, 100);
    requeue_limits_charge(d, 100);
    escalation_tick(d, 100);
    settle(j, 1000);
    assert_int_equal(j->escalation.step, ESCALATION_FAILED);
    assert_non_null(strstr(j->escalation.detail, "trainer t9's owner"));
    assert_non_null(strstr(j->escalation.detail, "has had 2 co-tenants requeued in 900 s (guard.requeues_per_owner 2"));
    assert_true(j->escalation.retry_at == 100 + 86400);
    assert_int_equal(access(calls, F_OK), -1);
    settle(j, 100 + 86400); /* a day on, the owner's count starts again: requeued, and charged */
    assert_int_equal(j->escalation.step, ESCALATION_REQUEUED);
    assert_non_null(strstr(read_calls(buf, sizeof buf), "requeue 81 "));
    assert_int_equal(d->requeue_owners[0].count, 1);
    assert_int_equal(d->requeue_owners[0].uid, tr->uid);
}

static void a_full_table_of_owners_leaves_it_held_rather_than_unlimited(void **state)
{
    (void)state;
    job_t *j = held_cotenant("81");
    fixture_job(d, "t9", ROLE_TRAINER, PLAN_CORES, 0);
    for (int i = 0; i < REQUEUE_OWNERS_MAX; i++) /* other owners charged today: no room for t9's */
        d->requeue_owners[d->n_requeue_owners++] = (requeue_owner_t){.uid = 50000 + i, .since = 100, .count = 1};
    escalation_tick(d, 100);
    settle(j, 1000);
    assert_int_equal(j->escalation.step, ESCALATION_FAILED);
    assert_non_null(strstr(j->escalation.detail, "as many as are counted: left held"));
    assert_int_equal(access(calls, F_OK), -1);
    settle(j, 100 + 86400); /* their day over, their accounts are taken over */
    assert_int_equal(j->escalation.step, ESCALATION_REQUEUED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(requeued_after_its_processes_are_resumed_and_this_node_excluded, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(requeued_all_the_same_when_the_exclusion_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(a_requeue_goes_on_when_its_job_is_released_meanwhile, setup, teardown),
        cmocka_unit_test_setup_teardown(never_when_its_job_may_not_be_requeued, setup, teardown),
        cmocka_unit_test_setup_teardown(off_by_default_and_not_for_a_pinned_share, setup, teardown),
        cmocka_unit_test_setup_teardown(a_share_above_the_minimum_starts_the_count_again, setup, teardown),
        cmocka_unit_test_setup_teardown(not_a_slurm_job_id, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failing_scontrol_is_tried_again_later, setup, teardown),
        cmocka_unit_test_setup_teardown(a_hanging_scontrol_is_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(forgetting_a_job_kills_its_scontrol, setup, teardown),
        cmocka_unit_test_setup_teardown(never_for_a_partition_the_site_did_not_opt_in, setup, teardown),
        cmocka_unit_test_setup_teardown(at_most_requeues_per_owner_a_day_on_one_trainer_owners_word, setup, teardown),
        cmocka_unit_test_setup_teardown(a_full_table_of_owners_leaves_it_held_rather_than_unlimited, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
