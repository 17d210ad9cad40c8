/* slurm_conf: what coschedd needs to know of Slurm's own configuration — its KillWait, the time
 * Slurm gives a job between SIGTERM and SIGKILL, which bounds how long a held co-tenant is let go
 * to act on a signal. Read from slurm.conf itself (no Slurm command, no controller). */
#ifndef COSCHED_SLURM_CONF_H
#define COSCHED_SLURM_CONF_H

#include <stddef.h>

/* Slurm's default KillWait (slurm.conf(5)). */
#define SLURM_CONF_DEFAULT_KILL_WAIT 30

/* The slurm.conf coschedd reads: configured ("" = none), else $SLURM_CONF, else /etc/slurm/slurm.conf. */
const char *slurm_conf_path(const char *configured);

/* KillWait from the file at path and the files it Includes, in seconds; -1 when the file cannot be
 * read (err says why), SLURM_CONF_DEFAULT_KILL_WAIT when it does not set it. */
int slurm_conf_kill_wait(const char *path, char *err, size_t errlen);

/* KillWait as last read, read again when the file changes (its size or modification time). */
typedef struct slurm_conf_cache {
    char path[4096];
    long long mtime_ns, size; /* of the file when it was read; size -1: not read yet */
    int kill_wait;            /* what it said; SLURM_CONF_DEFAULT_KILL_WAIT while it cannot be read */
    char error[320];          /* why it could not be read; "" when it was */
} slurm_conf_cache_t;

/* KillWait from path through cache: the file is read only when it changed since. */
int slurm_conf_cached_kill_wait(slurm_conf_cache_t *cache, const char *path);

#endif
