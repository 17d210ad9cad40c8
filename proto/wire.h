/* wire: the vocabulary of the control protocol — method names, request parameter keys and, through
 * wire_reply.h, reply keys — in one place that coschedd, cosched and libcosched build from.
 * docs/protocol.md documents each. */
#ifndef COSCHED_WIRE_H
#define COSCHED_WIRE_H

/* Methods. */
#define WIRE_PING "ping"
#define WIRE_STATUS "status"
#define WIRE_TOPOLOGY "topology"
#define WIRE_PLAN "plan"
#define WIRE_JOB_REGISTER "job.register"
#define WIRE_JOB_RELEASE "job.release"
#define WIRE_JOB_LIST "job.list"
#define WIRE_JOB_GET "job.get"
#define WIRE_JOB_CONFINE "job.confine"
#define WIRE_RUN_START "run.start"
#define WIRE_RUN_STOP "run.stop"
#define WIRE_RUN_LIST "run.list"
#define WIRE_REPORT "report"
#define WIRE_BASELINE_SET "baseline.set"
#define WIRE_PHASE "phase"
#define WIRE_STATS "stats"
#define WIRE_METRICS "metrics"
#define WIRE_GUARD_SET "guard.set"

/* The request envelope. */
#define WIRE_KEY_VERSION "v"
#define WIRE_KEY_METHOD "method"
#define WIRE_KEY_PARAMS "params"

/* The reply envelope: ok with a result, or not ok with an error's code and message. */
#define WIRE_KEY_OK "ok"
#define WIRE_KEY_RESULT "result"
#define WIRE_KEY_ERROR "error"
#define WIRE_KEY_CODE "code"
#define WIRE_KEY_MESSAGE "message"

/* Request parameters. */
#define WIRE_P_JOB "job"
#define WIRE_P_UID "uid"
#define WIRE_P_ROLE "role"
#define WIRE_P_POLICY "policy"
#define WIRE_P_GPUS "gpus"
#define WIRE_P_RANKS_PER_GPU "ranks_per_gpu"
#define WIRE_P_CPU_RANKS "cpu_ranks" /* a trainer on cores alone, no GPU: this many ranks */
#define WIRE_P_CORES_PER_RANK "cores_per_rank"
#define WIRE_P_CORES "cores"
#define WIRE_P_CPUS "cpus"
#define WIRE_P_EXTERNAL "external"
#define WIRE_P_SHARE_CORES "share_cores"
#define WIRE_P_NOISE_RANKS "noise_ranks"
#define WIRE_P_SMT "smt"
#define WIRE_P_MEM "mem" /* plan: trainer ranks' memory, "local" or "hbm" (plan_mem_parse) */
#define WIRE_P_BUDGET "budget"
#define WIRE_P_RANK "rank" /* run.start: the rank to run; report: the reporting process's rank */
#define WIRE_P_ARGV "argv"
#define WIRE_P_ENV "env"
#define WIRE_P_CWD "cwd"
#define WIRE_P_ID "id"
#define WIRE_P_STEP_TIME "step_time"
#define WIRE_P_SOURCE "source" /* report: how the step arrives, WIRE_STEPS_REPORTED (default) or WIRE_STEPS_HOOK */
#define WIRE_P_TORCH "torch"   /* report from the hook: torch.__version__ */
#define WIRE_P_PHASE "phase"
#define WIRE_PHASE_TRAIN "train" /* the phase whose steps are judged; any other is not */
#define WIRE_P_SHARE "share"
#define WIRE_P_HISTORY "history" /* stats: each trainer's recent history too */
#define WIRE_P_GUARD "guard"
#define WIRE_P_PROGRESS "progress"
#define WIRE_P_PARTITION "partition"
#define WIRE_P_AUTOREPORT "autoreport" /* job.register: true or false, over the site's default */

/* Progress sources, as job.register's progress, progress.source in coschedd.yaml and every
 * reply's progress.source name them (docs/guard.md). */
#define WIRE_PROGRESS_AUTO "auto"
#define WIRE_PROGRESS_STEPS "steps"
#define WIRE_PROGRESS_GPU "gpu"
#define WIRE_PROGRESS_PMU "pmu"
#define WIRE_PROGRESS_NONE "none"

/* How a trainer's steps arrive, as report's source and every reply's progress.step_source name
 * them: its program's own reports (libcosched, the Python module, cosched report, a run's step
 * lines), or the optimizer hook of the injected autoreport (docs/autoreport.md). */
#define WIRE_STEPS_REPORTED "reported"
#define WIRE_STEPS_HOOK "hook"

/* Role names, as in job.register and every reply that names a job's role. */
#define WIRE_ROLE_TRAINER "trainer"
#define WIRE_ROLE_COTENANT "cotenant"

/* Environment variables through which a job's processes find the daemon and their job. */
#define WIRE_ENV_SOCKET "COSCHED_SOCKET"
#define WIRE_ENV_JOB "COSCHED_JOB"
#define WIRE_ENV_RANK "COSCHED_RANK"
#define WIRE_ENV_RUN "COSCHED_RUN"
#define WIRE_ENV_SLURM_JOB "SLURM_JOB_ID"
/* Where a trainer's processes find the injected step reporter: its directory goes first. */
#define WIRE_ENV_PYTHONPATH "PYTHONPATH"

/* The other direction: the keys inside a reply's result, a file of their own for their number. */
#include "wire_reply.h"

#endif
