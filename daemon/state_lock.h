/* state_lock: one coschedd per state directory. A second daemon started on the same directory
 * (with another socket, say) would overwrite the first one's state; it is refused instead. */
#ifndef COSCHED_STATE_LOCK_H
#define COSCHED_STATE_LOCK_H

#include <stddef.h>

/* Lock dir/coschedd.lock for the life of the process (and of a child it forks into the
 * background: the lock goes with the open file). Returns the descriptor, or -1 with a
 * message naming the daemon that holds it. */
int state_lock(const char *dir, char *err, size_t errlen);

/* Write this process's pid into the lock file, for that message; called once detached. */
void state_lock_record_pid(int fd);

#endif
