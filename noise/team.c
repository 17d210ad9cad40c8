/* team: pthreads pinned one per CPU through bind_thread_cpus(). Threads pin themselves
 * before touching any memory, so first-touch puts their pages on their own NUMA domain. */
#include "team.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bind.h"
#include "noise_clock.h"

struct noise_team {
    pthread_barrier_t barrier;
    /* the spinning barrier: members arrived, and passes completed */
    atomic_uint arrived, generation;
    atomic_int failed;
    char err[256];
    pthread_mutex_t err_lock;
    noise_member_fn fn;
    struct noise_team_time time;
    /* Members still running, under err_lock; the last one out wakes a reporting caller. */
    int running;
    pthread_cond_t done;
};

/* Nanoseconds on a CPU and waiting on a run queue for the calling thread; 0 when the
 * kernel has no schedstat. */
static void thread_schedstat(double *run, double *wait)
{
    unsigned long long r = 0, w = 0;
    FILE *fp = fopen("/proc/thread-self/schedstat", "r");
    if (fp) {
        if (fscanf(fp, "%llu %llu", &r, &w) != 2)
            r = w = 0;
        fclose(fp);
    }
    *run = (double)r * 1e-9;
    *wait = (double)w * 1e-9;
}

static void *member_main(void *p)
{
    struct noise_member *m = p;
    struct noise_team *t = m->team;
    hwloc_bitmap_t one = hwloc_bitmap_alloc();
    hwloc_bitmap_only(one, (unsigned)m->cpu);
    char err[256] = "";
    if (bind_thread_cpus(one, err, sizeof err) != 0) {
        pthread_mutex_lock(&t->err_lock);
        if (!atomic_load(&t->failed))
            snprintf(t->err, sizeof t->err, "worker thread %d: %s", m->index, err);
        atomic_store(&t->failed, 1);
        pthread_mutex_unlock(&t->err_lock);
    }
    hwloc_bitmap_free(one);
    /* Everyone learns of a failed pin before any work starts, so no one waits forever at a barrier. */
    pthread_barrier_wait(&t->barrier);
    if (!atomic_load(&t->failed)) {
        double run0, wait0, run1, wait1;
        thread_schedstat(&run0, &wait0);
        noise_member_note_cpu(m);
        t->fn(m);
        noise_member_note_cpu(m);
        thread_schedstat(&run1, &wait1);
        pthread_mutex_lock(&t->err_lock);
        t->time.run += run1 - run0;
        t->time.wait += wait1 - wait0;
        pthread_mutex_unlock(&t->err_lock);
    }
    pthread_mutex_lock(&t->err_lock);
    if (--t->running == 0)
        pthread_cond_signal(&t->done);
    pthread_mutex_unlock(&t->err_lock);
    return NULL;
}

/* The caller's wait for its members, printing progress lines as they fall due. Asleep on a
 * condition variable in between: one wake-up per line, and at once when the last member ends. */
static void report_while_running(struct noise_team *t, struct noise_progress *p)
{
    pthread_mutex_lock(&t->err_lock);
    while (t->running > 0) {
        double due = p->due, whole;
        double frac = modf(due, &whole);
        struct timespec ts = {(time_t)whole, (long)(frac * 1e9)};
        if (pthread_cond_timedwait(&t->done, &t->err_lock, &ts) == ETIMEDOUT && t->running > 0) {
            pthread_mutex_unlock(&t->err_lock);
            noise_progress_poll(p, noise_clock_now(p->clock));
            pthread_mutex_lock(&t->err_lock);
        }
    }
    pthread_mutex_unlock(&t->err_lock);
}

