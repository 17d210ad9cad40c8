/* experiment_hook: a --trainer command's steps from cosched's PyTorch hook; see experiment_hook.h. */
#include "experiment_hook.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "wire.h"

#ifndef COSCHED_AUTOREPORT_DIR
#define COSCHED_AUTOREPORT_DIR "/usr/local/lib/cosched/autoreport"
#endif

enum { TAIL_LINES = 5, TAIL_BYTES = 4096 };

/* The experiment puts the hook on the command's path itself, so that it measures a command on a
 * node whose site turned autoreport off too; where it is on, run start puts the daemon's
 * directory first as well (twice is harmless: sitecustomize takes every copy off sys.path). */
int exp_hook_dir(char *out, size_t len)
{
    const char *dir = getenv("COSCHED_AUTOREPORT_DIR");
    if (!dir || !*dir)
        dir = COSCHED_AUTOREPORT_DIR;
    char site[PATH_MAX];
    snprintf(site, sizeof site, "%s/sitecustomize.py", dir);
    if (access(site, R_OK) != 0)
        return output_fail("--trainer: cannot read cosched's step hook %s: %m (the blocked design takes a trainer "
                           "command's steps from it; COSCHED_AUTOREPORT_DIR names another directory, or use --design "
                           "runs)",
                           site);
    snprintf(out, len, "%s", dir);
    return 0;
}

/* The step log, empty, writable by the run's user (it runs as --uid, we may be root). */
static int make_step_log(const exp_options_t *o, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return output_fail("cannot create the trainer's step log %s: %m", path);
    int rc = 0;
    if (geteuid() == 0 && o->uid != 0 && fchown(fd, o->uid, (gid_t)-1) != 0)
        rc = output_fail("cannot give the trainer's step log %s to uid %u: %m", path, (unsigned)o->uid);
    close(fd);
    return rc;
}

json_t *exp_hook_env(const exp_options_t *o, const char *step_log)
{
    char dir[PATH_MAX];
    if (exp_hook_dir(dir, sizeof dir) != 0 || make_step_log(o, step_log) != 0)
        return NULL;
    const char *theirs = getenv(WIRE_ENV_PYTHONPATH);
    char *pythonpath = NULL;
    if (asprintf(&pythonpath, "%s%s%s", dir, theirs && *theirs ? ":" : "", theirs && *theirs ? theirs : "") < 0) {
        output_fail("out of memory");
        return NULL;
    }
    json_t *env = json_pack("{s:s, s:s}", WIRE_ENV_PYTHONPATH, pythonpath, WIRE_ENV_AUTOREPORT_STEPLOG, step_log);
    free(pythonpath);
    return env;
}

double exp_hook_first_step_seconds(const exp_options_t *o)
{
    double s = o->time_limit < EXP_HOOK_FIRST_STEP_S ? o->time_limit : EXP_HOOK_FIRST_STEP_S;
    return s > EXP_HOOK_FIRST_STEP_MIN_S ? s : EXP_HOOK_FIRST_STEP_MIN_S;
}

/* The last TAIL_LINES lines of a file, prefixed; nothing when it is empty or unreadable. */
static void print_tail(FILE *f, const char *path)
{
    FILE *in = fopen(path, "r");
    if (!in)
        return;
    char buf[TAIL_BYTES + 1];
    long size = fseek(in, 0, SEEK_END) == 0 ? ftell(in) : -1;
    long from = size > TAIL_BYTES ? size - TAIL_BYTES : 0;
    size_t n = size >= 0 && fseek(in, from, SEEK_SET) == 0 ? fread(buf, 1, TAIL_BYTES, in) : 0;
    fclose(in);
    buf[n] = '\0';
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    if (n == 0)
        return;
    char *start = buf + n;
    for (int lines = 0; start > buf && lines < TAIL_LINES; start--)
        if (start[-1] == '\n' && ++lines == TAIL_LINES)
            break;
    fprintf(f, "  the end of %s:\n", path);
    for (char *line = strtok(start, "\n"); line; line = strtok(NULL, "\n"))
        fprintf(f, "  | %s\n", line);
}

void exp_print_output_tail(FILE *f, const char *stdout_path)
{
    if (!stdout_path || !*stdout_path)
        return;
    print_tail(f, stdout_path);
    size_t len = strlen(stdout_path);
    if (len > 4 && strcmp(stdout_path + len - 4, ".out") == 0) {
        char err_path[PATH_MAX];
        snprintf(err_path, sizeof err_path, "%.*s.err", (int)(len - 4), stdout_path);
        print_tail(f, err_path);
    }
}

void exp_hook_say_no_steps(const exp_options_t *o, double seconds, const char *stdout_path)
{
    fprintf(stderr,
            "cosched experiment: no steps from the trainer command in the first %.0f s: is it a PyTorch program "
            "that calls optimizer.step()? Its steps come from cosched's step hook on its PYTHONPATH, which sees "
            "none with COSCHED_AUTOREPORT=0, with python -S, -E or -I, or where the command resets PYTHONPATH "
            "(docs/autoreport.md). The command: %s; its output: %s and its .err beside it\n",
            seconds, o->trainer_cmd, stdout_path);
    exp_print_output_tail(stderr, stdout_path);
}
