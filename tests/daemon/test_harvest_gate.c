/* test_harvest_gate: the node's harvest gate — its law on a fake clock (closed after
 * guard.close_after at the minimum share, not before nor after a hold that was let go; opened
 * once nobody is at the minimum and the trainers it closed for have ended, or after
 * guard.reopen_after; taken again every minute while closed; failures retried later, twice as
 * late each time), and its commands through a stand-in scontrol that keeps the node's features
 * in a file: the feature taken and given back, the node's other features kept, a node that never
 * offered it said so, a refused update left as it was and tried again, a closure kept in the
 * state file. Only the stand-in's own run is waited for, in a bounded poll. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "cotenants.h"
#include "slurm_fixture.h"
#include "harvest_gate.h"
#include "throttle.h"

static daemon_t *d;
static throttle_t *t;
static char dir[4200];

static const char scontrol_text[] =
    "#!/bin/sh\n"
    "dir=$(dirname \"$0\")\n"
    "echo \"$*\" >>\"$dir/calls\"\n"
    "case \"$1 $2 $3\" in '-o show node')\n"
    "  [ \"$4\" = cn1 ] || { echo \"Node $4 not found\" >&2; exit 1; }\n"
    "  f=$(cat \"$dir/features\")\n"
    "  echo \"NodeName=cn1 Arch=x86_64 CoresPerSocket=2 AvailableFeatures=${f:-(null)} ActiveFeatures=$f Gres=gpu:1\"\n"
    "  exit 0 ;;\n"
    "esac\n"
    "[ \"$1 $2\" = 'update NodeName=cn1' ] || exit 2\n"
    "[ -e \"$dir/refuse\" ] && { echo 'slurm_update error: Access/permission denied' >&2; exit 1; }\n"
    "[ -e \"$dir/hang\" ] && exec sleep 100\n"
    "[ \"${3%%=*} ${4%%=*} ${3#*=}\" = \"AvailableFeatures ActiveFeatures ${4#*=}\" ] || exit 2\n"
    "printf '%s' \"${3#*=}\" >\"$dir/features\"\n";

static void write_file(const char *name, const char *text)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *read_file(const char *name, char *buf, size_t len)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return fixture_read(path, buf, len);
}

static int setup(void **state)
{
    (void)state;
    d = fixture_daemon("ci-2core-gpu.xml");
    harvest_gate_init(&d->gate);
    snprintf(dir, sizeof dir, "%s", d->cfg.state_dir);
    fixture_scontrol(d, scontrol_text);
    snprintf(d->cfg.slurm_node, sizeof d->cfg.slurm_node, "cn1");
    snprintf(d->cfg.harvest_feature, sizeof d->cfg.harvest_feature, "harvest");
    d->cfg.close_after = 60;
    d->cfg.reopen_after = 0;
    t = d->throttle = fixture_sigstop_throttle();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    harvest_gate_shutdown(d);
    fixture_slurm_free(d, t);
    return 0;
}

/* --- the law, on a fake clock */

static gate_inputs_t law_inputs(bool at_minimum, bool trainers, double reopen_after)
{
    return (gate_inputs_t){.any_at_minimum = at_minimum,
                           .trainers_present = trainers,
                           .close_after = 60,
                           .reopen_after = reopen_after};
}

static void closes_after_close_after_at_the_minimum_and_not_before(void **state)
{
    (void)state;
    harvest_gate_t g;
    harvest_gate_init(&g);
    gate_inputs_t held = law_inputs(true, true, 0), free_ = law_inputs(false, true, 0);
    assert_int_equal(harvest_gate_decide(&g, &held, 100), GATE_KEEP);
    assert_int_equal(harvest_gate_decide(&g, &held, 159), GATE_KEEP);
    assert_int_equal(harvest_gate_decide(&g, &free_, 160), GATE_KEEP); /* let go: starts over */
    assert_int_equal(harvest_gate_decide(&g, &held, 170), GATE_KEEP);
    assert_int_equal(harvest_gate_decide(&g, &held, 229), GATE_KEEP);
    assert_int_equal(harvest_gate_decide(&g, &held, 230), GATE_CLOSE);
}