int noise_team_run(struct noise_place *place, long nthreads, noise_member_fn fn, void *arg,
                   struct noise_team_time *time, struct noise_progress *progress, char *err, size_t errlen)
{
    int ncpus = hwloc_bitmap_weight(place->cpus);
    if (ncpus <= 0) {
        snprintf(err, errlen, "no CPUs to run on");
        return -1;
    }
    int count = nthreads > 0 ? (int)nthreads : ncpus;
    struct noise_team team;
    memset(&team, 0, sizeof team);
    team.fn = fn;
    team.running = count;
    pthread_mutex_init(&team.err_lock, NULL);
    /* noise_now() is CLOCK_MONOTONIC: progress deadlines are on that clock (a test's fake
     * clock's are long past on it: the caller then polls without a pause). */
    pthread_condattr_t cattr;
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&team.done, &cattr);
    pthread_condattr_destroy(&cattr);
    pthread_barrier_init(&team.barrier, NULL, (unsigned)count);
    struct noise_member *members = calloc((size_t)count, sizeof *members);
    pthread_t *tids = calloc((size_t)count, sizeof *tids);
    /* Aligned: a meter is a cache line of its own. */
    struct noise_meter *meters = aligned_alloc(_Alignof(struct noise_meter), (size_t)count * sizeof *meters);
    int started = 0, rc = 0;
    if (!members || !tids || !meters) {
        snprintf(err, errlen, "out of memory for %d threads", count);
        rc = -1;
        goto out;
    }
    memset(meters, 0, (size_t)count * sizeof *meters);
    int cpu = hwloc_bitmap_first(place->cpus);
    for (int i = 0; i < count; i++) {
        members[i] = (struct noise_member){.team = &team,
                                           .index = i,
                                           .count = count,
                                           .cpu = cpu,
                                           .arg = arg,
                                           .seen = hwloc_bitmap_alloc(),
                                           .page_numa = -1,
                                           .meter = &meters[i]};
        /* More threads than CPUs wrap around: --threads is for tests and oversubscription. */
        cpu = hwloc_bitmap_next(place->cpus, cpu);
        if (cpu < 0)
            cpu = hwloc_bitmap_first(place->cpus);
    }
    for (; started < count; started++) {
        if (pthread_create(&tids[started], NULL, member_main, &members[started]) != 0) {
            snprintf(err, errlen, "cannot start worker thread %d of %d", started, count);
            rc = -1;
            break;
        }
    }
    if (rc != 0) {
        /* The started threads wait at the first barrier for ones that never came: there is
         * no way to release them, so give up on the process rather than hang. */
        fprintf(stderr, "cosched-noise: %s\n", err);
        exit(1);
    }
    if (progress && progress->due > 0) {
        progress->meters = meters;
        progress->nmeters = count;
        report_while_running(&team, progress);
        progress->meters = NULL; /* freed below */
        progress->nmeters = 0;
    }
    for (int i = 0; i < count; i++)
        pthread_join(tids[i], NULL);
    if (atomic_load(&team.failed)) {
        snprintf(err, errlen, "%s", team.err);
        rc = -1;
    }
    for (int i = 0; i < count; i++)
        noise_place_note(place, members[i].seen, members[i].page_numa);
    if (time)
        *time = team.time;
out:
    for (int i = 0; members && i < count; i++)
        hwloc_bitmap_free(members[i].seen);
    free(members);
    free(tids);
    free(meters);
    pthread_barrier_destroy(&team.barrier);
    pthread_cond_destroy(&team.done);
    pthread_mutex_destroy(&team.err_lock);
    return rc;
}

void noise_team_barrier(struct noise_member *m)
{
    pthread_barrier_wait(&m->team->barrier);
}

/* Spins this long (about a millisecond) before yielding the CPU to others. */
#define SYNC_SPINS 20000

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void noise_team_sync(struct noise_member *m)
{
    struct noise_team *t = m->team;
    unsigned gen = atomic_load_explicit(&t->generation, memory_order_acquire);
    if (atomic_fetch_add_explicit(&t->arrived, 1, memory_order_acq_rel) + 1 == (unsigned)m->count) {
        /* The last one in: no one touches arrived again until the generation moves on. */
        atomic_store_explicit(&t->arrived, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->generation, 1, memory_order_release);
        return;
    }
    for (long spins = 0; atomic_load_explicit(&t->generation, memory_order_acquire) == gen; spins++) {
        if (spins < SYNC_SPINS)
            cpu_relax();
        else
            sched_yield();
    }
}

void noise_member_note_cpu(struct noise_member *m)
{
    int cpu = sched_getcpu();
    if (cpu >= 0)
        hwloc_bitmap_set(m->seen, (unsigned)cpu);
}

json_t *noise_team_time_json(const struct noise_team_time *time)
{
    json_t *o = json_object();
    json_object_set_new(o, "run_seconds", json_real(time->run));
    json_object_set_new(o, "runqueue_seconds", json_real(time->wait));
    return o;
}
