/* throttle_cores: the spatial knob — a multi-threaded co-tenant held on fewer of its cores, each
 * at full speed, rather than on all of them slowed down by time slicing. Every thread of each of
 * the group's processes gets the first ceil(share x n) of the n CPUs its threads had together
 * (sched_setaffinity; threads and children born later inherit it), and each thread its own CPUs
 * back after. Within the CPUs a process had, so never outside what Slurm allowed it; another
 * user's processes need CAP_SYS_NICE.
 *
 * Not for the ranks of a parallel job: a bulk-synchronous job whose ranks were squeezed onto
 * shared cores unevenly would run at the pace of its slowest rank. A process whose environment
 * says it is one of several ranks (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS above 1)
 * keeps its group on time slicing, which holds every rank alike; so does a group with no process
 * of two threads or more on two CPUs or more, which fewer cores would not slow at all. */
#include "throttle_internal.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process.h"

enum { ENVIRON_MAX = 256 * 1024 };

/* fn(tid, arg) for every thread of pid; -1 with the reason when the process is gone or fn fails
 * for one of them (EPERM: another user's threads need CAP_SYS_NICE). A thread that ended meanwhile
 * is no failure. */
static int each_thread(pid_t pid, int (*fn)(pid_t tid, void *arg), void *arg, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) {
        snprintf(err, errlen, "process %d is gone", (int)pid);
        return -1;
    }
    int rc = 0, saved = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (e->d_name[0] == '.' || *end || tid <= 0)
            continue;
        if (fn((pid_t)tid, arg) < 0 && errno != ESRCH) {
            saved = errno;
            rc = -1;
        }
    }
    closedir(d);
    if (rc < 0)
        snprintf(err, errlen, "cannot set the CPUs of process %d's threads: %s%s", (int)pid, strerror(saved),
                 saved == EPERM ? " (another user's process needs CAP_SYS_NICE)" : "");
    return rc;
}

static int set_mask(pid_t tid, void *mask)
{
    return sched_setaffinity(tid, sizeof(cpu_set_t), mask);
}

static int set_threads(pid_t pid, const cpu_set_t *mask, char *err, size_t errlen)
{
    return each_thread(pid, set_mask, (void *)mask, err, errlen);
}

/* Each thread its own CPUs again; one born since, what the process had. */
static int give_back_one(pid_t tid, void *arg)
{
    const throttle_narrowed_t *n = arg;
    for (size_t i = 0; i < n->nthreads; i++)
        if (n->threads[i].tid == tid)
            return sched_setaffinity(tid, sizeof n->threads[i].cpus, &n->threads[i].cpus);
    return sched_setaffinity(tid, sizeof n->full, &n->full);
}

static void give_back(throttle_narrowed_t *n)
{
    char err[THROTTLE_DESC_MAX];
    if (process_same(n->pid, n->ticks))
        each_thread(n->pid, give_back_one, n, err, sizeof err);
}

/* Each thread's CPUs, before anything is narrowed. */
static int note_thread(pid_t tid, void *arg)
{
    throttle_narrowed_t *n = arg;
    cpu_set_t cpus;
    if (sched_getaffinity(tid, sizeof cpus, &cpus) < 0)
        return -1;
    throttle_thread_cpus_t *v = realloc(n->threads, (n->nthreads + 1) * sizeof *v);
    if (!v)
        return -1;
    n->threads = v;
    n->threads[n->nthreads++] = (throttle_thread_cpus_t){tid, cpus};
    CPU_OR(&n->full, &n->full, &cpus);
    return 0;
}

/* A number from /proc/PID/status ("Threads", "PPid"); 0 when it cannot be read. */
static long status_number(pid_t pid, const char *key)
{
    char status[4096], field[32];
    snprintf(field, sizeof field, "\n%s:", key);
    const char *t = process_status(pid, status, sizeof status) > 0 ? strstr(status, field) : NULL;
    return t ? strtol(t + strlen(field), NULL, 10) : 0;
}

