/* cli_complete: the table of commands and options printed for tools: bash completion
 * (packaging/cosched.bash-completion) and the man page's synopsis (docs/cosched.md). */
#ifndef COSCHED_CLI_COMPLETE_H
#define COSCHED_CLI_COMPLETE_H

/* `cosched __complete WHAT [WORDS]` (hidden), argv[0] "__complete":
 *   commands               the top-level commands
 *   subcommands CMD        CMD's subcommands (none: nothing)
 *   options [CMD [SUB]]    the --options of cosched itself, CMD or CMD SUB
 *   values --OPTION        the words its value takes, @file, @job, or nothing
 *   synopsis               the man page's SYNOPSIS block
 *   synopsis PATH          one command's usage lines ("job register")
 * One per line; the exit status. */
int cli_complete(int argc, char **argv);

#endif
