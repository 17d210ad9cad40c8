/* push: deliver the daemon's Prometheus text to a Pushgateway from its own thread (libcurl, with
 * timeouts and exponential backoff) and to a node_exporter textfile, so a slow or dead collector
 * never delays the control socket. */
#ifndef COSCHED_PUSH_H
#define COSCHED_PUSH_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pusher pusher_t;

/* Start the push thread: PUT {base_url}/metrics/job/coschedd/instance/{instance} every
 * interval seconds with the latest text given to pusher_update. NULL on error (reason in err). */
pusher_t *pusher_start(const char *base_url, const char *instance, double interval, char *err, size_t errlen);

/* Hand the thread a new snapshot (copied; cheap, never blocks on the network). */
void pusher_update(pusher_t *p, const char *text);

/* Counters for the daemon's own metrics: successful pushes, failures, seconds of current backoff. */
void pusher_stats(pusher_t *p, unsigned long *ok, unsigned long *failed, double *backoff);

/* Push once more (best effort, bounded by the timeout), stop and free the thread. */
void pusher_stop(pusher_t *p);

/* Write text to path atomically (temp file in the same directory, fsync, rename): readable by all,
 * or, private (private_jobs: hide: it names every job), by its directory's group alone. */
int push_textfile_write(const char *path, const char *text, bool private, char *err, size_t errlen);

#endif
