/* cosched-noise: STREAM, IOR-style, ping-pong, busy and idle noise, alone or played as
 * NOIGENA-style YAML patterns; JSON lines on stdout for the daemon and for people. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_glue.h"
#include "noise_clock.h"
#include "opts.h"
#include "out.h"
#include "pattern.h"
#include "pattern_run.h"
#include "phase_line.h"
#include "place.h"
#include "run.h"
#include "run_output.h"
#include "stop.h"

#ifndef NOISE_VERSION
#define NOISE_VERSION "unknown"
#endif

static void usage(FILE *fp)
{
    fprintf(fp, "usage: cosched-noise MODE [options]\n"
                "       cosched-noise pattern --config FILE NAME [options]\n"
                "       cosched-noise MODE --help     (settings of one mode)\n\n"
                "modes:\n"
                "  stream     memory noise: STREAM copy/scale/add/triad, one thread per CPU\n"
                "  ior        I/O noise: IOR-style POSIX writes and reads in --dir\n"
                "  pingpong   network noise: MPI ping-pong between rank pairs (under mpirun)\n"
                "  busy       spin every CPU\n"
                "  idle       sleep\n"
                "  pattern    play a named pattern from a YAML file\n\n"
                "Without --duration a mode runs as a measured benchmark; with it, as noise.\n"
                "Output: JSON lines (docs/noise-output.md). SIGTERM/SIGINT stop it cleanly (exit 0).\n\n"
                "common options:\n");
    noise_opts_usage(fp, -1);
}

static void mode_usage(FILE *fp, const char *word, int mode)
{
    if (mode < 0) {
        fprintf(fp, "usage: cosched-noise pattern --config FILE NAME [common options]\n"
                    "  Plays pattern NAME. Command-line settings are the base for every step; the\n"
                    "  step's config set overrides them. --duration caps the whole pattern.\n"
                    "  Without NAME, lists the patterns in FILE.\n\ncommon options:\n");
        noise_opts_usage(fp, -1);
        return;
    }
    fprintf(fp, "usage: cosched-noise %s [options]\n\n%s options:\n", word, word);
    noise_opts_usage(fp, mode);
    fprintf(fp, "\ncommon options:\n");
    noise_opts_usage(fp, -1);
}

static json_t *start_line(const struct noise_opts *o, const char *pattern, struct noise_ctx *ctx)
{
    json_t *l = json_object();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_object_set_new(l, RUNOUT_EVENT, json_string("start"));
    json_object_set_new(l, RUNOUT_MODE, json_string(pattern ? "pattern" : noise_mode_name(o->mode)));
    json_object_set_new(l, "schema", json_integer(NOISE_SCHEMA_VERSION));
    json_object_set_new(l, "tool", json_string("cosched-noise"));
    json_object_set_new(l, "version", json_string(NOISE_VERSION));
    if (pattern)
        json_object_set_new(l, "pattern", json_string(pattern));
    else
        json_object_set_new(l, "config", noise_opts_json(o));
    json_object_set_new(l, RUNOUT_START, json_real(noise_wall()));
    json_object_set_new(l, "pid", json_integer(getpid()));
    json_object_set_new(l, "host", json_string(host));
    json_object_set_new(l, "nranks", json_integer(ctx->nranks));
    json_t *where = noise_place_json(ctx->place);
    json_object_set(l, "cpus", json_object_get(where, "cpus"));
    json_object_set(l, "mems", json_object_get(where, "mems"));
    json_decref(where);
    return l;
}

static json_t *summary_line(const struct noise_opts *o, const char *pattern, struct noise_ctx *ctx, double duration,
                            const char *status, const char *error)
{
    json_t *l = json_object();
    json_object_set_new(l, RUNOUT_EVENT, json_string(RUNOUT_EVENT_SUMMARY));
    json_object_set_new(l, RUNOUT_MODE, json_string(pattern ? "pattern" : noise_mode_name(o->mode)));
    if (pattern)
        json_object_set_new(l, "pattern", json_string(pattern));
    json_object_set_new(l, "status", json_string(status));
    int sig = noise_stop_signal();
    json_object_set_new(l, "signal",
                        sig == SIGTERM  ? json_string("SIGTERM")
                        : sig == SIGINT ? json_string("SIGINT")
                                        : json_null());
    json_object_set_new(l, "error", error ? json_string(error) : json_null());
    /* From the signal to this line: the promise is under 100 ms (plus an fsync in flight). */
    if (noise_stop_time() > 0)
        json_object_set_new(l, "stop_latency_ms", json_real((noise_now() - noise_stop_time()) * 1e3));
    json_object_set_new(l, "phases", json_integer(ctx->phases));
    json_object_set_new(l, RUNOUT_DURATION, json_real(duration));
    json_object_set_new(l, RUNOUT_BYTES, json_real(ctx->bytes));
    json_object_set_new(l, "ops", json_real(ctx->ops));
    json_object_set_new(l, RUNOUT_RATE_MBS, json_real(duration > 0 ? ctx->bytes / duration / 1e6 : 0));
    json_t *where = noise_place_json(ctx->place);
    json_object_update(l, where);
    json_decref(where);
    return l;
}

