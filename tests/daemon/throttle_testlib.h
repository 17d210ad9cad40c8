/* throttle_testlib: what the throttle tests share — fake trees in a temp dir, busy children that
 * count their progress in shared memory, bounded polling, and cleanup that leaves nothing behind. */
#ifndef COSCHED_THROTTLE_TESTLIB_H
#define COSCHED_THROTTLE_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process.h" /* process_state: a process's state letter from /proc */

#include "throttle.h"

/* A child in its own session (as coschedd's runs are) that counts as fast as it can; with a
 * grandchild in its process group that counts too. */
typedef struct tt_child {
    pid_t pid, grandchild;
    volatile unsigned long *counter, *grand_counter; /* shared with them */
} tt_child_t;

/* A config for this test process alone: subtree "cosched-test-<pid>", roots as given. */
void tt_config(throttle_config_t *cfg, unsigned knobs_allowed);

/* mkdtemp under /tmp; tt_rm_rf removes such a tree (never call it on /sys). */
void tt_tmpdir(char *out, size_t len);
void tt_rm_rf(const char *dir);
/* Remove a cgroup directory and the cgroups under it (rmdir only: cgroupfs files go with them). */
void tt_rmdir_tree(const char *dir);

/* Files: write (creating the directories on the way), read (trailing newline cut), line test. */
void tt_write(const char *dir, const char *file, const char *text);
const char *tt_read(const char *path, char *buf, size_t len);
bool tt_file_has_id(const char *path, pid_t id);

/* Fork a busy child; with g, it joins g through join_self first (the test fails if it cannot).
 * tt_family_start adds the grandchild (this process becomes a child subreaper to reap it).
 * tt_child_end kills and reaps them all (a no-op for a child not started). */
tt_child_t tt_child_start(const throttle_group_t *g);
tt_child_t tt_family_start(const throttle_group_t *g);
/* A busy child that catches sig (a checkpoint signal, say) and goes on: grand_counter counts the
 * signals it caught. */
tt_child_t tt_child_start_catching(int sig);
void tt_child_end(tt_child_t *c);
/* Whether a counter moves within a bounded wait (a few seconds: never a speed assertion). */
bool tt_progresses(volatile unsigned long *counter);
/* Whether a counter stays put over a short wait (only meaningful once it is frozen/stopped). */
bool tt_still(volatile unsigned long *counter);

/* Poll cond up to a few seconds (in 5 ms steps); true as soon as it holds. */
bool tt_poll(bool (*cond)(const void *arg), const void *arg);

#endif
