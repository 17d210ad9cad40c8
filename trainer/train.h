/* train: one training run from parsed options: load, build, broadcast, the step loop with
 * allreduce, validation per epoch, checkpoints and the summary. */
#ifndef COSCHED_TRAIN_TRAIN_H
#define COSCHED_TRAIN_TRAIN_H

#include <stddef.h>

#include "options.h"

/* Collective over MPI_COMM_WORLD. Returns 0, or -1 with a message in err. */
int train_run(const train_options *o, char *err, size_t errlen);

#endif
