/* state: jobs and runs kept in state_dir/state.json across restarts, in a schema of its own
 * (docs/coschedd.md, "State file"), written atomically; version 1 files are still read. */
#ifndef COSCHED_STATE_H
#define COSCHED_STATE_H

#include "daemon.h"

#define STATE_VERSION 2

/* Persist jobs and runs now; logs and returns -1 on failure (the state in memory is kept). */
int state_save(daemon_t *d);

/* The loop's one persistence path: save when something changed since the last save. */
void state_save_if_dirty(daemon_t *d);

/* Restore from state_dir/state.json; an unusable file is moved aside and logged. */
int state_restore(daemon_t *d);

/* Forget every job and run in memory (the file is not touched). */
void state_clear(daemon_t *d);

#endif
