/* stats_plot: `cosched stats --plot FILE.png`. The stats reply with each trainer's history gives
 * the data (history.dat), a script draws it (history.gp), gnuplot (Debian's gnuplot-nox) runs in
 * a temporary directory and the PNG is copied to FILE, so a failure leaves FILE as it was. */
#include "stats_plot.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "wire.h"

extern char **environ;

/* The trainer to draw: the one named, or the only one; NULL after printing why not (*rc). */
static json_t *pick_trainer(json_t *jobs, const char *id, int *rc)
{
    size_t i;
    json_t *j, *found = NULL;
    int trainers = 0;
    char names[512] = "";
    json_array_foreach(jobs, i, j) {
        const char *jid = json_string_value(json_object_get(j, WIRE_R_JOB));
        bool trainer = json_object_get(j, WIRE_R_BASELINE) != NULL; /* a co-tenant has none */
        if (id && strcmp(id, jid) == 0) {
            if (!trainer) {
                *rc = output_fail("stats --plot: job %s is a co-tenant; only a trainer has a step-time history", id);
                return NULL;
            }
            return j;
        }
        if (!id && trainer) {
            found = j;
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, "%s%s", trainers++ ? ", " : "", jid);
        }
    }
    if (id) {
        *rc = output_fail("stats --plot: no job %s", id);
        return NULL;
    }
    if (trainers == 1)
        return found;
    if (trainers == 0)
        *rc = output_fail("stats --plot: no trainer is registered: nothing to plot");
    else
        *rc = output_usage_error("stats", "--plot draws one trainer: name it with --job (trainers: %s)", names);
    return NULL;
}

/* Block 0: the trainer's samples (seconds since t0, step time, baseline, budget line; '?' where
 * there is no baseline yet). Then one block per co-tenant: its share from each change on (or all
 * along, when it never changed), held to the end of the picture. */
static int write_data(const char *path, json_t *jobs, json_t *trainer, double t0, double t_end)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return output_fail("stats --plot: cannot write %s: %m", path);
    fprintf(f, "# seconds step_seconds baseline_seconds budget_seconds\n");
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(json_object_get(trainer, WIRE_R_HISTORY), WIRE_R_SAMPLES), i, s) {
        json_t *base = json_object_get(s, WIRE_R_BASELINE_SECONDS);
        double b = json_number_value(base), bu = json_number_value(json_object_get(s, WIRE_R_BUDGET));
        fprintf(f, "%.3f %.6f", json_number_value(json_object_get(s, WIRE_R_TIME)) - t0,
                json_number_value(json_object_get(s, WIRE_R_STEP_SECONDS)));
        if (json_is_number(base))
            fprintf(f, " %.6f %.6f\n", b, b * (1 + bu));
        else
            fprintf(f, " ? ?\n");
    }
    json_t *j;
    json_array_foreach(jobs, i, j) {
        json_t *changes = json_object_get(j, WIRE_R_SHARE_CHANGES);
        if (!json_is_array(changes))
            continue;
        fprintf(f, "\n\n# %s: seconds share\n", json_string_value(json_object_get(j, WIRE_R_JOB)));
        size_t k;
        json_t *c;
        double now = json_number_value(json_object_get(j, WIRE_R_ALLOWED_SHARE));
        if (json_array_size(changes) == 0) /* never changed: what it has now, all along */
            fprintf(f, "0 %.4f\n", now);
        json_array_foreach(changes, k, c)
            fprintf(f, "%.3f %.4f\n", json_number_value(json_object_get(c, WIRE_R_TIME)) - t0,
                    json_number_value(json_object_get(c, WIRE_R_SHARE)));
        fprintf(f, "%.3f %.4f\n", t_end - t0, now);
    }
    return fclose(f) == 0 ? 0 : output_fail("stats --plot: cannot write %s: %m", path);
}

