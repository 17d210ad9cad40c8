/* cli_complete: what `cosched __complete` prints, read from the table (cli_table.c), so that
 * completion and the man page never name an option cosched does not take. */
#include "cli_complete.h"

#include <stdio.h>
#include <string.h>

#include "cli_help.h"
#include "client.h"

static void print_commands(void)
{
    for (int i = 0; i < cli_ncommands; i++)
        if (cli_is_command(&cli_commands[i]))
            printf("%s\n", cli_commands[i].path);
}

static void print_subcommands(const char *group)
{
    size_t len = strlen(group);
    for (int i = 0; i < cli_ncommands; i++)
        if (len && strncmp(cli_commands[i].path, group, len) == 0 && cli_commands[i].path[len] == ' ')
            printf("%s\n", cli_commands[i].path + len + 1);
}

static int print_options(const char *path)
{
    const cli_command_t *c = cli_command_find(path);
    if (!c)
        return EXIT_USAGE;
    for (const cli_option_id_t *id = c->options; id && *id != CLI_END; id++)
        printf("--%s\n", cli_options[*id].name);
    return EXIT_OK;
}

static void print_values(const char *option)
{
    for (int i = 0; i < CLI_NOPTIONS; i++)
        if (strncmp(option, "--", 2) == 0 && strcmp(option + 2, cli_options[i].name) == 0 && cli_options[i].values)
            for (const char *v = cli_options[i].values; *v;) {
                size_t len = strcspn(v, " ");
                printf("%.*s\n", (int)len, v);
                v += len + (v[len] == ' ');
            }
}

/* The man page's block: cosched's own line, each command's usage lines, then help. */
static void print_man_synopsis(void)
{
    cli_print_synopsis(stdout, "", "    ", 1);
    printf("\n");
    for (int i = 0; i < cli_ncommands; i++)
        if (cli_is_command(&cli_commands[i]))
            cli_print_synopsis(stdout, cli_commands[i].path, "    ", 1);
    printf("    cosched --help | --version\n"
           "    cosched COMMAND --help\n");
}

int cli_complete(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "commands") == 0 && argc == 2)
        print_commands();
    else if (strcmp(what, "subcommands") == 0 && argc == 3)
        print_subcommands(argv[2]);
    else if (strcmp(what, "options") == 0 && argc <= 4) {
        char path[64];
        snprintf(path, sizeof path, "%s%s%s", argc > 2 ? argv[2] : "", argc > 3 ? " " : "", argc > 3 ? argv[3] : "");
        return print_options(path);
    } else if (strcmp(what, "values") == 0 && argc == 3)
        print_values(argv[2]);
    else if (strcmp(what, "synopsis") == 0 && argc == 2)
        print_man_synopsis();
    else if (strcmp(what, "synopsis") == 0 && argc == 3 && cli_command_find(argv[2]))
        cli_print_synopsis(stdout, argv[2], "", 1);
    else
        return EXIT_USAGE;
    return EXIT_OK;
}