int main(int argc, char **argv)
{
    char err[1024] = "";
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *word = argv[1];
    if (strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0 || strcmp(word, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(word, "--version") == 0) {
        printf("cosched-noise %s\n", NOISE_VERSION);
        return 0;
    }
    struct noise_opts o;
    noise_opts_defaults(&o);
    int is_pattern = strcmp(word, "pattern") == 0;
    enum noise_mode mode = NOISE_MODE_BUSY;
    if (!is_pattern && noise_mode_parse(word, &mode) != 0) {
        fprintf(stderr, "cosched-noise: unknown mode '%s' (stream, ior, pingpong, busy, idle, pattern; see --help)\n",
                word);
        return 2;
    }
    o.mode = mode;
    const char *pos[1] = {NULL};
    int help = 0;
    int npos = noise_opts_parse_argv(&o, argc, argv, 2, pos, is_pattern ? 1 : 0, &help, err, sizeof err);
    if (help) {
        mode_usage(stdout, word, is_pattern ? -1 : (int)mode);
        return 0;
    }
    if (npos < 0) {
        fprintf(stderr, "cosched-noise %s: %s\n", word, err);
        return 2;
    }

    /* Everything that can be refused is refused before anything runs. */
    struct noise_patterns patterns = {0};
    const struct noise_pattern *pat = NULL;
    int need_mpi = o.mode == NOISE_MODE_PINGPONG;
    if (is_pattern) {
        if (!o.config[0]) {
            fprintf(stderr, "cosched-noise pattern: --config FILE is required\n");
            return 2;
        }
        if (noise_patterns_load(&patterns, o.config, err, sizeof err) != 0) {
            fprintf(stderr, "cosched-noise pattern: %s\n", err);
            return 1;
        }
        if (npos == 0) {
            for (size_t i = 0; i < patterns.npatterns; i++)
                printf("%s\n", patterns.patterns[i].name);
            noise_patterns_free(&patterns);
            return 0;
        }
        pat = noise_patterns_find(&patterns, pos[0]);
        if (!pat) {
            fprintf(stderr, "cosched-noise pattern: no pattern '%s' in %s (it has:", pos[0], o.config);
            for (size_t i = 0; i < patterns.npatterns; i++)
                fprintf(stderr, " %s", patterns.patterns[i].name);
            fprintf(stderr, ")\n");
            noise_patterns_free(&patterns);
            return 1;
        }
        need_mpi = noise_node_uses(&pat->root, NOISE_MODE_PINGPONG);
    } else if (noise_opts_check(&o, err, sizeof err) != 0) {
        fprintf(stderr, "cosched-noise %s: %s\n", word, err);
        return 2;
    }

    struct noise_ctx ctx = {.rank = 0, .nranks = 1, .step = -1};
    if (need_mpi && noise_mpi_start(&argc, &argv, &ctx.rank, &ctx.nranks, err, sizeof err) != 0) {
        fprintf(stderr, "cosched-noise %s: %s\n", word, err);
        noise_patterns_free(&patterns);
        return 1;
    }
    /* After MPI_Init, so our handlers are the ones in place. */
    noise_stop_install();

    struct noise_place place;
    struct noise_out out = {0};
    int rc = 1;
    if (noise_place_init(&place, o.cpus, o.mems, err, sizeof err) != 0) {
        fprintf(stderr, "cosched-noise %s: %s\n", word, err);
        noise_place_free(&place);
        goto end;
    }
    char path[PATH_MAX + 32];
    /* Ranks must not write over each other's --output file. */
    snprintf(path, sizeof path, ctx.nranks > 1 && o.output[0] ? "%s.rank%d" : "%s", o.output, ctx.rank);
    if (noise_out_open(&out, path, ctx.nranks > 1 ? ctx.rank : -1, err, sizeof err) != 0) {
        fprintf(stderr, "cosched-noise %s: %s\n", word, err);
        noise_place_free(&place);
        goto end;
    }
    ctx.out = &out;
    ctx.place = &place;
    noise_out_emit(&out, start_line(&o, pat ? pat->name : NULL, &ctx));
    double t0 = noise_now();
    int failed = pat ? noise_pattern_run(&patterns, pat, &o, &ctx, err, sizeof err)
                     : noise_run_mode(&o, &ctx, err, sizeof err);
    if (failed)
        fprintf(stderr, "cosched-noise %s: %s\n", word, err);
    const char *status = failed ? "error" : noise_stop_requested() ? "stopped" : "done";
    noise_out_emit(&out, summary_line(&o, pat ? pat->name : NULL, &ctx, noise_now() - t0, status, failed ? err : NULL));
    noise_out_close(&out);
    noise_place_free(&place);
    rc = failed ? 1 : 0;
end:
    if (need_mpi)
        noise_mpi_end();
    noise_patterns_free(&patterns);
    return rc;
}