static int write_script(const char *path, json_t *jobs, json_t *trainer, double t0, double t_end)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return output_fail("stats --plot: cannot write %s: %m", path);
    char when[64];
    time_t t = (time_t)t0;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
    const char *id = json_string_value(json_object_get(trainer, WIRE_R_JOB));
    fprintf(f,
            "# cosched stats --plot: job %s's step time, baseline and budget, co-tenants' share\n"
            "set terminal pngcairo size 960,540 font 'sans,10'\nset output 'history.png'\n"
            "set datafile missing '?'\nset grid\nset key outside top center horizontal\n"
            "set title \"job %s: step time against its budget, and the co-tenants' share\"\n"
            "set xlabel 'seconds since %s'\nset xrange [0:%.3f]\n"
            "set ylabel 'step time (s)'\nset offsets 0, 0, graph 0.05, graph 0.05\n"
            "set y2label \"co-tenant's share\"\nset y2range [0:1.05]\nset y2tics 0.25\nset ytics nomirror\n",
            id, id, when, t_end - t0 > 0 ? t_end - t0 : 1);
    fprintf(f,
            "plot 'history.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc rgb '#1f77b4' title 'step time', \\\n"
            "     '' index 0 using 1:3 with lines lw 2 lc rgb 'black' title 'baseline', \\\n"
            "     '' index 0 using 1:4 with lines lw 2 dt 2 lc rgb 'red' title 'budget'");
    size_t i;
    json_t *j;
    int b = 1;
    json_array_foreach(jobs, i, j) {
        if (!json_is_array(json_object_get(j, WIRE_R_SHARE_CHANGES)))
            continue;
        fprintf(f, ", \\\n     '' index %d using 1:2 axes x1y2 with steps lw 2 lc %d title 'share of %s'", b, b + 1,
                json_string_value(json_object_get(j, WIRE_R_JOB)));
        b++;
    }
    fprintf(f, "\n");
    return fclose(f) == 0 ? 0 : output_fail("stats --plot: cannot write %s: %m", path);
}

/* gnuplot history.gp in dir; an exit status. */
static int run_gnuplot(const char *dir)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addchdir_np(&actions, dir);
    char *argv[] = {"gnuplot", "history.gp", NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "gnuplot", &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        return output_fail("stats --plot: cannot run gnuplot (%s; Debian: apt-get install gnuplot-nox)", strerror(rc));
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return output_fail("stats --plot: gnuplot failed on %s/history.gp (above)", dir);
    return EXIT_OK;
}

static int write_whole(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* The drawn PNG to where it was asked for. */
static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return output_fail("stats --plot: gnuplot wrote no %s: %m", from);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        close(in);
        errno = e;
        return output_fail("stats --plot: cannot write %s: %m", to);
    }
    char buf[65536];
    ssize_t n;
    int rc = EXIT_OK;
    while ((n = read(in, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || write_whole(out, buf, (size_t)n) != 0) {
            rc = output_fail("stats --plot: cannot write %s: %m", to);
            break;
        }
    }
    close(in);
    if (close(out) != 0 && rc == EXIT_OK)
        rc = output_fail("stats --plot: cannot write %s: %m", to);
    return rc;
}

static int draw(json_t *jobs, json_t *trainer, const char *png)
{
    json_t *samples = json_object_get(json_object_get(trainer, WIRE_R_HISTORY), WIRE_R_SAMPLES);
    const char *id = json_string_value(json_object_get(trainer, WIRE_R_JOB));
    if (json_array_size(samples) == 0)
        return output_fail("stats --plot: job %s has no history yet (no step reported, no GPU window observed since "
                           "the "
                           "daemon started)",
                           id);
    double t0 = json_number_value(json_object_get(json_array_get(samples, 0), WIRE_R_TIME));
    double t_end = json_number_value(
        json_object_get(json_array_get(samples, json_array_size(samples) - 1), WIRE_R_TIME));
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (now.tv_sec + now.tv_nsec / 1e9 > t_end)
        t_end = now.tv_sec + now.tv_nsec / 1e9;
    const char *tmp = getenv("TMPDIR");
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/cosched-plot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return output_fail("stats --plot: cannot make a temporary directory %s: %m", dir);
    int rc;
    snprintf(path, sizeof path, "%s/history.dat", dir);
    rc = write_data(path, jobs, trainer, t0, t_end);
    if (rc == EXIT_OK) {
        snprintf(path, sizeof path, "%s/history.gp", dir);
        rc = write_script(path, jobs, trainer, t0, t_end);
    }
    if (rc == EXIT_OK)
        rc = run_gnuplot(dir);
    snprintf(path, sizeof path, "%s/history.png", dir);
    if (rc == EXIT_OK)
        rc = copy_file(path, png);
    const char *files[] = {"history.png", "history.gp", "history.dat"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return rc;
}

/* Two requests: every job (the trainers to pick from, the co-tenants' share changes), then the
 * trainer's history, which fills most of a frame on its own. */
int stats_plot(const client_opts_t *o, const char *job, const char *png)
{
    int rc;
    json_t *all = rpc_call(o, WIRE_STATS, NULL, &rc);
    if (!all)
        return rc;
    json_t *jobs = json_object_get(all, WIRE_R_JOBS);
    json_t *trainer = pick_trainer(jobs, job, &rc), *one = NULL;
    if (trainer)
        one = rpc_call(o, WIRE_STATS,
                       json_pack("{s:s, s:b}", WIRE_P_JOB, json_string_value(json_object_get(trainer, WIRE_R_JOB)),
                                 WIRE_P_HISTORY, 1),
                       &rc);
    if (one)
        rc = draw(jobs, json_array_get(json_object_get(one, WIRE_R_JOBS), 0), png);
    json_decref(one);
    json_decref(all);
    return rc;
}
