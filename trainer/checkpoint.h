/* checkpoint: the state a run needs to continue (parameters, momentum, BN statistics, step),
 * written atomically (temporary file, fsync, rename) and checked on reading. */
#ifndef COSCHED_TRAIN_CHECKPOINT_H
#define COSCHED_TRAIN_CHECKPOINT_H

#include <stddef.h>

#include "net.h"

/* What must match for a resume to continue the same run. */
typedef struct {
    long step;
    int ranks, batch;
    unsigned long long seed;
} train_ckpt_meta;

int train_checkpoint_write(const char *path, const train_net *n, const train_ckpt_meta *meta, char *err, size_t errlen);
/* Read into n (same model) and meta; refuses another model, a short or corrupt file. */
int train_checkpoint_read(const char *path, train_net *n, train_ckpt_meta *meta, char *err, size_t errlen);

#endif
