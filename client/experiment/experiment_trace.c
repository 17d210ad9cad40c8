/* experiment_trace: the parts each repetition leaves (cosched-train's trace, cosched-noise's
 * JSON lines, the daemon's share changes) merged onto one timeline. Every part carries Unix
 * time, so each lands where it happened: ts = (its time - the experiment's start) in us. */
#include "experiment_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_output.h"
#include "wire.h"

#define PID_EXPERIMENT 1
#define PID_GUARD 2
#define PID_TRAINER 100 /* + rank */
#define PID_NOISE 1000  /* + worker */

struct exp_trace {
    double origin;
    json_t *events;
    json_t *named; /* "pid" and "pid/tid" already given a name */
};

exp_trace_t *exp_trace_new(double origin)
{
    exp_trace_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->origin = origin;
    t->events = json_array();
    t->named = json_object();
    if (!t->events || !t->named) {
        exp_trace_free(t);
        return NULL;
    }
    return t;
}

void exp_trace_free(exp_trace_t *t)
{
    if (!t)
        return;
    json_decref(t->events);
    json_decref(t->named);
    free(t);
}

static double us(const exp_trace_t *t, double unix_seconds)
{
    return (unix_seconds - t->origin) * 1e6;
}

/* A process_name (tid < 0) or thread_name metadata event, once per process or lane. */
static void name_once(exp_trace_t *t, int pid, int tid, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, tid < 0 ? "%d" : "%d/%d", pid, tid);
    if (json_object_get(t->named, key))
        return;
    json_object_set_new(t->named, key, json_true());
    json_t *e = json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", tid < 0 ? "process_name" : "thread_name", "ph", "M",
                          "pid", pid, "tid", tid < 0 ? 0 : tid, "args", "name", name);
    json_array_append_new(t->events, e);
    if (tid < 0) /* viewers list processes in pid order: experiment, guard, ranks, workers */
        json_array_append_new(t->events, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "process_sort_index", "ph",
                                                   "M", "pid", pid, "tid", 0, "args", "sort_index", pid));
}

static void complete(exp_trace_t *t, int pid, int tid, const char *name, double ts, double dur, json_t *args)
{
    json_array_append_new(t->events, json_pack("{s:s, s:s, s:i, s:i, s:f, s:f, s:o}", "name", name, "ph", "X", "pid",
                                               pid, "tid", tid, "ts", ts, "dur", dur > 0 ? dur : 0, "args", args));
}

static void counter(exp_trace_t *t, int pid, const char *name, const char *series, double ts, double value)
{
    json_array_append_new(t->events, json_pack("{s:s, s:s, s:i, s:i, s:f, s:{s:f}}", "name", name, "ph", "C", "pid",
                                               pid, "tid", 0, "ts", ts, "args", series, value));
}

static void note_missing(char **missing, const char *what)
{
    size_t old = *missing ? strlen(*missing) : 0, add = strlen(what) + 3;
    char *m = realloc(*missing, old + add);
    if (!m)
        return;
    snprintf(m + old, add, "%s%s", old ? "; " : "", what);
    *missing = m;
}

/* cosched-train --trace: its ranks' phases, moved from its origin to ours. */
static int add_trainer(exp_trace_t *t, const char *path, const char *label)
{
    json_t *trace = json_load_file(path, 0, NULL);
    json_t *origin = json_object_get(json_object_get(trace, "otherData"), "time_origin_unix");
    if (!json_is_number(origin)) {
        json_decref(trace);
        return -1;
    }
    double shift = us(t, json_number_value(origin));
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        int rank = (int)json_integer_value(json_object_get(e, "pid"));
        int pid = PID_TRAINER + rank, tid = (int)json_integer_value(json_object_get(e, "tid"));
        if (!ph || !name || rank < 0 || rank >= PID_NOISE - PID_TRAINER)
            continue;
        if (strcmp(ph, "M") == 0 && strcmp(name, "thread_name") == 0) {
            name_once(t, pid, tid, json_string_value(json_object_get(json_object_get(e, "args"), "name")));
        } else if (strcmp(ph, "X") == 0) {
            char rank_name[32];
            snprintf(rank_name, sizeof rank_name, "trainer rank %d", rank);
            name_once(t, pid, -1, rank_name);
            json_t *given = json_object_get(e, "args");
            json_t *args = json_is_object(given) ? json_deep_copy(given) : json_object();
            json_object_set_new(args, "repetition", json_string(label));
            complete(t, pid, tid, name, json_number_value(json_object_get(e, "ts")) + shift,
                     json_number_value(json_object_get(e, "dur")), args);
        }
    }
    json_decref(trace);
    return 0;
}

/* The lane of a noise line: its MPI rank's (ping-pong runs two ranks into one output), else 0. */
static int noise_lane(exp_trace_t *t, int pid, json_t *line, char *counter_name, size_t len)
{
    json_t *rank = json_object_get(line, RUNOUT_RANK);
    int lane = json_is_integer(rank) && json_integer_value(rank) >= 0 && json_integer_value(rank) < 4096
                   ? (int)json_integer_value(rank)
                   : -1;
    char name[32];
    snprintf(name, sizeof name, "MPI rank %d", lane);
    name_once(t, pid, lane < 0 ? 0 : lane, lane < 0 ? "phases" : name);
    if (lane < 0)
        snprintf(counter_name, len, "bandwidth");
    else
        snprintf(counter_name, len, "bandwidth, rank %d", lane);
    return lane < 0 ? 0 : lane;
}

