/* reply_json: the JSON shapes of jobs, runs and their statistics that replies carry (documented
 * in docs/protocol.md). Read-only views of the daemon's state; the state file has its own schema. */
#ifndef COSCHED_REPLY_JSON_H
#define COSCHED_REPLY_JSON_H

#include "daemon.h"

/* {"job","role","uid","policy","ranks":[{"rank","gpu","numa","cpus","mems"}],"srun", ...} plus,
 * for a trainer, "budget"; for a co-tenant, "allowed_share", "knob" and "share_override". */
json_t *reply_json_job(const daemon_t *d, const job_t *j);

/* {"id","job","rank","pid","state","argv","started",...} */
json_t *reply_json_run(const run_t *r);

/* A job's statistics: steps, baseline, window, slowdown and the guard's state (trainer), or
 * its allowed share and knob (co-tenant), and its runs; with history, a trainer's recent history. */
json_t *reply_json_job_stats(const daemon_t *d, const job_t *j, bool history);

/* {"enabled","knobs":[{"name","available","detail"}]} */
json_t *reply_json_guard_status(const daemon_t *d);

#endif
