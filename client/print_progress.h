/* print_progress: a job's progress, hold, escalation and GPUs as text lines (print_progress.c). */
#ifndef COSCHED_PRINT_PROGRESS_H
#define COSCHED_PRINT_PROGRESS_H

#include <jansson.h>

/* A trainer's progress source and why; a co-tenant's hold (in Slurm's cgroups, or why not); the
 * GPUs as the daemon samples them. Each line starts with indent. */
void print_progress(json_t *progress, const char *indent);
/* A trainer's source in a few words, written to out: "gpu", "steps (reported)", "steps (hook,
 * torch 2.4.0)"; "?" without a progress object. */
const char *print_progress_brief(json_t *progress, char *out, size_t len);
void print_hold(json_t *hold, const char *indent);
/* A co-tenant's escalation through Slurm (requeue), when there is one to tell. */
void print_escalation(json_t *escalation, const char *indent);
/* A co-tenant's time held and the minutes handed back (guard.extend_time_limit), when any. */
void print_time_credit(json_t *time_credit, const char *indent);
void print_gpus(json_t *gpus, const char *indent);

#endif
