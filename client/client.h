/* client: the cosched command line. One file per command (or group of subcommands); each
 * returns an exit status: 0 ok, 1 refused / cannot be met / unreadable, 2 usage, 3 no daemon.
 * The table of commands and options (cli_table.c) names these entry points. */
#ifndef COSCHED_CLIENT_H
#define COSCHED_CLIENT_H

#include <jansson.h>
#include <stdio.h>

#include "output.h"
#include "print_progress.h"
#include "rpc.h"

int cmd_topo(const client_opts_t *o, int argc, char **argv);
int cmd_plan(const client_opts_t *o, int argc, char **argv);
int cmd_slurm_conf(const client_opts_t *o, int argc, char **argv);
int cmd_status(const client_opts_t *o, int argc, char **argv);
int cmd_job(const client_opts_t *o, int argc, char **argv);
int cmd_job_register(const client_opts_t *o, int argc, char **argv);
int cmd_job_release(const client_opts_t *o, int argc, char **argv);
int cmd_job_get(const client_opts_t *o, int argc, char **argv);
int cmd_job_confine(const client_opts_t *o, int argc, char **argv);
int cmd_job_list(const client_opts_t *o, int argc, char **argv);
int cmd_run(const client_opts_t *o, int argc, char **argv);
int cmd_run_start(const client_opts_t *o, int argc, char **argv);
int cmd_run_stop(const client_opts_t *o, int argc, char **argv);
int cmd_run_list(const client_opts_t *o, int argc, char **argv);
int cmd_stats(const client_opts_t *o, int argc, char **argv);
int cmd_report(const client_opts_t *o, int argc, char **argv);
int cmd_metrics(const client_opts_t *o, int argc, char **argv);
int cmd_bind(const client_opts_t *o, int argc, char **argv);
int cmd_env(const client_opts_t *o, int argc, char **argv);
int cmd_guard(const client_opts_t *o, int argc, char **argv);
int cmd_guard_status(const client_opts_t *o, int argc, char **argv);
int cmd_guard_set(const client_opts_t *o, int argc, char **argv);
int cmd_experiment(const client_opts_t *o, int argc, char **argv);

/* topo's and slurm-conf's options, --topology FILE and --json: -1 to go on (*xml NULL when not
 * given, *json also set by the global --json), else the exit status. */
int cmd_topo_options(const char *path, const client_opts_t *o, int argc, char **argv, const char **xml, int *json);

/* Each command's --help after its usage lines (those come from the table). */
void cmd_topo_help(FILE *out);
void cmd_plan_help(FILE *out);
void cmd_slurm_conf_help(FILE *out);
void cmd_status_help(FILE *out);
void cmd_job_help(FILE *out);
void cmd_run_help(FILE *out);
void cmd_stats_help(FILE *out);
void cmd_report_help(FILE *out);
void cmd_metrics_help(FILE *out);
void cmd_bind_help(FILE *out);
void cmd_env_help(FILE *out);
void cmd_guard_help(FILE *out);
void cmd_experiment_help(FILE *out);

/* cmd_daemon.c's tables, shared by the daemon commands: the guard's part of `status` (on or off,
 * the budget, the knobs best first), and a rank list as RANK GPU NUMA CPUS MEMS. */
void cmd_daemon_print_guard(json_t *guard);
void cmd_daemon_print_ranks(json_t *ranks);

#endif