/* Whether pid's environment names it one of several ranks; what said so in why. */
static bool parallel_rank(pid_t pid, char *why, size_t len)
{
    static const char *const keys[] = {"OMPI_COMM_WORLD_SIZE=", "PMI_SIZE=", "SLURM_STEP_NUM_TASKS="};
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    char *env = malloc(ENVIRON_MAX);
    ssize_t n = env ? throttle_fs_read(path, env, ENVIRON_MAX) : -1;
    bool found = false;
    for (ssize_t at = 0; n > 0 && at < n && !found; at += (ssize_t)strlen(env + at) + 1)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (strncmp(env + at, keys[k], strlen(keys[k])) == 0 && atol(env + at + strlen(keys[k])) > 1) {
                snprintf(why, len, "process %d is one of the ranks of a parallel job (%.60s)", (int)pid, env + at);
                found = true;
            }
    free(env);
    return found;
}

static throttle_narrowed_t *find(throttle_group_t *g, pid_t pid)
{
    for (size_t i = 0; i < g->nnarrowed; i++)
        if (g->narrowed[i].pid == pid)
            return &g->narrowed[i];
    return NULL;
}

/* Whether the group is one to narrow; why not in g->cores_note. */
static bool narrowable(throttle_group_t *g, const throttle_pids_t *pids)
{
    bool threaded = false;
    for (size_t i = 0; i < pids->n; i++) {
        if (parallel_rank(pids->v[i], g->cores_note, sizeof g->cores_note))
            return false;
        /* What it had before it was narrowed counts, not the CPUs it has now. */
        const throttle_narrowed_t *known = find(g, pids->v[i]);
        cpu_set_t mask;
        if (known)
            mask = known->full;
        if (status_number(pids->v[i], "Threads") >= 2 &&
            (known || sched_getaffinity(pids->v[i], sizeof mask, &mask) == 0) && CPU_COUNT(&mask) >= 2)
            threaded = true;
    }
    if (!threaded)
        snprintf(g->cores_note, sizeof g->cores_note,
                 "no process with two threads or more on two CPUs or more: fewer cores would not hold it");
    return threaded;
}

/* Remember what pid and its threads have before it is narrowed the first time. */
static throttle_narrowed_t *remember(throttle_group_t *g, pid_t pid)
{
    throttle_narrowed_t *n = find(g, pid);
    if (n)
        return n;
    char err[THROTTLE_DESC_MAX];
    throttle_narrowed_t fresh = {.pid = pid, .ticks = process_start_ticks(pid)};
    CPU_ZERO(&fresh.full);
    if (fresh.ticks == 0 || each_thread(pid, note_thread, &fresh, err, sizeof err) < 0 || CPU_COUNT(&fresh.full) == 0) {
        free(fresh.threads);
        return NULL;
    }
    if (g->nnarrowed == g->capnarrowed) {
        size_t cap = g->capnarrowed ? 2 * g->capnarrowed : 8;
        throttle_narrowed_t *v = realloc(g->narrowed, cap * sizeof *v);
        if (!v) {
            free(fresh.threads);
            return NULL;
        }
        g->narrowed = v;
        g->capnarrowed = cap;
    }
    n = &g->narrowed[g->nnarrowed++];
    *n = fresh;
    return n;
}

/* "0,1,5": the CPUs of a mask. */
static void cpu_list(const cpu_set_t *mask, char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && at + 8 < len; c++)
        if (CPU_ISSET(c, mask))
            at += (size_t)snprintf(out + at, len - at, "%s%d", at ? "," : "", c);
}

/* The record of what is narrowed, written before it is: a daemon killed with -9 leaves it for the
 * next one's sweep. */
