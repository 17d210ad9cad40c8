/* stats_plot: `cosched stats --plot FILE.png` — a trainer's recent step times against its
 * baseline and budget, and each co-tenant's share, drawn by gnuplot from the daemon's history. */
#ifndef COSCHED_STATS_PLOT_H
#define COSCHED_STATS_PLOT_H

#include "rpc.h"

/* Draw job's history (NULL: the only trainer) into png; an exit status. */
int stats_plot(const client_opts_t *o, const char *job, const char *png);

#endif