static void opens_once_its_trainers_end_or_after_reopen_after_never_beside_a_hold(void **state)
{
    (void)state;
    harvest_gate_t g;
    harvest_gate_init(&g);
    g.state = GATE_CLOSED;
    g.closed_at = g.asserted_at = 1000;
    gate_inputs_t held_gone = law_inputs(true, false, 0), calm_there = law_inputs(false, true, 0);
    gate_inputs_t calm_gone = law_inputs(false, false, 0), calm_there_600 = law_inputs(false, true, 600);
    gate_inputs_t held_there_600 = law_inputs(true, true, 600);
    assert_int_equal(harvest_gate_decide(&g, &held_gone, 1010), GATE_KEEP);  /* someone still at the minimum */
    assert_int_equal(harvest_gate_decide(&g, &calm_there, 1010), GATE_KEEP); /* its trainer still there */
    g.asserted_at = 1590;                                                    /* taken again meanwhile */
    assert_int_equal(harvest_gate_decide(&g, &calm_there_600, 1599), GATE_KEEP);
    assert_int_equal(harvest_gate_decide(&g, &held_there_600, 1600), GATE_KEEP); /* held: stays closed */
    assert_int_equal(harvest_gate_decide(&g, &calm_there_600, 1600), GATE_REOPEN);
    assert_int_equal(harvest_gate_decide(&g, &calm_gone, 1011), GATE_REOPEN);
}

static void while_closed_it_is_taken_again_every_minute(void **state)
{
    (void)state;
    harvest_gate_t g;
    harvest_gate_init(&g);
    g.state = GATE_CLOSED;
    g.closed_at = g.asserted_at = 1000;
    gate_inputs_t held = law_inputs(true, true, 0);
    assert_int_equal(harvest_gate_decide(&g, &held, 1000 + HARVEST_GATE_REASSERT - 1), GATE_KEEP);
    assert_int_equal(harvest_gate_decide(&g, &held, 1000 + HARVEST_GATE_REASSERT), GATE_REASSERT);
    g.state = GATE_CLOSING; /* its command runs: nothing else meanwhile */
    assert_int_equal(harvest_gate_decide(&g, &held, 5000), GATE_KEEP);
}

static void a_failure_waits_twice_as_long_each_time_up_to_an_hour(void **state)
{
    (void)state;
    harvest_gate_t g;
    harvest_gate_init(&g);
    assert_float_equal(harvest_gate_backoff(&g, 0), 60, 1e-9);
    assert_float_equal(harvest_gate_backoff(&g, 0), 120, 1e-9);
    for (int i = 0; i < 10; i++)
        harvest_gate_backoff(&g, 0);
    assert_float_equal(harvest_gate_backoff(&g, 100), SLURM_CHILD_RETRY_MAX, 1e-9);
    assert_float_equal(g.retry_at, 100 + SLURM_CHILD_RETRY_MAX, 1e-9);
    gate_inputs_t held = law_inputs(true, true, 0);
    g.at_minimum_since = 1;
    assert_int_equal(harvest_gate_decide(&g, &held, 200), GATE_KEEP); /* waiting */
    assert_int_equal(harvest_gate_decide(&g, &held, 100 + SLURM_CHILD_RETRY_MAX), GATE_CLOSE);
}

/* --- its commands, through the stand-in */

static job_t *held_cotenant(const char *id)
{
    return fixture_held_cotenant(d, t, id, 0);
}

static void forget_job(const char *id)
{
    for (job_t **p = &d->jobs; *p; p = &(*p)->next)
        if (strcmp((*p)->id, id) == 0) {
            job_t *j = *p;
            *p = j->next;
            cotenant_release(d, j);
            job_free(j);
            return;
        }
    fail_msg("no job %s", id);
}

/* Ticks at the simulated time now until no command runs (a minute at most). */
static void settle(double now)
{
    harvest_gate_tick(d, now);
    for (double end = clock_now_mono() + 60; d->gate.scontrol.pid > 0 && clock_now_mono() < end;) {
        usleep(10000);
        harvest_gate_tick(d, now);
    }
    assert_int_equal(d->gate.scontrol.pid, 0);
}

