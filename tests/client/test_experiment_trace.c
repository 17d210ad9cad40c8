/* test_experiment_trace: the experiment's trace puts each part where it happened — the
 * trainer's phases moved from its own origin, the noise's phases and bandwidth, the guard's
 * share changes as instant events — and names what it could not read instead of failing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "experiment_trace.h"

#define ORIGIN 1795000000.0

typedef struct {
    char dir[64], trainer[128], noise[128], out[128];
} files_t;

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int files_setup(void **state)
{
    files_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/exp-trace-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    snprintf(f->trainer, sizeof f->trainer, "%s/trainer.json", f->dir);
    snprintf(f->noise, sizeof f->noise, "%s/noise.out", f->dir);
    snprintf(f->out, sizeof f->out, "%s/trace.json", f->dir);
    /* cosched-train's trace: its ts 0 is 10 s after the experiment's start */
    write_text(f->trainer,
               "{\"otherData\":{\"time_origin_unix\":1795000010.0},\"traceEvents\":["
               "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"rank 0\"}},"
               "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":1,\"args\":{\"name\":\"forward\"}},"
               "{\"name\":\"forward\",\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":1000,\"dur\":500,\"args\":{\"step\":3}}]"
               "}");
    /* cosched-noise's lines: a phase from 5 s to 7 s, a progress line at 6 s */
    write_text(f->noise,
               "{\"event\":\"start\",\"mode\":\"stream\"}\n"
               "{\"event\":\"progress\",\"mode\":\"stream\",\"phase\":\"noise\",\"time\":1795000006.0,\"rate_mbs\":100}"
               "\n"
               "not json\n"
               "{\"event\":\"phase\",\"mode\":\"stream\",\"phase\":\"noise\",\"start\":1795000005.0,\"duration\":2.0,"
               "\"rate_mbs\":90}\n");
    *state = f;
    return 0;
}

static int files_teardown(void **state)
{
    files_t *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

/* The first event with this ph and name (and pid, when >= 0) in the written trace. */
static json_t *find(json_t *events, const char *ph, const char *name, int pid)
{
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "ph")), ph) == 0 &&
            strcmp(json_string_value(json_object_get(e, "name")), name) == 0 &&
            (pid < 0 || json_integer_value(json_object_get(e, "pid")) == pid))
            return e;
    }
    fail_msg("no %s event '%s'", ph, name);
    return NULL;
}

static double number(json_t *e, const char *key)
{
    return json_number_value(json_object_get(e, key));
}

static json_t *merged(files_t *f, json_t *share_changes, char **missing)
{
    exp_trace_t *t = exp_trace_new(ORIGIN);
    const char *outputs[] = {f->noise};
    exp_trace_rep_t rep = {.label = "shared+noise #1",
                           .start = ORIGIN + 4,
                           .end = ORIGIN + 12,
                           .noise_mbs = 90,
                           .trainer_trace = f->trainer,
                           .noise_outputs = outputs,
                           .nnoise = 1,
                           .share_changes = share_changes};
    exp_trace_add_rep(t, &rep, missing);
    char err[256];
    assert_int_equal(exp_trace_write(t, f->out, err, sizeof err), 0);
    exp_trace_free(t);
    json_t *doc = json_load_file(f->out, 0, NULL);
    assert_non_null(doc);
    return doc;
}

static void every_part_lands_where_it_happened(void **state)
{
    files_t *f = *state;
    json_t *changes = json_loads("[{\"time\":1795000007.5,\"share\":0.5,\"by\":\"guard\"}]", 0, NULL);
    char *missing = NULL;
    json_t *doc = merged(f, changes, &missing);
    assert_null(missing);
    assert_float_equal(number(json_object_get(doc, "otherData"), "time_origin_unix"), ORIGIN, 1e-6);
    json_t *ev = json_object_get(doc, "traceEvents");
    json_t *rep = find(ev, "X", "shared+noise #1", 1);
    assert_float_equal(number(rep, "ts"), 4e6, 1e-3);
    assert_float_equal(number(rep, "dur"), 8e6, 1e-3);
    json_t *fwd = find(ev, "X", "forward", 100);
    assert_float_equal(number(fwd, "ts"), 10e6 + 1000, 1e-3);
    assert_float_equal(number(fwd, "dur"), 500, 1e-3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(fwd, "args"), "step")), 3);
    assert_string_equal(json_string_value(json_object_get(json_object_get(fwd, "args"), "repetition")),
                        "shared+noise #1");
    json_t *phase = find(ev, "X", "noise", 1000);
    assert_float_equal(number(phase, "ts"), 5e6, 1e-3);
    assert_float_equal(number(phase, "dur"), 2e6, 1e-3);
    json_t *bw = find(ev, "C", "bandwidth", 1000);
    assert_float_equal(number(bw, "ts"), 6e6, 1e-3);
    assert_float_equal(number(json_object_get(bw, "args"), "MB/s"), 100, 1e-9);
    json_t *change = find(ev, "i", "share 1.00 -> 0.50", 2);
    assert_float_equal(number(change, "ts"), 7.5e6, 1e-3);
    assert_string_equal(json_string_value(json_object_get(change, "s")), "p");
    assert_string_equal(json_string_value(json_object_get(json_object_get(change, "args"), "by")), "guard");
    json_t *rank = json_object_get(find(ev, "M", "process_name", 100), "args");
    assert_string_equal(json_string_value(json_object_get(rank, "name")), "trainer rank 0");
    json_decref(doc);
    json_decref(changes);
}

static void each_mpi_rank_of_a_noise_worker_has_a_lane_of_its_own(void **state)
{
    files_t *f = *state;
    write_text(f->noise,
               "{\"event\":\"phase\",\"phase\":\"noise\",\"start\":1795000005.0,\"duration\":2.0,\"rank\":0}\n"
               "{\"event\":\"phase\",\"phase\":\"noise\",\"start\":1795000005.1,\"duration\":2.0,\"rank\":1}\n");
    char *missing = NULL;
    json_t *doc = merged(f, NULL, &missing);
    json_t *ev = json_object_get(doc, "traceEvents");
    int lanes[2] = {0, 0};
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
        if (json_integer_value(json_object_get(e, "pid")) == 1000 &&
            strcmp(json_string_value(json_object_get(e, "ph")), "X") == 0)
            lanes[json_integer_value(json_object_get(e, "tid")) == 1]++;
    assert_int_equal(lanes[0], 1);
    assert_int_equal(lanes[1], 1);
    find(ev, "C", "bandwidth, rank 1", 1000);
    free(missing);
    json_decref(doc);
}

static void parts_that_cannot_be_read_are_named_and_left_out(void **state)
{
    files_t *f = *state;
    unlink(f->trainer);
    char *missing = NULL;
    json_t *doc = merged(f, NULL, &missing);
    assert_non_null(missing);
    assert_non_null(strstr(missing, "shared+noise #1: no trainer trace in"));
    json_t *ev = json_object_get(doc, "traceEvents");
    find(ev, "X", "noise", 1000); /* the rest is there */
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
        assert_true(json_integer_value(json_object_get(e, "pid")) != 2); /* no guard part */
    free(missing);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_part_lands_where_it_happened, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(each_mpi_rank_of_a_noise_worker_has_a_lane_of_its_own, files_setup,
                                        files_teardown),
        cmocka_unit_test_setup_teardown(parts_that_cannot_be_read_are_named_and_left_out, files_setup, files_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
