/* cli_parse: a command's words into its options, as cli_table.c declares them (getopt_long
 * underneath: unambiguous prefixes, --opt=value, options stop at the first other word). */
#ifndef COSCHED_CLI_PARSE_H
#define COSCHED_CLI_PARSE_H

#include "cli_table.h"

/* Called for each option in the order given; value NULL for a flag (and an absent optional
 * value). 0 to go on, else the exit status to stop with (the error said), or CLI_DONE to stop
 * with 0 (--version said). */
enum { CLI_DONE = 256 };
typedef int (*cli_set_t)(void *ctx, cli_option_id_t option, const char *value);

/* Parse argv[1..] for the command at path. -1 to go on (*rest: the first word that is no
 * option), else the exit status: --help printed, or a usage error said. */
int cli_parse(const char *path, int argc, char **argv, cli_set_t set, void *ctx, int *rest);

/* cli_parse for commands that take no other words: "unexpected argument" for one. */
int cli_parse_only(const char *path, int argc, char **argv, cli_set_t set, void *ctx);

/* For commands without options: only --help / -h, anything else is unexpected. -1 to go on. */
int cli_no_options(const char *path, int argc, char **argv);

/* `cosched GROUP SUB ...`: run the table's subcommand, or say which there are. */
int cli_run_subcommand(const char *group, const client_opts_t *o, int argc, char **argv);

/* For the many commands whose only option is --job: ctx is a const char ** it sets. */
int cli_set_job(void *ctx, cli_option_id_t option, const char *value);

/* A whole number, or any number, in the option's range (cli_table.c): 0 and *out set, else -1. */
int cli_count(cli_option_id_t option, const char *value, long *out);
int cli_number(cli_option_id_t option, const char *value, double *out);

/* --budget's value (proto/bounds.h): 0 and the budget set, else the usage error's status. */
int cli_parse_budget(const char *path, const char *value, double *budget);

#endif