static int write_journal(throttle_group_t *g, char *err, size_t errlen)
{
    if (!g->cores_journal[0])
        return 0;
    if (g->nnarrowed == 0) {
        unlink(g->cores_journal);
        return 0;
    }
    size_t lines = 0;
    for (size_t i = 0; i < g->nnarrowed; i++)
        lines += 1 + g->narrowed[i].nthreads;
    size_t cap = 128 + lines * (64 + CPU_SETSIZE * 5);
    char *text = malloc(cap), cpus[CPU_SETSIZE * 5];
    if (!text) {
        snprintf(err, errlen, "cannot record what group %s narrows: out of memory", g->name);
        return -1;
    }
    size_t at = (size_t)snprintf(text, cap, "# coschedd: the CPUs group %s's processes had\n", g->name);
    for (size_t i = 0; i < g->nnarrowed; i++) {
        cpu_list(&g->narrowed[i].full, cpus, sizeof cpus);
        const throttle_narrowed_t *n = &g->narrowed[i];
        at += (size_t)snprintf(text + at, cap - at, "narrowed %d %llu %s\n", (int)n->pid, n->ticks, cpus);
        for (size_t k = 0; k < n->nthreads; k++)
            if (!CPU_EQUAL(&n->threads[k].cpus, &n->full)) { /* pinned one by one */
                cpu_list(&n->threads[k].cpus, cpus, sizeof cpus);
                at += (size_t)snprintf(text + at, cap - at, "thread %d %llu %d %s\n", (int)n->pid, n->ticks,
                                       (int)n->threads[k].tid, cpus);
            }
    }
    int rc = throttle_fs_replace(g->cores_journal, text, err, errlen);
    free(text);
    return rc;
}

/* The first ceil(share x n) of full's n CPUs, at least one; their fraction of n in *fraction. */
static void narrowed_mask(const cpu_set_t *full, double share, cpu_set_t *out, double *fraction)
{
    int n = CPU_COUNT(full), keep = (int)ceil(share * n - 1e-9), kept = 0;
    if (keep < 1)
        keep = 1;
    CPU_ZERO(out);
    for (int c = 0; c < CPU_SETSIZE && kept < keep; c++)
        if (CPU_ISSET(c, full)) {
            CPU_SET(c, out);
            kept++;
        }
    *fraction = n > 0 ? (double)kept / n : 1;
}

/* The union of what the narrowed processes had: given back to a process born narrowed that was
 * never recorded itself. */
static void union_of_full(const throttle_group_t *g, cpu_set_t *out)
{
    CPU_ZERO(out);
    for (size_t i = 0; i < g->nnarrowed; i++)
        CPU_OR(out, out, &g->narrowed[i].full);
}

/* Records of processes that ended are dropped (their pids may come back as someone else). */
static void drop_ended(throttle_group_t *g)
{
    size_t kept = 0;
    for (size_t i = 0; i < g->nnarrowed; i++)
        if (process_same(g->narrowed[i].pid, g->narrowed[i].ticks))
            g->narrowed[kept++] = g->narrowed[i];
        else
            free(g->narrowed[i].threads);
    g->nnarrowed = kept;
}

static int narrow(throttle_group_t *g, double share, double *kept, char *err, size_t errlen)
{
    throttle_pids_t pids = {0};
    g->ops->pids(g, &pids); /* its kind knows where they are */
    if (!narrowable(g, &pids)) {
        throttle_pids_free(&pids);
        throttle_cores_restore(g);
        *kept = 1;
        return 0;
    }
    g->cores_note[0] = '\0';
    drop_ended(g);
    for (size_t i = 0; i < pids.n; i++) {
        /* A child of a narrowed process inherited its narrowed CPUs: it gets its parent's back. */
        bool known = find(g, pids.v[i]) != NULL;
        throttle_narrowed_t *n = remember(g, pids.v[i]);
        const throttle_narrowed_t *parent = known || !n ? NULL : find(g, (pid_t)status_number(pids.v[i], "PPid"));
        if (parent) { /* its threads all get what its parent had */
            n->full = parent->full;
            n->nthreads = 0;
        }
    }
    throttle_pids_free(&pids);
    if (write_journal(g, err, errlen) < 0)
        return -1;
    double most = 0;
    char why[THROTTLE_DESC_MAX] = "";
    for (size_t i = 0; i < g->nnarrowed; i++) {
        cpu_set_t mask;
        double fraction;
        narrowed_mask(&g->narrowed[i].full, share, &mask, &fraction);
        if (set_threads(g->narrowed[i].pid, &mask, why, sizeof why) < 0 &&
            process_same(g->narrowed[i].pid, g->narrowed[i].ticks)) {
            /* Refused (no CAP_SYS_NICE for another user's threads): time slicing holds it. */
            throttle_cores_restore(g);
            snprintf(g->cores_note, sizeof g->cores_note, "%.150s", why);
            *kept = 1;
            return 0;
        }
        most = fmax(most, fraction);
    }
    g->cores_kept = *kept = most > 0 ? most : 1;
    return 0;
}

