/* cli_parse: one parser for every command, built from the table (cli_table.c), so that each
 * command says what an option's value means and nothing about how options are found. */
#include "cli_parse.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "cli_help.h"
#include "client.h"
#include "cpulist.h"
#include "suggest.h"

enum { CLI_VAL_BASE = 256 };

/* The command's options as getopt_long wants them; --help is 'h', so -h works too. A command lists
 * each option once, so CLI_NOPTIONS entries hold any command's. */
static void build_longopts(const cli_command_t *c, struct option *out)
{
    int n = 0;
    for (const cli_option_id_t *id = c->options; id && *id != CLI_END && n < CLI_NOPTIONS; id++, n++) {
        const cli_option_t *spec = &cli_options[*id];
        out[n] = (struct option){spec->name,
                                 spec->arg == CLI_ARG_NONE       ? no_argument
                                 : spec->arg == CLI_ARG_OPTIONAL ? optional_argument
                                                                 : required_argument,
                                 NULL, *id == CLI_O_HELP ? 'h' : CLI_VAL_BASE + (int)*id};
    }
    out[n] = (struct option){NULL, 0, NULL, 0};
}

/* cosched itself says an unknown option with its whole usage; a command, with a hint. */
static int unknown_option(const char *path, const char *word)
{
    if (!*path) {
        fprintf(stderr, "cosched: unknown or incomplete option '%s'\n", word);
        cli_print_help(stderr, "");
        return EXIT_USAGE;
    }
    return output_usage_error(path, "unknown or incomplete option '%s'", word);
}

int cli_parse(const char *path, int argc, char **argv, cli_set_t set, void *ctx, int *rest)
{
    const cli_command_t *c = cli_command_find(path);
    struct option longopts[CLI_NOPTIONS + 1];
    build_longopts(c, longopts);
    int opt;
    optind = 0; /* 0, not 1: glibc starts afresh for this argv */
    opterr = 0;
    /* '+': stop at the first other word; what follows is the command's (or its command line) */
    while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            cli_print_help(stdout, path);
            return EXIT_OK;
        }
        if (opt < CLI_VAL_BASE)
            return unknown_option(path, argv[optind - 1]);
        int rc = set(ctx, (cli_option_id_t)(opt - CLI_VAL_BASE), optarg);
        if (rc != 0)
            return rc == CLI_DONE ? EXIT_OK : rc;
    }
    *rest = optind;
    return -1;
}

int cli_parse_only(const char *path, int argc, char **argv, cli_set_t set, void *ctx)
{
    int rest, rc = cli_parse(path, argc, argv, set, ctx, &rest);
    if (rc >= 0)
        return rc;
    if (rest < argc)
        return output_usage_error(path, "unexpected argument '%s'", argv[rest]);
    return -1;
}

int cli_no_options(const char *path, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_print_help(stdout, path);
            return EXIT_OK;
        }
        return output_usage_error(path, "unexpected argument '%s'", argv[i]);
    }
    return -1;
}

/* The group's subcommands' names, from the table, in its order. */
static int subcommands(const char *group, const cli_command_t **subs, int max)
{
    size_t len = strlen(group);
    int n = 0;
    for (int i = 0; i < cli_ncommands && n < max; i++)
        if (strncmp(cli_commands[i].path, group, len) == 0 && cli_commands[i].path[len] == ' ')
            subs[n++] = &cli_commands[i];
    return n;
}

int cli_run_subcommand(const char *group, const client_opts_t *o, int argc, char **argv)
{
    const cli_command_t *subs[16];
    const char *words[16];
    int nsubs = subcommands(group, subs, 16);
    size_t skip = strlen(group) + 1;
    char names[128] = "";
    for (int i = 0; i < nsubs; i++) {
        words[i] = subs[i]->path + skip;
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", words[i]);
    }
    if (argc < 2)
        return output_usage_error(group, "which subcommand: %s?", names);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_print_help(stdout, group);
        return EXIT_OK;
    }
    for (int i = 0; i < nsubs; i++)
        if (strcmp(argv[1], words[i]) == 0)
            return subs[i]->run(o, argc - 1, argv + 1);
    char near[256];
    suggest_names(argv[1], words, (size_t)nsubs, near, sizeof near);
    if (*near)
        return output_usage_error(group, "unknown subcommand '%s': did you mean %s? (%s)", argv[1], near, names);
    return output_usage_error(group, "unknown subcommand '%s' (%s)", argv[1], names);
}

int cli_set_job(void *ctx, cli_option_id_t option, const char *value)
{
    (void)option;
    *(const char **)ctx = value;
    return 0;
}

int cli_count(cli_option_id_t option, const char *value, long *out)
{
    return cpulist_parse_int(value, (long)cli_options[option].min, (long)cli_options[option].max, out);
}

int cli_number(cli_option_id_t option, const char *value, double *out)
{
    char *end;
    double v = strtod(value, &end);
    if (end == value || *end || !(v >= cli_options[option].min && v <= cli_options[option].max))
        return -1;
    *out = v;
    return 0;
}

int cli_parse_budget(const char *path, const char *value, double *budget)
{
    char *end;
    double b = strtod(value, &end);
    if (*end || !bounds_budget_ok(b))
        return output_usage_error(path, "--budget needs a fraction above 0 (0.05 = 5 %%), not '%s'", value);
    *budget = b;
    return 0;
}
