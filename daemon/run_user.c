/* run_user: a run starts the way a login of its user would — its groups, its home, its shell,
 * a fixed default PATH — plus only what an operator lets through from the daemon. */
#include "run_user.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* login.defs' defaults, without the games directories Debian adds */
#define ROOT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define USER_PATH "/usr/local/bin:/usr/bin:/bin"

void run_user_prepare(run_user_t *u, uid_t uid, const config_t *cfg, const char *cwd)
{
    memset(u, 0, sizeof *u);
    u->uid = uid;
    struct passwd *pw = getpwuid(uid);
    u->known = pw != NULL;
    u->gid = pw ? pw->pw_gid : (gid_t)uid;
    if (pw) {
        snprintf(u->name, sizeof u->name, "%s", pw->pw_name);
        snprintf(u->home, sizeof u->home, "%s", pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/");
        snprintf(u->shell, sizeof u->shell, "%s", pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh");
    } else { /* a uid without an entry (a container's): still a user, not root */
        snprintf(u->name, sizeof u->name, "%u", (unsigned)uid);
        snprintf(u->home, sizeof u->home, "/");
        snprintf(u->shell, sizeof u->shell, "/bin/sh");
    }
    if (pw) {
        u->ngroups = (int)(sizeof u->groups / sizeof u->groups[0]);
        if (getgrouplist(pw->pw_name, u->gid, u->groups, &u->ngroups) < 0)
            u->ngroups = (int)(sizeof u->groups / sizeof u->groups[0]); /* the first 256 of more */
    } else {
        u->ngroups = 0; /* a uid without an entry has no groups to look up */
    }
    snprintf(u->cwd, sizeof u->cwd, "%s", cwd ? cwd : "");
    for (int i = 0; i < cfg->n_run_keep_env; i++) {
        const char *value = getenv(cfg->run_keep_env[i]);
        if (value && snprintf(u->kept[u->nkept], sizeof u->kept[0], "%s=%s", cfg->run_keep_env[i], value) <
                         (int)sizeof u->kept[0])
            u->nkept++;
    }
}

static int become(const run_user_t *u, char *msg, size_t len)
{
    if (geteuid() != 0 || u->uid == 0)
        return 0;
    if (setgroups((size_t)u->ngroups, u->groups) < 0 || setgid(u->gid) < 0 || setuid(u->uid) < 0) {
        snprintf(msg, len, "cannot switch to uid %u: %s", (unsigned)u->uid, strerror(errno));
        return -1;
    }
    return 0;
}

/* Where the run starts: the cwd asked for (an error if it cannot be entered), else the home
 * directory, else / (nobody's home, /nonexistent, is not there). As the user: its permissions. */
static int enter_directory(const run_user_t *u, char *msg, size_t len)
{
    if (u->cwd[0]) {
        if (chdir(u->cwd) == 0)
            return 0;
        snprintf(msg, len, "cannot change to the working directory %s as uid %u: %s", u->cwd, (unsigned)u->uid,
                 strerror(errno));
        return -1;
    }
    if (chdir(u->home) == 0 || chdir("/") == 0)
        return 0;
    snprintf(msg, len, "cannot change to / : %s", strerror(errno));
    return -1;
}

int run_user_enter(const run_user_t *u, char *msg, size_t len)
{
    if (become(u, msg, len) < 0)
        return -1;
    umask(077);
    if (enter_directory(u, msg, len) < 0)
        return -1;
    if (clearenv() != 0) {
        snprintf(msg, len, "cannot clear the environment");
        return -1;
    }
    setenv("HOME", u->home, 1);
    setenv("USER", u->name, 1);
    setenv("LOGNAME", u->name, 1);
    setenv("SHELL", u->shell, 1);
    setenv("PATH", u->uid == 0 ? ROOT_PATH : USER_PATH, 1);
    for (int i = 0; i < u->nkept; i++)
        putenv((char *)u->kept[i]);
    return 0;
}
