/* pmu: perf_event_open(2) counters, user space only (exclude_kernel: what the trainer computes,
 * and what perf_event_paranoid 2 still lets a CAP_PERFMON holder count), read with their enabled
 * and running times so that a counter the kernel multiplexed out part of the time is scaled up. */
#include "pmu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { PMU_MAX_FDS = 4096 };

struct pmu_counter {
    int fds[PMU_MAX_FDS];
    pid_t pids[PMU_MAX_FDS]; /* per-process counters: whose (0 for a cgroup's per-CPU ones) */
    int n;
    double ended; /* what the processes let go had counted */
};

static int event_attr(const char *event, struct perf_event_attr *a, char *why, size_t whylen)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    if (strcmp(event, "instructions") == 0) {
        a->type = PERF_TYPE_HARDWARE;
        a->config = PERF_COUNT_HW_INSTRUCTIONS;
    } else if (strcmp(event, "task-clock") == 0) {
        a->type = PERF_TYPE_SOFTWARE;
        a->config = PERF_COUNT_SW_TASK_CLOCK;
    } else {
        snprintf(why, whylen, "unknown event '%s' (instructions or task-clock)", event);
        return -1;
    }
    return 0;
}

static int open_event(struct perf_event_attr *a, pid_t pid, int cpu, unsigned long flags)
{
    return (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, flags | PERF_FLAG_FD_CLOEXEC);
}

static void explain(const char *event, int err, char *why, size_t whylen)
{
    int paranoid = -9;
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
    if (f) {
        if (fscanf(f, "%d", &paranoid) != 1)
            paranoid = -9;
        fclose(f);
    }
    if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)
        snprintf(why, whylen,
                 "this machine offers no hardware PMU (perf_event_open of %s: %s; a VM without a "
                 "virtual PMU?)",
                 event, strerror(err));
    else if (err == EACCES || err == EPERM)
        snprintf(why, whylen,
                 "perf_event_open of %s is not permitted (perf_event_paranoid %d): coschedd needs "
                 "CAP_PERFMON and, under its unit, the drop-in that allows the call (coschedd(8))",
                 event, paranoid);
    else if (err == ENOSYS)
        snprintf(why, whylen, "this kernel has no perf events (CONFIG_PERF_EVENTS)");
    else
        snprintf(why, whylen, "perf_event_open of %s: %s", event, strerror(err));
}

bool pmu_probe(const char *event, char *why, size_t whylen)
{
    struct perf_event_attr a;
    if (event_attr(event, &a, why, whylen) < 0)
        return false;
    int fd = open_event(&a, 0, -1, 0);
    if (fd < 0) {
        explain(event, errno, why, whylen);
        return false;
    }
    close(fd);
    snprintf(why, whylen, "%s counted by perf events%s", event,
             strcmp(event, "task-clock") == 0 ? " (task-clock: CPU time, a stand-in for testing, not progress)" : "");
    return true;
}

pmu_counter_t *pmu_open_cgroup(const char *event, const char *cgroup_dir, hwloc_const_bitmap_t cpus, char *why,
                               size_t whylen)
{
    struct perf_event_attr a;
    if (event_attr(event, &a, why, whylen) < 0)
        return NULL;
    int dir = open(cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) {
        snprintf(why, whylen, "cannot open %s: %s", cgroup_dir, strerror(errno));
        return NULL;
    }
    pmu_counter_t *c = calloc(1, sizeof *c);
    int cpu, rc = c ? 0 : ENOMEM;
    hwloc_bitmap_foreach_begin(cpu, cpus) {
        if (rc || c->n == PMU_MAX_FDS)
            break;
        int fd = open_event(&a, dir, cpu, PERF_FLAG_PID_CGROUP);
        if (fd < 0)
            rc = errno;
        else
            c->fds[c->n++] = fd;
    }
    hwloc_bitmap_foreach_end();
    close(dir);
    if (!rc && c->n > 0)
        return c;
    if (rc)
        explain(event, rc, why, whylen);
    else
        snprintf(why, whylen, "no CPU to count on");
    pmu_close(c);
    return NULL;
}

int pmu_add_process(pmu_counter_t **c, const char *event, pid_t pid, char *why, size_t whylen)
{
    struct perf_event_attr a;
    if (event_attr(event, &a, why, whylen) < 0)
        return -1;
    a.inherit = 1; /* the threads and children it makes from now on */
    if (!*c && !(*c = calloc(1, sizeof **c))) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    if ((*c)->n == PMU_MAX_FDS) {
        snprintf(why, whylen, "more than %d processes to count", PMU_MAX_FDS);
        return -1;
    }
    int fd = open_event(&a, pid, -1, 0);
    if (fd < 0) {
        explain(event, errno, why, whylen);
        return -1;
    }
    (*c)->fds[(*c)->n] = fd;
    (*c)->pids[(*c)->n++] = pid;
    return 0;
}

bool pmu_counts_process(const pmu_counter_t *c, pid_t pid)
{
    for (int i = 0; c && i < c->n; i++)
        if (c->pids[i] == pid)
            return true;
    return false;
}

static double read_one(int fd)
{
    uint64_t v[3];
    if (read(fd, v, sizeof v) != (ssize_t)sizeof v || v[2] == 0)
        return 0;
    return (double)v[0] * ((double)v[1] / (double)v[2]); /* enabled / running */
}

double pmu_read(const pmu_counter_t *c)
{
    double total = c ? c->ended : 0;
    for (int i = 0; c && i < c->n; i++)
        total += read_one(c->fds[i]);
    return total;
}

int pmu_processes(const pmu_counter_t *c, pid_t *pids, int max)
{
    int n = 0;
    for (int i = 0; c && i < c->n && n < max; i++)
        if (c->pids[i] > 0)
            pids[n++] = c->pids[i];
    return n;
}

void pmu_remove_process(pmu_counter_t *c, pid_t pid)
{
    for (int i = 0; c && i < c->n; i++)
        if (c->pids[i] == pid) {
            c->ended += read_one(c->fds[i]); /* an ended process's count stays readable to the last */
            close(c->fds[i]);
            c->fds[i] = c->fds[c->n - 1];
            c->pids[i] = c->pids[--c->n];
            return;
        }
}

void pmu_close(pmu_counter_t *c)
{
    for (int i = 0; c && i < c->n; i++)
        close(c->fds[i]);
    free(c);
}
