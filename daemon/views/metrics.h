/* metrics: the daemon's state as Prometheus text exposition (cosched_ prefix, base units,
 * _total counters, labels job / run / numa), for the metrics method, the push and the textfile. */
#ifndef COSCHED_METRICS_H
#define COSCHED_METRICS_H

#include "daemon.h"

/* A new malloc'd string in text exposition format 0.0.4. */
char *metrics_render(const daemon_t *d);

/* Render and hand the text to the pusher and the textfile (called from the 1 s tick every
 * push_interval seconds). */
void metrics_publish(daemon_t *d);

#endif
