/* harvest_gate: the node's harvest gate at work — the law of harvest_gate_law.h fed with the
 * co-tenants' holds and the trainers present, once a second, and its `scontrol update` run as a
 * slurm_child; where it stands for status, the metrics and the state file. */
#ifndef COSCHED_HARVEST_GATE_H
#define COSCHED_HARVEST_GATE_H

#include <jansson.h>

#include "daemon.h"

/* Once a second (nothing when guard.harvest_feature is ""): never waits on Slurm. */
void harvest_gate_tick(daemon_t *d, double now);

/* {"state", "feature", "node", "detail", "closed_seconds", "closures", "trainers"}; NULL when the
 * gate is off. */
json_t *harvest_gate_to_json(const daemon_t *d, double now);

/* What the state file keeps: {"trainers"} while closed (or closing again), else NULL. */
json_t *harvest_gate_state(const daemon_t *d);

/* A saved closure (the state file's object): closed again, and the feature taken again at the
 * next tick, since nothing says what Slurm did meanwhile. */
void harvest_gate_restore(daemon_t *d, json_t *saved, double now);

/* At shutdown: its scontrol, if one runs, killed. The node stays as it is. */
void harvest_gate_shutdown(daemon_t *d);

#endif
