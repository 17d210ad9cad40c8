/* cli_help: --help's text, its usage lines from the table of commands (cli_table.c). */
#ifndef COSCHED_CLI_HELP_H
#define COSCHED_CLI_HELP_H

#include <stdio.h>

#include "cli_table.h"

/* The usage lines of a command (a group: of all its subcommands), the first after prefix and
 * the others after as many spaces, each at most ends in a newline. */
void cli_print_synopsis(FILE *out, const char *path, const char *prefix, int first);

/* --help of the command at path ("job register": job's), "" for cosched's own. */
void cli_print_help(FILE *out, const char *path);

/* A top-level command: a path of one word, and not cosched itself. */
int cli_is_command(const cli_command_t *c);

#endif
