/* harvest_gate: the node's harvest gate at work (harvest_gate.h). The commands are two small sh
 * scripts around scontrol, each passed its arguments ($1 scontrol, $2 the node, $3 the feature),
 * never pasted into it: they read the node's AvailableFeatures, and set both AvailableFeatures and
 * ActiveFeatures (Slurm refuses active features that are not available) without the feature, or
 * with it again; the node's other features are kept, the feature matched as a fixed string. Exit
 * 3: scontrol show node failed; 4: the update failed; 5: nothing to change (the feature was
 * already gone, or already there). A closure keeps the feature and node it closed, and gives them
 * back even when the configuration has changed since (the gate turned off, renamed). */
#include "harvest_gate.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "cotenants.h"
#include "log.h"
#include "wire.h"

enum { SHOW_FAILED = 3, UPDATE_FAILED = 4, NOTHING_TO_DO = 5 };

#define READ_FEATURES                                                                                                  \
    "line=$(\"$1\" -o show node \"$2\") || exit 3\n"                                                                   \
    "f=$(printf '%s\\n' \"$line\" | tr ' ' '\\n' | sed -n 's/^AvailableFeatures=//p')\n"                               \
    "[ \"$f\" = '(null)' ] && f=\n"

static const char close_script[] = READ_FEATURES
    "k=$(printf '%s\\n' \"$f\" | tr ',' '\\n' | grep -Fvx -e \"$3\" -e '' | paste -sd, -)\n"
    "[ \"$k\" = \"$f\" ] && exit 5\n"
    "\"$1\" update NodeName=\"$2\" AvailableFeatures=\"$k\" ActiveFeatures=\"$k\" || exit 4\n";

static const char open_script[] = READ_FEATURES
    "printf '%s\\n' \"$f\" | tr ',' '\\n' | grep -Fqx -e \"$3\" && exit 5\n"
    "n=${f:+$f,}$3\n"
    "\"$1\" update NodeName=\"$2\" AvailableFeatures=\"$n\" ActiveFeatures=\"$n\" || exit 4\n";

static bool on(const daemon_t *d)
{
    return d->cfg.guard_enabled && d->cfg.harvest_feature[0];
}

/* Closed, or on its way (a closure on record: its feature is not the node's now). */
static bool closed(const harvest_gate_t *g)
{
    return g->closed_at > 0 || g->state == GATE_CLOSED || g->state == GATE_OPENING;
}

