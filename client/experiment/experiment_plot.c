/* experiment_plot: the box plot of the trainer's run times per configuration, drawn by gnuplot
 * (Debian's gnuplot-nox) as runs.png and runs.svg beside the data it reads (runs.dat, plot.gp). */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "experiment.h"
#include "experiment_stats.h"

extern char **environ;

/* One block per configuration, blocks apart by two blank lines: gnuplot's `index`. */
static int write_data(const char *path, const exp_result_t *results, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return output_fail("cannot write %s: %m", path);
    for (int i = 0; i < n; i++) {
        fprintf(f, "# %s\n", results[i].config.name);
        for (int r = 0; r < results[i].nreps; r++)
            fprintf(f, "%.6f\n", results[i].reps[r].seconds);
        fprintf(f, "\n\n");
    }
    return fclose(f) == 0 ? 0 : output_fail("cannot write %s: %m", path);
}

static void write_plot(FILE *f, const char *terminal, const char *output, const exp_result_t *results, int n)
{
    fprintf(f, "set terminal %s\nset output '%s'\n", terminal, output);
    fprintf(f, "set xtics (");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s\"%s\" %d", i ? ", " : "", results[i].config.name, i + 1);
    fprintf(f, ")\nset xrange [0.4:%d.6]\n", n);
    fprintf(f,
            "plot for [i=1:%d] 'runs.dat' index (i-1) using (i):1 with boxplot lc i notitle, \\\n"
            "     for [i=1:%d] 'runs.dat' index (i-1) using (i):1 with points pt 7 ps 0.6 lc rgb 'black' notitle\n",
            n, n);
}

/* The script: both terminals, one style. Run from the output directory, so names are relative. */
static int write_script(const char *path, const exp_options_t *o, const exp_result_t *results, int n)
{
    char ylabel[128];
    if (o->design == EXP_DESIGN_BLOCKS)
        snprintf(ylabel, sizeof ylabel, "trainer time for %d steps at the pace of each block (s)", o->steps);
    else
        snprintf(ylabel, sizeof ylabel, "trainer run time (s)");
    FILE *f = fopen(path, "w");
    if (!f)
        return output_fail("cannot write %s: %m", path);
    fprintf(f,
            "# cosched experiment: trainer run time per configuration; redraw with: gnuplot plot.gp\n"
            "set style data boxplot\nset style boxplot nooutliers\nset style fill solid 0.3 border -1\n"
            "set boxwidth 0.5\nset grid ytics\nset ylabel '%s'\n"
            "set title 'Training with and without co-tenant noise, per placement%s'\n",
            ylabel, o->design == EXP_DESIGN_BLOCKS ? " (a point per block)" : "");
    write_plot(f, "pngcairo size 960,540 font 'sans,10'", "runs.png", results, n);
    write_plot(f, "svg size 960,540 dynamic font 'sans,10'", "runs.svg", results, n);
    return fclose(f) == 0 ? 0 : output_fail("cannot write %s: %m", path);
}

/* gnuplot SCRIPT in dir; 0 when it drew its files. */
static int run_gnuplot(const char *dir, const char *script)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addchdir_np(&actions, dir);
    char *argv[] = {"gnuplot", (char *)script, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "gnuplot", &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        fprintf(stderr,
                "cosched experiment: no plot: cannot run gnuplot (%s; Debian: apt-get install "
                "gnuplot-nox); the data is in %s/runs.csv\n",
                strerror(rc), dir);
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "cosched experiment: no plot: gnuplot failed on %s/%s (above)\n", dir, script);
        return -1;
    }
    return 0;
}

int exp_plot(const exp_options_t *o, const exp_result_t *results, int n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/runs.dat", o->out_dir);
    if (write_data(path, results, n) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/plot.gp", o->out_dir);
    if (write_script(path, o, results, n) != 0)
        return -1;
    return run_gnuplot(o->out_dir, "plot.gp");
}

/* x, the curve's slowdown % and its band per setting with a band of its own (the pooled fit,
 * experiment_curve.h), with its pairs; the no-noise point is 0 by definition. */
static int write_sweep_data(const char *path, const exp_options_t *o, const exp_result_t *results, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return output_fail("cannot write %s: %m", path);
    exp_curve_t c;
    exp_sweep_curve(results, n, &c);
    fprintf(f, "# %s curve_percent band_low band_high pairs\n",
            o->sweep == EXP_SWEEP_INTENSITY ? "intensity" : "threads");
    fprintf(f, "0 0 0 0 0\n");
    for (int i = 1; i < n && i <= c.nsettings; i++) {
        double x = o->sweep == EXP_SWEEP_INTENSITY ? results[i].config.intensity : results[i].config.noise_ranks;
        if (c.fitted[i])
            fprintf(f, "%g %.4f %.4f %.4f %d\n", x, 100 * c.fit[i], 100 * c.low[i], 100 * c.high[i], c.pairs[i]);
    }
    return fclose(f) == 0 ? 0 : output_fail("cannot write %s: %m", path);
}

int exp_plot_sweep(const exp_options_t *o, const exp_result_t *results, int n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.dat", o->out_dir);
    if (write_sweep_data(path, o, results, n) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/sweep.gp", o->out_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return output_fail("cannot write %s: %m", path);
    fprintf(f,
            "# cosched experiment --sweep: slowdown per noise setting; redraw with: gnuplot sweep.gp\n"
            "set grid\nset key top left\nset xlabel '%s'\nset ylabel 'trainer slowdown (%%)'\n"
            "set title 'Slowdown against noise (%s placement): isotonic curve, 95 %% bootstrap band'\n",
            o->sweep == EXP_SWEEP_INTENSITY ? "noise intensity (duty cycle)" : "noise threads", o->placement);
    const char *terminals[][2] = {{"pngcairo size 960,540 font 'sans,10'", "sweep.png"},
                                  {"svg size 960,540 dynamic font 'sans,10'", "sweep.svg"}};
    for (int t = 0; t < 2; t++)
        fprintf(f,
                "set terminal %s\nset output '%s'\n"
                "plot 'sweep.dat' using 1:2:3:4 with yerrorlines pt 7 lw 2 title 'slowdown (curve)', \\\n"
                "     %g with lines dt 2 lc rgb 'red' title 'budget %.1f %%'\n",
                terminals[t][0], terminals[t][1], 100 * o->budget, 100 * o->budget);
    if (fclose(f) != 0)
        return output_fail("cannot write %s: %m", path);
    return run_gnuplot(o->out_dir, "sweep.gp");
}
