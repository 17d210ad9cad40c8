/* client: the cosched command line. One file per command (or group of subcommands); each
 * returns an exit status: 0 ok, 1 refused / cannot be met / unreadable, 2 usage, 3 no daemon. */
#ifndef COSCHED_CLIENT_H
#define COSCHED_CLIENT_H

#include <jansson.h>
#include <stdio.h>

#include "rpc.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_UNREACHABLE = 3 };

int cmd_topo(const client_opts_t *o, int argc, char **argv);
int cmd_plan(const client_opts_t *o, int argc, char **argv);
int cmd_slurm_conf(const client_opts_t *o, int argc, char **argv);
int cmd_status(const client_opts_t *o, int argc, char **argv);
int cmd_job(const client_opts_t *o, int argc, char **argv);
int cmd_run(const client_opts_t *o, int argc, char **argv);
int cmd_stats(const client_opts_t *o, int argc, char **argv);
int cmd_report(const client_opts_t *o, int argc, char **argv);
int cmd_metrics(const client_opts_t *o, int argc, char **argv);
int cmd_bind(const client_opts_t *o, int argc, char **argv);
int cmd_env(const client_opts_t *o, int argc, char **argv);
int cmd_guard(const client_opts_t *o, int argc, char **argv);
int cmd_experiment(const client_opts_t *o, int argc, char **argv);

/* The guard's part of `status`: on or off, the budget, the knobs best first. */
void print_guard_status(json_t *guard);

/* A trainer's progress source and why; a co-tenant's hold (in Slurm's cgroups, or why not); the
 * GPUs as the daemon samples them. Each line starts with indent. */
void print_progress(json_t *progress, const char *indent);
void print_hold(json_t *hold, const char *indent);
/* A co-tenant's escalation through Slurm (requeue), when there is one to tell. */
void print_escalation(json_t *escalation, const char *indent);
void print_gpus(json_t *gpus, const char *indent);

/* For commands without options of their own: accept only --help / -h. */
int no_options(const char *command, const char *usage_text, int argc, char **argv);

typedef struct subcommand {
    const char *name;
    int (*run)(const client_opts_t *o, int argc, char **argv);
} subcommand_t;

/* `cosched COMMAND SUB ...`: run the named subcommand, or print usage / a usage error. */
int run_subcommand(const char *command, const char *usage_text, const subcommand_t *subs, int nsubs,
                   const client_opts_t *o, int argc, char **argv);

/* For commands whose only option is --job ID: -1 to go on (job set or left NULL), else the
 * exit status (help printed, or a usage error). */
int parse_job_option(const char *command, const char *usage_text, int argc, char **argv, const char **job);

/* For commands whose options are --topology FILE and --json (topo, slurm-conf): -1 to go on
 * (*xml NULL when not given, *json also set by the global --json), else the exit status. */
int parse_topology_options(const char *command, void (*usage)(FILE *), const client_opts_t *o, int argc, char **argv,
                           const char **xml, int *json);

/* Print a rank list as a table: RANK GPU NUMA CPUS MEMS. */
void print_rank_table(json_t *ranks);

/* From now on errors are printed as {"error":{"code","message"[,"hint"]}} on stdout (--json). */
void output_json_errors(int on);

/* Print an error — "CONTEXT: message" and the hint on stderr, or the JSON object — and return
 * status. code: the daemon's (EINVAL, EPERM ...) or EUSAGE, EFAIL, EUNREACHABLE. */
int report_error(int status, const char *code, const char *context, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Print a usage error ("cosched plan: ...") and a hint, return EXIT_USAGE. */
int usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "cosched: message" on stderr and return EXIT_FAIL. */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Write a JSON document to stdout, indented, with a final newline; takes the reference. */
int print_json(json_t *doc);

/* "64.0 GiB" */
void format_bytes(unsigned long long bytes, char *out, size_t outlen);

#endif