/* A noise worker's phase lines as slices, its progress lines as a bandwidth counter. */
static int add_noise(exp_trace_t *t, int worker, const char *path, const char *label)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int pid = PID_NOISE + worker;
    char name[32], line[16384], bandwidth[48];
    snprintf(name, sizeof name, "noise worker %d", worker);
    name_once(t, pid, -1, name);
    while (fgets(line, sizeof line, f)) {
        json_t *l = json_loads(line, 0, NULL);
        const char *event = json_string_value(json_object_get(l, RUNOUT_EVENT));
        const char *phase = json_string_value(json_object_get(l, RUNOUT_PHASE));
        if (event && phase && strcmp(event, RUNOUT_EVENT_PHASE) == 0) {
            int lane = noise_lane(t, pid, l, bandwidth, sizeof bandwidth);
            double start = json_number_value(json_object_get(l, RUNOUT_START));
            double duration = json_number_value(json_object_get(l, RUNOUT_DURATION));
            complete(t, pid, lane, phase, us(t, start), duration * 1e6,
                     json_pack("{s:O?, s:O?, s:s}", "mode", json_object_get(l, RUNOUT_MODE), "rate_mbs",
                               json_object_get(l, RUNOUT_RATE_MBS), "repetition", label));
            counter(t, pid, bandwidth, "MB/s", us(t, start + duration), 0);
        } else if (event && strcmp(event, RUNOUT_EVENT_PROGRESS) == 0 &&
                   json_is_number(json_object_get(l, RUNOUT_TIME))) {
            noise_lane(t, pid, l, bandwidth, sizeof bandwidth);
            counter(t, pid, bandwidth, "MB/s", us(t, json_number_value(json_object_get(l, RUNOUT_TIME))),
                    json_number_value(json_object_get(l, RUNOUT_RATE_MBS)));
        }
        json_decref(l);
    }
    fclose(f);
    return 0;
}

/* The guard's share changes: an instant event each, and the share as a counter. */
static void add_shares(exp_trace_t *t, const exp_trace_rep_t *rep)
{
    name_once(t, PID_GUARD, -1, "coschedd guard");
    name_once(t, PID_GUARD, 0, "share changes");
    double share = 1;
    counter(t, PID_GUARD, "co-tenant share", "share", us(t, rep->start), share);
    size_t i;
    json_t *c;
    json_array_foreach(rep->share_changes, i, c) {
        double now = json_number_value(json_object_get(c, WIRE_R_SHARE));
        double when = json_number_value(json_object_get(c, WIRE_R_TIME));
        char name[64];
        snprintf(name, sizeof name, "share %.2f -> %.2f", share, now);
        json_array_append_new(t->events,
                              json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:{s:f, s:O?, s:s}}", "name", name, "ph", "i",
                                        "s", "p", "pid", PID_GUARD, "tid", 0, "ts", us(t, when), "args", "share", now,
                                        "by", json_object_get(c, WIRE_R_BY), "repetition", rep->label));
        counter(t, PID_GUARD, "co-tenant share", "share", us(t, when), now);
        share = now;
    }
    counter(t, PID_GUARD, "co-tenant share", "share", us(t, rep->end), 1);
}

void exp_trace_add_rep(exp_trace_t *t, const exp_trace_rep_t *rep, char **missing)
{
    name_once(t, PID_EXPERIMENT, -1, "experiment");
    name_once(t, PID_EXPERIMENT, 0, "repetitions");
    json_t *args = json_pack("{s:f}", "seconds", rep->end - rep->start);
    if (rep->noise_mbs >= 0)
        json_object_set_new(args, "noise_mbs", json_real(rep->noise_mbs));
    complete(t, PID_EXPERIMENT, 0, rep->label, us(t, rep->start), (rep->end - rep->start) * 1e6, args);
    char what[4352];
    if (rep->trainer_trace && add_trainer(t, rep->trainer_trace, rep->label) < 0) {
        snprintf(what, sizeof what, "%s: no trainer trace in %s", rep->label, rep->trainer_trace);
        note_missing(missing, what);
    }
    for (int w = 0; w < rep->nnoise; w++)
        if (!rep->noise_outputs[w] || add_noise(t, w, rep->noise_outputs[w], rep->label) < 0) {
            snprintf(what, sizeof what, "%s: cannot read noise worker %d's output %s", rep->label, w,
                     rep->noise_outputs[w] ? rep->noise_outputs[w] : "(none)");
            note_missing(missing, what);
        }
    if (rep->share_changes)
        add_shares(t, rep);
}

int exp_trace_write(const exp_trace_t *t, const char *path, char *err, size_t errlen)
{
    json_t *doc = json_pack("{s:s, s:{s:f, s:s}, s:O}", "displayTimeUnit", "ms", "otherData", "time_origin_unix",
                            t->origin, "tool", "cosched experiment", "traceEvents", t->events);
    int rc = doc && json_dump_file(doc, path, JSON_COMPACT) == 0 ? 0 : -1;
    if (rc != 0)
        snprintf(err, errlen, "cannot write the trace %s", path);
    json_decref(doc);
    return rc;
}