void throttle_cores_init(throttle_group_t *g)
{
    g->cores_kept = 1;
    char file[THROTTLE_NAME_MAX + 8];
    snprintf(file, sizeof file, "cores@%s", g->name); /* '@' is in no group's name */
    if (g->t->cfg.journal_dir[0])
        throttle_fs_path(g->cores_journal, sizeof g->cores_journal, g->t->cfg.journal_dir, file);
}

int throttle_cores_set(throttle_group_t *g, double share, double *kept, char *err, size_t errlen)
{
    *kept = 1;
    if (!throttle_has(g->t, KNOB_CORES) || share >= 1) {
        throttle_cores_restore(g);
        g->cores_note[0] = '\0';
        return 0;
    }
    return narrow(g, share, kept, err, errlen);
}

void throttle_cores_refresh(throttle_group_t *g)
{
    char err[THROTTLE_DESC_MAX];
    double kept;
    if (g->cores_kept < 1)
        narrow(g, g->share, &kept, err, sizeof err);
}

void throttle_cores_restore(throttle_group_t *g)
{
    char err[THROTTLE_DESC_MAX];
    if (g->nnarrowed > 0) {
        throttle_pids_t pids = {0};
        cpu_set_t inherited;
        g->ops->pids(g, &pids);
        union_of_full(g, &inherited);
        for (size_t i = 0; i < pids.n; i++)
            if (!find(g, pids.v[i]))
                set_threads(pids.v[i], &inherited, err, sizeof err);
        throttle_pids_free(&pids);
        for (size_t i = 0; i < g->nnarrowed; i++) {
            give_back(&g->narrowed[i]);
            free(g->narrowed[i].threads);
        }
    }
    g->nnarrowed = 0;
    g->cores_kept = 1;
    if (g->cores_journal[0])
        unlink(g->cores_journal);
}

void throttle_cores_forget(throttle_group_t *g, pid_t pid)
{
    char err[THROTTLE_DESC_MAX];
    throttle_narrowed_t *n = find(g, pid);
    if (!n)
        return;
    give_back(n);
    free(n->threads);
    *n = g->narrowed[--g->nnarrowed];
    write_journal(g, err, sizeof err);
}

/* A journal line of a daemon that died: the process, if it is still the one recorded, gets its
 * CPUs back — all its threads (tid NULL), or one thread pinned on its own. */
void throttle_cores_undo_line(const char *pid, const char *ticks, const char *tid, const char *cpus)
{
    char err[THROTTLE_DESC_MAX], *end;
    cpu_set_t full;
    CPU_ZERO(&full);
    for (const char *p = cpus; *p && *p != '\n';) {
        long c = strtol(p, &end, 10);
        if (end == p || c < 0 || c >= CPU_SETSIZE || (*end && *end != ',' && *end != '\n'))
            return;
        CPU_SET((int)c, &full);
        p = *end == ',' ? end + 1 : end;
    }
    pid_t p = (pid_t)strtol(pid, NULL, 10), t = tid ? (pid_t)strtol(tid, NULL, 10) : 0;
    char task[64];
    snprintf(task, sizeof task, "/proc/%d/task/%d", (int)p, (int)t);
    if (CPU_COUNT(&full) == 0 || p <= 0 || !process_same(p, strtoull(ticks, NULL, 10)))
        return;
    if (!tid)
        set_threads(p, &full, err, sizeof err);
    else if (t > 0 && throttle_fs_exists(task)) /* still a thread of that process */
        sched_setaffinity(t, sizeof full, &full);
}

double throttle_group_cores_kept(const throttle_group_t *g)
{
    return g->cores_kept;
}

const char *throttle_group_cores_note(const throttle_group_t *g)
{
    return g->cores_note;
}
