/* experiment_jobs: what every design of `cosched experiment` asks of coschedd — jobs registered
 * and released, runs started, followed and stopped, the trainer's and the noise's command lines.
 * Calls that fail have printed why; they return NULL or an exit status in *rc. */
#ifndef COSCHED_EXPERIMENT_JOBS_H
#define COSCHED_EXPERIMENT_JOBS_H

#include <stdbool.h>

#include <jansson.h>

#include "experiment.h"

/* The trainer's and the noise's job of one repetition or one long run. */
typedef struct exp_jobs {
    char trainer[64], noise[64];
    bool trainer_registered, noise_registered;
} exp_jobs_t;

/* Sleep s seconds, through signals. */
void exp_sleep(double s);

/* cosched-noise's command line for the --noise kind (its own duration: a day; the runner stops
 * it), and the same at the configuration's intensity. */
json_t *exp_noise_kind_argv(const exp_options_t *o);
json_t *exp_noise_argv(const exp_options_t *o, const exp_config_t *c);

/* cosched-train's command line for steps steps, or --trainer's; trace: its --trace FILE (NULL: none). */
json_t *exp_trainer_argv(const exp_options_t *o, long steps, const char *trace);

/* Where the trainer goes, into a plan or job.register request: GPU 0, or with --gpus none one
 * rank on cores alone (cpu_ranks). Returns params. */
json_t *exp_trainer_place(const exp_options_t *o, json_t *params);

/* One call to coschedd, saying which one failed. */
json_t *exp_call(const client_opts_t *co, const char *method, json_t *params, int *rc);

/* The daemon's plan for c's placement with the trainer on GPU 0 (or, --gpus none, on cores). */
json_t *exp_plan_config(const client_opts_t *co, const exp_options_t *o, const exp_config_t *c, int *rc);

/* Register the trainer (with o->budget when c is guarded) and, for a noisy c, the noise as a
 * co-tenant of noise_cores cores, held at share 1 unless c is guarded. */
int exp_register_jobs(const client_opts_t *co, const exp_options_t *o, const exp_config_t *c, exp_jobs_t *jobs,
                      int noise_cores);
void exp_release_jobs(const client_opts_t *co, exp_jobs_t *jobs);

json_t *exp_start_run(const client_opts_t *co, const char *job, int rank, json_t *argv, int *rc);
/* The same with env (NULL: none), variables the run gets beside the daemon's own. Takes argv and env. */
json_t *exp_start_run_env(const client_opts_t *co, const char *job, int rank, json_t *argv, json_t *env, int *rc);
/* The run as run.list shows it now (caller owns it), or NULL. */
json_t *exp_get_run(const client_opts_t *co, json_int_t id, const char *job, int *rc);
/* The run once it has ended (caller owns it); NULL also when interrupted. */
json_t *exp_wait_run(const client_opts_t *co, json_int_t id, const char *job, int *rc);

/* cosched-train's compute / communication / data shares from its summary lines (-1: unknown). */
void exp_read_shares(const char *stdout_path, exp_rep_t *rep);

/* Whether a noise run is at work (bytes moved, or a progress line). */
bool exp_noise_at_work(const exp_options_t *o, const json_t *run);
/* Wait until every noise run is at work; an exit status after saying why not. */
int exp_wait_noise_at_work(const client_opts_t *co, const exp_options_t *o, const exp_jobs_t *jobs,
                           const json_int_t *ids, int nruns);
/* EXIT_FAIL, after naming its output, when a noise run has ended. */
int exp_check_noise_running(const client_opts_t *co, const exp_jobs_t *jobs, const json_int_t *ids, int nruns);
/* Stop the noise runs; their summed throughput (MB/s, -1: none moved bytes); each stdout path
 * goes onto outputs. */
double exp_stop_noise(const client_opts_t *co, const exp_jobs_t *jobs, const json_int_t *ids, int nruns,
                      json_t *outputs);

#endif
