/* cosched-train: entry point. Parses the command line, runs gen-data without MPI, or
 * initialises MPI and runs the training; errors go to stderr with a non-zero exit. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "data.h"
#include "options.h"
#include "train.h"

static int gen_data(int argc, char **argv)
{
    const char *format = NULL, *out = NULL;
    long ntrain = 200, ntest = 100, seed = 1;
    char err[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (strcmp(a, "--help") == 0) {
            train_usage(stdout);
            return 0;
        } else if (strcmp(a, "--format") == 0 && has) {
            format = argv[++i];
        } else if (strcmp(a, "--samples") == 0 && has) {
            if (cpulist_parse_int(argv[++i], 1, 1000000, &ntrain) != 0)
                goto bad;
        } else if (strcmp(a, "--test-samples") == 0 && has) {
            if (cpulist_parse_int(argv[++i], 1, 1000000, &ntest) != 0)
                goto bad;
        } else if (strcmp(a, "--seed") == 0 && has) {
            if (cpulist_parse_int(argv[++i], 0, 0x7fffffffL, &seed) != 0)
                goto bad;
        } else if (a[0] == '-' || out) {
            fprintf(stderr, "cosched-train gen-data: unexpected argument '%s' (see --help)\n", a);
            return 2;
        } else {
            out = a;
        }
        continue;
    bad:
        fprintf(stderr, "cosched-train gen-data: %s %s: not a valid count\n", a, argv[i]);
        return 2;
    }
    if (!format || !out) {
        fprintf(stderr, "cosched-train gen-data: needs --format FORMAT and OUT_DIR\n");
        return 2;
    }
    if (train_data_generate(format, out, (int)ntrain, (int)ntest, (uint64_t)seed, err, sizeof(err)) != 0) {
        fprintf(stderr, "cosched-train gen-data: %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "gen-data") == 0)
        return gen_data(argc - 1, argv + 1);
    train_options o;
    char err[1024];
    if (train_options_parse(&o, argc, argv, err, sizeof(err)) != 0) {
        fprintf(stderr, "cosched-train: %s\n", err);
        return 2;
    }
    if (o.help) {
        train_usage(stdout);
        return 0;
    }
    if (o.version) {
        printf("cosched-train %s\n", COSCHED_VERSION_STRING);
        return 0;
    }
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rc = train_run(&o, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "cosched-train: rank %d: %s\n", rank, err);
    MPI_Finalize();
    return rc == 0 ? 0 : 1;
}
