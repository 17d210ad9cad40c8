/* run_output: the keys of the JSON lines that cosched-train and cosched-noise print on stdout and
 * that coschedd (runs.c) and cosched experiment read back. docs/trainer-output.md and
 * docs/noise-output.md document every key; only those a reader depends on are named here. */
#ifndef COSCHED_RUN_OUTPUT_H
#define COSCHED_RUN_OUTPUT_H

/* Every line: what kind of line it is. Header only, no jansson: the trainer writes its step lines
 * with fprintf. */
#define RUNOUT_EVENT "event"
#define RUNOUT_EVENT_STEP "step"         /* trainer, every --log-every steps */
#define RUNOUT_EVENT_SUMMARY "summary"   /* trainer and noise, once at the end */
#define RUNOUT_EVENT_PHASE "phase"       /* noise, a phase that ended */
#define RUNOUT_EVENT_PROGRESS "progress" /* noise, every report_every seconds of a running phase */

/* Trainer step lines: the step's seconds are what the guard judges. */
#define RUNOUT_STEP "step" /* the global step; in noise lines, the pattern step */
#define RUNOUT_RANK "rank" /* the MPI rank: trainer step and summary lines, every noise line */
#define RUNOUT_T_STEP "t_step"
#define RUNOUT_TIME "time" /* wall clock, Unix seconds (noise progress lines too) */

/* Trainer summary lines: where the step time went. */
#define RUNOUT_SHARE_COMPUTE "share_compute"
#define RUNOUT_SHARE_COMM "share_comm"
#define RUNOUT_SHARE_DATA "share_data"

/* Noise phase and progress lines: bytes moved and the rate, which coschedd sums per run. */
#define RUNOUT_MODE "mode"
#define RUNOUT_PHASE "phase"
#define RUNOUT_START "start"
#define RUNOUT_DURATION "duration"
#define RUNOUT_ELAPSED "elapsed"
#define RUNOUT_BYTES "bytes"
#define RUNOUT_RATE_MBS "rate_mbs"

#endif
