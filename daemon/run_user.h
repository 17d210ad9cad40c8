/* run_user: who a run runs as and what it starts with — its passwd entry, groups, a clean
 * environment (never the daemon's), its working directory and umask 077. Looked up before the
 * fork (NSS is nothing to call in a forked child), applied in the child before exec. */
#ifndef COSCHED_RUN_USER_H
#define COSCHED_RUN_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

typedef struct run_user {
    uid_t uid;
    gid_t gid;
    bool known; /* has a passwd entry */
    char name[256], home[4096], shell[256];
    gid_t groups[256]; /* its supplementary groups, looked up before the fork */
    int ngroups;
    char cwd[4096];                       /* run start's cwd; "" = home, else / */
    char kept[CONFIG_MAX_KEEP_ENV][2048]; /* "NAME=value" of runs.keep_environment the daemon has */
    int nkept;
} run_user_t;

/* Look up uid and take the variables runs.keep_environment names from the daemon's own
 * environment; cwd may be NULL. */
void run_user_prepare(run_user_t *u, uid_t uid, const config_t *cfg, const char *cwd);

/* In the child (no name service there: groups were looked up by run_user_prepare): groups, gid and uid (when the daemon
 * is root and the run is not), umask 077, the working directory, and an environment of HOME, USER, LOGNAME, SHELL, PATH
 * and the kept variables only. 0, or -1 with why in msg. */
int run_user_enter(const run_user_t *u, char *msg, size_t len);

#endif
