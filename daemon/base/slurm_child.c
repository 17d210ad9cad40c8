/* slurm_child: a Slurm command as a child the event loop never waits on (slurm_child.h). */
#include "slurm_child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

void slurm_child_init(slurm_child_t *c)
{
    memset(c, 0, sizeof *c);
    c->out_fd = -1;
}

/* The daemon's environment with SLURM_CONF replaced when slurm_conf is not "". NULL when out of
 * memory. */
static char **child_environment(const char *slurm_conf, char *setting, size_t len)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!slurm_conf[0] || strncmp(environ[i], "SLURM_CONF=", 11) != 0)
            env[k++] = environ[i];
    if (slurm_conf[0]) {
        snprintf(setting, len, "SLURM_CONF=%s", slurm_conf);
        env[k++] = setting;
    }
    return env;
}

bool slurm_child_start(slurm_child_t *c, const char *const *argv, const char *slurm_conf, double now, char *err,
                       size_t errlen)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "cannot run %s: pipe: %s", argv[0], strerror(errno));
        return false;
    }
    posix_spawn_file_actions_t files;
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&files, fds[1], 1);
    posix_spawn_file_actions_adddup2(&files, fds[1], 2);
    posix_spawnattr_init(&attr);
    /* Not the daemon's blocked signals (its signalfd's), nor its ignored SIGPIPE; a group of its
     * own, so that a timeout kills whatever scontrol started. */
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    size_t setting_len = strlen(slurm_conf) + 16;
    char *setting = malloc(setting_len);
    char **env = setting ? child_environment(slurm_conf, setting, setting_len) : NULL;
    int rc = env ? posix_spawnp(&pid, argv[0], &files, &attr, (char *const *)argv, env) : ENOMEM;
    free(env);
    free(setting);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(rc));
        return false;
    }
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    c->pid = pid;
    c->out_fd = fds[0];
    c->started = now;
    c->output_len = 0;
    c->output[0] = '\0';
    return true;
}

static void forget(slurm_child_t *c)
{
    close(c->out_fd);
    c->pid = 0;
    c->out_fd = -1;
}

/* What the child wrote so far (the pipe does not block). */
static void read_output(slurm_child_t *c)
{
    char buf[512];
    ssize_t n;
    while ((n = read(c->out_fd, buf, sizeof buf)) > 0) {
        size_t room = sizeof c->output - 1 - c->output_len, take = (size_t)n < room ? (size_t)n : room;
        memcpy(c->output + c->output_len, buf, take);
        c->output_len += take;
        c->output[c->output_len] = '\0';
    }
}

slurm_child_poll_t slurm_child_poll(slurm_child_t *c, double now, int *status)
{
    read_output(c);
    pid_t got = waitpid(c->pid, status, WNOHANG);
    if (got == 0) {
        if (now - c->started > SLURM_CHILD_TIMEOUT)
            kill(-c->pid, SIGKILL); /* reaped at a later poll */
        return SLURM_CHILD_RUNNING;
    }
    read_output(c); /* what it wrote between the read above and its end */
    forget(c);
    if (got < 0)
        return SLURM_CHILD_LOST;
    if (WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL && now - c->started > SLURM_CHILD_TIMEOUT)
        return SLURM_CHILD_TIMED_OUT;
    return SLURM_CHILD_ENDED;
}

void slurm_child_kill(slurm_child_t *c)
{
    if (c->pid <= 0)
        return;
    kill(-c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0); /* killed: at once */
    forget(c);
}

double slurm_child_retry_wait(int *failures)
{
    double wait = SLURM_CHILD_RETRY;
    for (int i = 0; i < *failures && wait < SLURM_CHILD_RETRY_MAX; i++)
        wait *= 2;
    (*failures)++;
    return wait < SLURM_CHILD_RETRY_MAX ? wait : SLURM_CHILD_RETRY_MAX;
}

const char *slurm_child_first_line(const slurm_child_t *c, char *out, size_t len)
{
    size_t n = strcspn(c->output, "\n");
    snprintf(out, len, "%.*s", (int)(n < len - 1 ? n : len - 1), c->output);
    return out[0] ? out : "no output";
}

const char *slurm_child_last_line(const slurm_child_t *c, char *out, size_t len)
{
    size_t end = c->output_len;
    while (end > 0 && c->output[end - 1] == '\n')
        end--;
    size_t start = end;
    while (start > 0 && c->output[start - 1] != '\n')
        start--;
    snprintf(out, len, "%.*s", (int)(end - start < len - 1 ? end - start : len - 1), c->output + start);
    return out[0] ? out : "no output";
}
