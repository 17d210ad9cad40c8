/* scontrol_read: what `scontrol show config`, `scontrol -o show partition` and `scontrol -o show
 * node` print, as records of keys and values — read live or from files saved earlier. */
#ifndef COSCHED_SCONTROL_READ_H
#define COSCHED_SCONTROL_READ_H

#include <stddef.h>
#include <stdio.h>

enum { SCONTROL_OUTPUTS = 3 }; /* config, partitions, nodes */

/* One partition, one node, or the whole configuration: its keys and values in order. */
typedef struct scontrol_record {
    char **keys, **values;
    int n;
} scontrol_record_t;

typedef struct scontrol_view {
    scontrol_record_t config;
    scontrol_record_t *partitions;
    int npartitions;
    scontrol_record_t *nodes;
    int nnodes;
} scontrol_view_t;

/* The three outputs of `scontrol show config`, `scontrol -o show partition` and `scontrol -o show
 * node`: from DIR's files config, partitions and nodes when dir is set, else by running scontrol.
 * 0, or -1 with the file (or command) and line that could not be read in err. */
int scontrol_view_read(const char *dir, scontrol_view_t *view, char *err, size_t errlen);
/* The same from three open streams, in that order, named in messages by names. */
int scontrol_view_parse(FILE *const files[SCONTROL_OUTPUTS], const char *const names[SCONTROL_OUTPUTS],
                        scontrol_view_t *view, char *err, size_t errlen);
void scontrol_view_free(scontrol_view_t *view);

/* The value of key in the record (Slurm's spelling, case ignored), or NULL. */
const char *scontrol_get(const scontrol_record_t *r, const char *key);

/* The record whose key has this value (PartitionName=gpu), or NULL. */
const scontrol_record_t *scontrol_find(const scontrol_record_t *records, int n, const char *key, const char *value);

#endif
