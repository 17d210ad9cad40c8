/* mpi_glue: MPI start and end for the modes that need ranks (pingpong, patterns with
 * network steps). Other modes never touch MPI, so they run without mpirun. */
#ifndef COSCHED_NOISE_MPI_GLUE_H
#define COSCHED_NOISE_MPI_GLUE_H

#include <stddef.h>

/* Nonzero when this binary was built with MPI. */
int noise_mpi_available(void);

/* MPI_Init and the rank and size of MPI_COMM_WORLD. 0, or -1 with err set. */
int noise_mpi_start(int *argc, char ***argv, int *rank, int *nranks, char *err, size_t errlen);

void noise_mpi_end(void);

#endif