/* Whether job id is one of the space-separated ids in list. */
static bool listed(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = list; (p = strstr(p, id)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

static gate_inputs_t inputs(const daemon_t *d)
{
    gate_inputs_t in = {.close_after = d->cfg.close_after, .reopen_after = d->cfg.reopen_after};
    for (const job_t *j = d->jobs; j; j = j->next) {
        if (cotenant_at_minimum(d, j))
            in.any_at_minimum = true;
        if (j->role == ROLE_TRAINER && listed(d->gate.trainers, j->id))
            in.trainers_present = true;
    }
    return in;
}

/* The trainers registered now, as the closure's. */
static void note_trainers(daemon_t *d)
{
    harvest_gate_t *g = &d->gate;
    size_t len = 0;
    g->trainers[0] = '\0';
    for (const job_t *j = d->jobs; j; j = j->next)
        if (j->role == ROLE_TRAINER && len + strlen(j->id) + 2 < sizeof g->trainers)
            len += (size_t)snprintf(g->trainers + len, sizeof g->trainers - len, "%s%s", len ? " " : "", j->id);
}

/* The script for the closure's node and feature; the state it is in while the script runs. */
static void start(daemon_t *d, const char *script, gate_state_t state, double now)
{
    harvest_gate_t *g = &d->gate;
    char err[256];
    const char *argv[] = {"/bin/sh", "-c", script, "cosched-harvest-gate", d->cfg.scontrol, g->node, g->feature, NULL};
    if (!slurm_child_start(&g->scontrol, argv, d->cfg.slurm_conf, now, err, sizeof err)) {
        double wait = harvest_gate_backoff(g, now);
        snprintf(g->detail, sizeof g->detail, "%.200s: tried again in %.0f s", err, wait);
        log_warn("harvest gate: %s", g->detail);
        return;
    }
    g->state = state;
}

/* A first close that worked, or may have: closed, its feature taken again within a minute. */
static void now_closed(daemon_t *d, double now)
{
    harvest_gate_t *g = &d->gate;
    g->state = GATE_CLOSED;
    g->closed_at = g->asserted_at = now;
    g->closures++;
    state_mark_dirty(d);
}

static void failed(harvest_gate_t *g, bool closing, int code, double now)
{
    char line[200];
    double wait = harvest_gate_backoff(g, now);
    snprintf(g->detail, sizeof g->detail, "%s '%s' %s node %s failed (%.120s): tried again in %.0f s",
             closing ? "taking" : "giving back", g->feature, closing ? "from" : "to", g->node,
             code == SHOW_FAILED     ? slurm_child_first_line(&g->scontrol, line, sizeof line)
             : code == UPDATE_FAILED ? slurm_child_last_line(&g->scontrol, line, sizeof line)
                                     : "killed, or it took over 30 s",
             wait);
    log_warn("harvest gate: %s", g->detail);
}

/* The command ended with exit code `code` (-1: killed, timed out or lost). */
static void finished(daemon_t *d, int code, double now)
{
    harvest_gate_t *g = &d->gate;
    bool closing = g->state == GATE_CLOSING, again = closing && g->closed_at > 0;
    if (code != 0 && code != NOTHING_TO_DO) {
        failed(g, closing, code, now);
        if (closing && !again && code == -1) {
            now_closed(d, now); /* its update may have gone through: closed, so that it is given back */
            return;
        }
        g->state = closing && !again ? GATE_OPEN : GATE_CLOSED;
        return;
    }
    g->failures = 0;
    if (!closing) {
        g->state = GATE_OPEN;
        g->closed_at = 0;
        g->trainers[0] = '\0';
        snprintf(g->detail, sizeof g->detail, "node %s offers '%s': harvest jobs may start here", g->node, g->feature);
        log_info("harvest gate: opened: %s", g->detail);
        state_mark_dirty(d);
        return;
    }
    if (again) {
        g->state = GATE_CLOSED;
        g->asserted_at = now;
        if (code == 0)
            log_warn("harvest gate: Slurm gave node %s '%s' back (a slurmctld restart or scontrol reconfigure): "
                     "taken again",
                     g->node, g->feature);
        return;
    }
    now_closed(d, now);
    if (code == NOTHING_TO_DO) {
        snprintf(g->detail, sizeof g->detail,
                 "node %s does not offer '%s' (its NodeName line has no Features=%s?): closed, but it keeps no "
                 "harvest job off",
                 g->node, g->feature, g->feature);
        log_warn("harvest gate: %s", g->detail);
    } else {
        snprintf(g->detail, sizeof g->detail,
                 "'%s' taken from node %s: no new harvest job starts here (trainers: %.120s)", g->feature, g->node,
                 g->trainers[0] ? g->trainers : "none");
        log_info("harvest gate: closed: %s", g->detail);
    }
}

static void poll_child(daemon_t *d, double now)
{
    harvest_gate_t *g = &d->gate;
    int status = 0;
    switch (slurm_child_poll(&g->scontrol, now, &status)) {
    case SLURM_CHILD_RUNNING: return;
    case SLURM_CHILD_LOST:
    case SLURM_CHILD_TIMED_OUT: finished(d, -1, now); return;
    case SLURM_CHILD_ENDED: finished(d, WIFEXITED(status) ? WEXITSTATUS(status) : -1, now); return;
    }
}

/* A closure the configuration no longer names (the gate turned off, its feature or this node's
 * name changed): its feature given back where it was taken. */
static bool stale_closure(const daemon_t *d)
{
    char node[64];
    cotenants_slurm_node(d, node, sizeof node);
    return closed(&d->gate) &&
           (!on(d) || strcmp(d->gate.feature, d->cfg.harvest_feature) != 0 || strcmp(d->gate.node, node) != 0);
}

static void close_gate(daemon_t *d, double now)
{
    harvest_gate_t *g = &d->gate;
    snprintf(g->feature, sizeof g->feature, "%s", d->cfg.harvest_feature);
    cotenants_slurm_node(d, g->node, sizeof g->node);
    if (!g->node[0]) {
        double wait = harvest_gate_backoff(g, now);
        snprintf(g->detail, sizeof g->detail,
                 "this node has no name to give Slurm (set guard.slurm_node): tried "
                 "again in %.0f s",
                 wait);
        log_warn("harvest gate: %s", g->detail);
        return;
    }
    note_trainers(d);
    log_info("harvest gate: a co-tenant held at the minimum share for %.0f s (guard.close_after %.0f): taking '%s' "
             "from node %s",
             now - g->at_minimum_since, d->cfg.close_after, g->feature, g->node);
    start(d, close_script, GATE_CLOSING, now);
}

void harvest_gate_tick(daemon_t *d, double now)
{
    harvest_gate_t *g = &d->gate;
    if (g->scontrol.pid > 0) {
        poll_child(d, now);
        return;
    }
    if (stale_closure(d)) {
        if (now >= g->retry_at) {
            log_info("harvest gate: the configuration no longer names this closure: giving '%s' back to node %s",
                     g->feature, g->node);
            start(d, open_script, GATE_OPENING, now);
        }
        return;
    }
    if (!on(d))
        return;
    gate_inputs_t in = inputs(d);
    switch (harvest_gate_decide(g, &in, now)) {
    case GATE_KEEP: return;
    case GATE_CLOSE: close_gate(d, now); return;
    case GATE_REASSERT: start(d, close_script, GATE_CLOSING, now); return;
    case GATE_REOPEN:
        log_info("harvest gate: no co-tenant at the minimum and %s: giving '%s' back",
                 in.trainers_present ? "guard.reopen_after passed" : "the trainers it closed for have ended",
                 g->feature);
        start(d, open_script, GATE_OPENING, now);
        return;
    }
}

json_t *harvest_gate_to_json(const daemon_t *d, double now)
{
    const harvest_gate_t *g = &d->gate;
    if (!d->cfg.harvest_feature[0] && !closed(g))
        return NULL;
    char node[64];
    cotenants_slurm_node(d, node, sizeof node);
    bool kept = closed(g) || g->state == GATE_CLOSING;
    return json_pack("{s:s, s:s, s:s, s:s?, s:f, s:I, s:s}", WIRE_R_STATE, harvest_gate_state_name(g->state),
                     WIRE_R_FEATURE, kept ? g->feature : d->cfg.harvest_feature, WIRE_R_NODE, kept ? g->node : node,
                     WIRE_R_DETAIL, g->detail[0] ? g->detail : NULL, WIRE_R_CLOSED_SECONDS,
                     g->closed_at > 0 ? now - g->closed_at : 0.0, WIRE_R_CLOSURES, (json_int_t)g->closures,
                     WIRE_R_TRAINERS, g->trainers);
}

json_t *harvest_gate_state(const daemon_t *d)
{
    const harvest_gate_t *g = &d->gate;
    if (g->closed_at <= 0)
        return NULL;
    return json_pack("{s:s, s:s, s:s}", WIRE_R_TRAINERS, g->trainers, WIRE_R_FEATURE, g->feature, WIRE_R_NODE, g->node);
}

void harvest_gate_restore(daemon_t *d, json_t *saved, double now)
{
    const char *trainers = json_string_value(json_object_get(saved, WIRE_R_TRAINERS));
    const char *feature = json_string_value(json_object_get(saved, WIRE_R_FEATURE));
    const char *node = json_string_value(json_object_get(saved, WIRE_R_NODE));
    harvest_gate_t *g = &d->gate;
    if (!feature || !node || !feature[0] || !node[0])
        return; /* nothing says what to give back */
    g->state = GATE_CLOSED;
    g->closed_at = now;
    g->asserted_at = now - HARVEST_GATE_REASSERT; /* taken again at the next tick */
    snprintf(g->feature, sizeof g->feature, "%s", feature);
    snprintf(g->node, sizeof g->node, "%s", node);
    snprintf(g->trainers, sizeof g->trainers, "%s", trainers ? trainers : "");
    snprintf(g->detail, sizeof g->detail, "closed before the daemon restarted (trainers: %.200s)",
             g->trainers[0] ? g->trainers : "none");
}

void harvest_gate_shutdown(daemon_t *d)
{
    harvest_gate_t *g = &d->gate;
    if (g->scontrol.pid > 0 && g->state == GATE_CLOSING && g->closed_at <= 0)
        g->closed_at = clock_now_mono(); /* its update may have gone through: saved, given back later */
    slurm_child_kill(&g->scontrol);
}
