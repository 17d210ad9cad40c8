/* harvest_gate_law: whether this node offers its harvest feature (guard.harvest_feature) to Slurm —
 * the node feature every job of the harvest partition asks for (packaging/slurm/job_submit.lua).
 * A co-tenant held at the minimum share for guard.close_after seconds shows that the trainer beside
 * it is over budget even so: the gate closes (`scontrol update` takes the feature from the node)
 * and no new harvest job starts here. It opens again once no co-tenant is at the minimum and the
 * trainers it closed for have ended, or guard.reopen_after seconds have passed. While closed it
 * takes the feature again every HARVEST_GATE_REASSERT seconds, since a slurmctld restart or
 * `scontrol reconfigure` gives the node slurm.conf's features back. docs/slurm.md, "Deploying on
 * a cluster". Here the gate's record and its law, pure for tests with a fake clock, beside daemon.h
 * which holds the record; the commands run as slurm_child in cotenants/harvest_gate.c. */
#ifndef COSCHED_HARVEST_GATE_LAW_H
#define COSCHED_HARVEST_GATE_LAW_H

#include <stdbool.h>

#include "slurm_child.h"

enum { HARVEST_GATE_REASSERT = 60 };

typedef enum { GATE_OPEN, GATE_CLOSING, GATE_CLOSED, GATE_OPENING } gate_state_t;

/* What the law asks for at a tick. */
typedef enum {
    GATE_KEEP,     /* nothing to do */
    GATE_CLOSE,    /* take the feature: a co-tenant at the minimum for close_after */
    GATE_REASSERT, /* closed: take it again, in case Slurm gave it back */
    GATE_REOPEN,   /* give it back */
} gate_verdict_t;

typedef struct harvest_gate {
    gate_state_t state;
    double at_minimum_since; /* monotonic seconds; 0: no co-tenant at the minimum now */
    double closed_at;        /* when it closed (0: open) */
    double asserted_at;      /* when the feature was last taken */
    double retry_at;         /* a failed command is not tried again before */
    int failures;            /* commands in a row that failed: each waits twice as long */
    char trainers[512];      /* the trainers beside at the closure, job ids separated by spaces */
    char feature[64];        /* the closure's feature and node, as they were when it closed: */
    char node[64];           /* what is given back, whatever the configuration says now */
    unsigned long closures;  /* since the daemon started */
    char detail[320];        /* where it stands, in a few words */
    slurm_child_t scontrol;
} harvest_gate_t;

typedef struct gate_inputs {
    bool any_at_minimum;   /* some co-tenant is held at the minimum share */
    bool trainers_present; /* some trainer of the closure is still registered */
    double close_after, reopen_after;
} gate_inputs_t;

void harvest_gate_init(harvest_gate_t *g);

/* The law, once a second: what to do now (at_minimum_since follows the inputs). */
gate_verdict_t harvest_gate_decide(harvest_gate_t *g, const gate_inputs_t *in, double now);

/* A command failed: wait before the next, twice as long after each failure in a row
 * (slurm_child_retry_wait). Returns the wait. */
double harvest_gate_backoff(harvest_gate_t *g, double now);

const char *harvest_gate_state_name(gate_state_t s);

#endif
