/* throttle_journal: what an attached group holds of a Slurm job — the quota it wrote over
 * Slurm's, the task cgroups it froze, the processes it stopped — recorded in journal_dir/<group>
 * before each hold, so that the daemon that follows one killed with -9 undoes exactly those: a
 * job Slurm suspended meanwhile stays suspended. One line per hold:
 *
 *   quota PATH VALUE      write VALUE back (what Slurm's cpu.max or cpu.cfs_quota_us held)
 *   period PATH VALUE     the same for cpu.cfs_period_us
 *   frozen DIR            write 0 to DIR/cgroup.freeze
 *   stopped PID TICKS     SIGCONT the process, if it is still the one that started at TICKS
 *
 * The spatial knob keeps its own journal, cores@<group>, for every group (throttle_cores.c):
 *
 *   narrowed PID TICKS CPUS       give the process's threads the CPUs it had ("0,1,5")
 *   thread PID TICKS TID CPUS     then one thread that had CPUs of its own, its own */
#include "throttle_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process.h"

enum { JOURNAL_MAX = 1 << 20 };

typedef struct text {
    char *buf;
    size_t len, cap;
    bool failed;
} text_t;

static void add_line(text_t *t, const char *a, const char *b, const char *c)
{
    size_t need = strlen(a) + strlen(b) + strlen(c) + 3;
    if (t->failed)
        return;
    if (t->len + need + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        while (cap < t->len + need + 1)
            cap *= 2;
        char *grown = cap <= JOURNAL_MAX ? realloc(t->buf, cap) : NULL;
        if (!grown) {
            t->failed = true;
            return;
        }
        t->buf = grown;
        t->cap = cap;
    }
    t->len += (size_t)snprintf(t->buf + t->len, t->cap - t->len, "%s %s%s%s\n", a, b, c[0] ? " " : "", c);
}

int throttle_journal_write(const throttle_group_t *g, char *err, size_t errlen)
{
    const throttle_ext_t *x = g->ext;
    char path[THROTTLE_LONG_PATH], value[64];
    if (!x || !x->journal[0])
        return 0;
    text_t t = {0};
    add_line(&t, "#", "coschedd: what it holds of Slurm job cgroup", g->name);
    if (g->borrowed[DIR_CG2] && throttle_fs_path(path, sizeof path, g->dir[DIR_CG2], "cpu.max") == 0)
        add_line(&t, "quota", path, x->saved_quota);
    if (g->borrowed[DIR_CPU1] && throttle_fs_path(path, sizeof path, g->dir[DIR_CPU1], "cpu.cfs_quota_us") == 0) {
        add_line(&t, "quota", path, x->saved_quota);
        if (throttle_fs_path(path, sizeof path, g->dir[DIR_CPU1], "cpu.cfs_period_us") == 0)
            add_line(&t, "period", path, x->saved_period);
    }
    for (size_t i = 0; i < x->frozen.n; i++)
        add_line(&t, "frozen", x->frozen.items[i], "");
    for (size_t i = 0; i < x->stopped.n; i++) {
        char pid[24];
        snprintf(pid, sizeof pid, "%d", (int)x->stopped.v[i]);
        snprintf(value, sizeof value, "%llu", x->stopped_ticks[i]);
        add_line(&t, "stopped", pid, value);
    }
    int rc = -1;
    if (t.failed)
        snprintf(err, errlen, "cannot record what group %s holds: out of memory", g->name);
    else
        rc = throttle_fs_replace(x->journal, t.buf, err, errlen);
    free(t.buf);
    return rc;
}

void throttle_journal_remove(const throttle_group_t *g)
{
    if (g->ext && g->ext->journal[0])
        unlink(g->ext->journal);
}

/* One recorded hold, undone. Files are written only where they still exist: a job that ended
 * took its cgroups with it. */
static void undo_line(char *line)
{
    char err[THROTTLE_DESC_MAX], file[THROTTLE_LONG_PATH];
    char *save = NULL, *what = strtok_r(line, " \n", &save), *where = strtok_r(NULL, " \n", &save);
    char *value = strtok_r(NULL, "\n", &save);
    if (!what || !where)
        return;
    if ((!strcmp(what, "quota") || !strcmp(what, "period")) && value && throttle_fs_exists(where)) {
        char text[80];
        snprintf(text, sizeof text, "%s\n", value);
        throttle_fs_write(where, text, err, sizeof err);
    } else if (!strcmp(what, "frozen") && throttle_fs_path(file, sizeof file, where, "cgroup.freeze") == 0 &&
               throttle_fs_exists(file)) {
        throttle_fs_write(file, "0\n", err, sizeof err);
    } else if (!strcmp(what, "narrowed") && value) {
        char *ticks = strtok_r(value, " ", &save), *cpus = strtok_r(NULL, " \n", &save);
        if (ticks && cpus)
            throttle_cores_undo_line(where, ticks, NULL, cpus);
    } else if (!strcmp(what, "thread") && value) {
        char *ticks = strtok_r(value, " ", &save), *tid = strtok_r(NULL, " ", &save);
        char *cpus = strtok_r(NULL, " \n", &save);
        if (ticks && tid && cpus)
            throttle_cores_undo_line(where, ticks, tid, cpus);
    } else if (!strcmp(what, "stopped") && value) {
        process_ref_t r;
        if (process_ref_open_as(&r, (pid_t)strtol(where, NULL, 10), strtoull(value, NULL, 10))) {
            process_ref_signal(&r, SIGCONT);
            process_ref_close(&r);
        }
    }
}

void throttle_journal_undo(const char *journal_dir)
{
    char path[THROTTLE_LONG_PATH];
    DIR *d = journal_dir && journal_dir[0] ? opendir(journal_dir) : NULL;
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st; /* d_type may be DT_UNKNOWN: ask the file itself */
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            throttle_fs_path(path, sizeof path, journal_dir, e->d_name) < 0)
            continue;
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".new") != 0) {
            FILE *f = fopen(path, "re");
            char line[THROTTLE_LONG_PATH + 128];
            while (f && fgets(line, sizeof line, f))
                undo_line(line);
            if (f)
                fclose(f);
        }
        unlink(path);
    }
    closedir(d);
}