static void takes_the_feature_keeps_the_others_and_gives_it_back_when_its_trainer_ends(void **state)
{
    (void)state;
    char buf[512];
    write_file("features", "gpu,harvest,fast");
    fixture_job(d, "t1", ROLE_TRAINER, PLAN_EXCLUSIVE, 0);
    held_cotenant("81");
    settle(1000);
    settle(1059);
    assert_int_equal(d->gate.state, GATE_OPEN);
    settle(1060);
    assert_int_equal(d->gate.state, GATE_CLOSED);
    assert_string_equal(read_file("features", buf, sizeof buf), "gpu,fast");
    assert_string_equal(d->gate.trainers, "t1");
    assert_int_equal(d->gate.closures, 1);
    json_t *o = harvest_gate_to_json(d, 1070);
    assert_string_equal(json_string_value(json_object_get(o, "state")), "closed");
    assert_float_equal(json_number_value(json_object_get(o, "closed_seconds")), 10, 1e-9);
    json_decref(o);
    o = harvest_gate_state(d); /* kept in the state file while closed */
    assert_string_equal(json_string_value(json_object_get(o, "trainers")), "t1");
    json_decref(o);

    forget_job("81"); /* requeued away: nobody at the minimum, but t1 is still there */
    settle(1100);
    assert_int_equal(d->gate.state, GATE_CLOSED);
    forget_job("t1"); /* the trainer ended */
    settle(1101);
    assert_int_equal(d->gate.state, GATE_OPEN);
    assert_string_equal(read_file("features", buf, sizeof buf), "gpu,fast,harvest");
    assert_null(harvest_gate_state(d));
}

static void taken_again_when_slurm_gives_it_back(void **state)
{
    (void)state;
    char buf[512];
    write_file("features", "harvest");
    fixture_job(d, "t1", ROLE_TRAINER, PLAN_EXCLUSIVE, 0);
    held_cotenant("81");
    settle(1);
    settle(61);
    assert_int_equal(d->gate.state, GATE_CLOSED);
    assert_string_equal(read_file("features", buf, sizeof buf), ""); /* its only feature */
    write_file("features", "harvest");                               /* slurmctld restarted: slurm.conf's features */
    settle(61 + HARVEST_GATE_REASSERT - 1);
    assert_string_equal(read_file("features", buf, sizeof buf), "harvest");
    settle(61 + HARVEST_GATE_REASSERT);
    assert_string_equal(read_file("features", buf, sizeof buf), "");
    assert_int_equal(d->gate.state, GATE_CLOSED);
    assert_int_equal(d->gate.closures, 1); /* the same closure */
}

static void a_refused_update_is_said_and_tried_again_later(void **state)
{
    (void)state;
    char buf[512];
    write_file("features", "harvest");
    write_file("refuse", "");
    held_cotenant("81");
    settle(1);
    settle(61);
    assert_int_equal(d->gate.state, GATE_OPEN);
    assert_non_null(strstr(d->gate.detail, "Access/permission denied"));
    assert_non_null(strstr(d->gate.detail, "tried again in 60 s"));
    settle(120);
    assert_int_equal(d->gate.state, GATE_OPEN);
    char path[4300];
    snprintf(path, sizeof path, "%s/refuse", dir);
    unlink(path);
    settle(121);
    assert_int_equal(d->gate.state, GATE_CLOSED);
    assert_string_equal(read_file("features", buf, sizeof buf), "");
}

static void a_node_that_never_offered_it_is_said_and_an_unknown_node_fails(void **state)
{
    (void)state;
    write_file("features", "gpu");
    held_cotenant("81");
    settle(1);
    settle(61);
    assert_int_equal(d->gate.state, GATE_CLOSED);
    assert_non_null(strstr(d->gate.detail, "does not offer 'harvest'"));
    harvest_gate_init(&d->gate);
    snprintf(d->cfg.slurm_node, sizeof d->cfg.slurm_node, "cn7");
    settle(100);
    settle(160);
    assert_int_equal(d->gate.state, GATE_OPEN);
    assert_non_null(strstr(d->gate.detail, "Node cn7 not found"));
}

static void a_saved_closure_is_closed_again_and_taken_at_once(void **state)
{
    (void)state;
    char buf[512];
    write_file("features", "harvest");
    json_t *saved = json_pack("{s:s, s:s, s:s}", "trainers", "t9", "feature", "harvest", "node", "cn1");
    harvest_gate_restore(d, saved, 500);
    json_decref(saved);
    assert_int_equal(d->gate.state, GATE_CLOSED);
    fixture_job(d, "t9", ROLE_TRAINER, PLAN_EXCLUSIVE, 0);
    settle(500);
    assert_string_equal(read_file("features", buf, sizeof buf), "");
    assert_int_equal(d->gate.state, GATE_CLOSED);
}

