/* cosched-train: entry point. Parses the command line, runs gen-data without MPI, or
 * initialises MPI and runs the training; errors go to stderr with a non-zero exit. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "options.h"
#include "train.h"

static int gen_data(int argc, char **argv)
{
    train_gen_data_options o;
    char err[512];
    if (train_gen_data_parse(&o, argc, argv, err, sizeof(err)) != 0) {
        fprintf(stderr, "cosched-train gen-data: %s\n", err);
        return 2;
    }
    if (o.help) {
        train_usage(stdout);
        return 0;
    }
    if (train_data_generate(o.format, o.out_dir, (int)o.samples, (int)o.test_samples, o.seed, err, sizeof(err)) != 0) {
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