static void a_closure_the_configuration_no_longer_names_is_given_back(void **state)
{
    (void)state;
    char buf[512];
    write_file("features", "gpu,harvest");
    fixture_job(d, "t1", ROLE_TRAINER, PLAN_EXCLUSIVE, 0);
    held_cotenant("81");
    settle(1);
    settle(61);
    assert_string_equal(read_file("features", buf, sizeof buf), "gpu");
    snprintf(d->cfg.harvest_feature, sizeof d->cfg.harvest_feature, "scavenger"); /* a reload renamed it */
    settle(62);
    assert_int_equal(d->gate.state, GATE_OPEN);
    assert_string_equal(read_file("features", buf, sizeof buf), "gpu,harvest"); /* the old one, back */
    settle(200); /* the new name closes on its own time: another close_after at the minimum */
    assert_int_equal(d->gate.state, GATE_CLOSED);
    assert_string_equal(d->gate.feature, "scavenger");
    d->cfg.harvest_feature[0] = '\0'; /* then the gate turned off while closed */
    write_file("features", "gpu,harvest");
    settle(201);
    assert_int_equal(d->gate.state, GATE_OPEN);
    assert_string_equal(read_file("features", buf, sizeof buf), "gpu,harvest,scavenger");
}

static void a_dotted_feature_is_matched_whole_and_a_close_cut_short_is_kept(void **state)
{
    (void)state;
    char buf[512];
    snprintf(d->cfg.harvest_feature, sizeof d->cfg.harvest_feature, "h.rv");
    write_file("features", "hxrv,h.rv");
    held_cotenant("81");
    settle(1);
    settle(61);
    assert_string_equal(read_file("features", buf, sizeof buf), "hxrv"); /* '.' is no wildcard */
    /* a first close under way when the daemon stops: it may yet work, so it is kept as closed */
    harvest_gate_init(&d->gate);
    write_file("features", "hxrv,h.rv");
    write_file("hang", "");
    harvest_gate_tick(d, 100);
    harvest_gate_tick(d, 160);
    assert_int_equal(d->gate.state, GATE_CLOSING);
    assert_true(d->gate.scontrol.pid > 0);
    harvest_gate_shutdown(d);
    assert_int_equal(d->gate.scontrol.pid, 0);
    json_t *saved = harvest_gate_state(d);
    assert_non_null(saved);
    assert_string_equal(json_string_value(json_object_get(saved, "feature")), "h.rv");
    json_decref(saved);
}

static void nothing_happens_when_the_gate_is_off(void **state)
{
    (void)state;
    char buf[512];
    d->cfg.harvest_feature[0] = '\0';
    write_file("features", "harvest");
    held_cotenant("81");
    settle(1);
    settle(1000);
    assert_int_equal(d->gate.state, GATE_OPEN);
    assert_string_equal(read_file("calls", buf, sizeof buf), "");
    assert_null(harvest_gate_to_json(d, 1000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(closes_after_close_after_at_the_minimum_and_not_before),
        cmocka_unit_test(opens_once_its_trainers_end_or_after_reopen_after_never_beside_a_hold),
        cmocka_unit_test(while_closed_it_is_taken_again_every_minute),
        cmocka_unit_test(a_failure_waits_twice_as_long_each_time_up_to_an_hour),
        cmocka_unit_test_setup_teardown(takes_the_feature_keeps_the_others_and_gives_it_back_when_its_trainer_ends,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(taken_again_when_slurm_gives_it_back, setup, teardown),
        cmocka_unit_test_setup_teardown(a_refused_update_is_said_and_tried_again_later, setup, teardown),
        cmocka_unit_test_setup_teardown(a_node_that_never_offered_it_is_said_and_an_unknown_node_fails, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_saved_closure_is_closed_again_and_taken_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(a_closure_the_configuration_no_longer_names_is_given_back, setup, teardown),
        cmocka_unit_test_setup_teardown(a_dotted_feature_is_matched_whole_and_a_close_cut_short_is_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nothing_happens_when_the_gate_is_off, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
