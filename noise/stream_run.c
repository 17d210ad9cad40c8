/* stream_run: the STREAM kernels threaded one per CPU, either as a benchmark (STREAM's timing
 * rules) or as memory noise for a duration at a given intensity. */
#include <hwloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "noise_clock.h"
#include "noise_progress.h"
#include "phase_line.h"
#include "run.h"
#include "run_output.h"
#include "stop.h"
#include "stream.h"
#include "team.h"

/* Elements per unit of noise work: 0.5 MiB of each array, so the duty cycle and the stop
 * flag are checked every few hundred microseconds. */
#define NOISE_BLOCK (64 * 1024)

/* Elements per share of a timed pass (256 KiB of each array): small enough that the threads
 * finish a pass within a share of each other, large enough that taking one costs nothing. */
#define SHARE_BLOCK (32 * 1024)

/* One member's part of the arrays during a timed pass. Its owner starts on it, and members
 * whose pages lie on the same NUMA domain take shares of it once their own part is done, so a
 * pass ends when the work does, not when the slowest thread does. On its own cache line:
 * every member updates cursors. */
struct stream_part {
    _Alignas(64) atomic_size_t next;
    size_t lo, hi;
    int numa;
};

struct stream_job {
    const struct noise_opts *o;
    double *a, *b, *c;
    size_t n;
    void (*kernel)(enum noise_stream_kernel, double *, double *, double *, double, size_t, size_t);
    double (*times)[NOISE_KERNELS]; /* [ntimes][kernel], written by member 0 */
    long rounds;                    /* benchmark rounds completed */
    int abort;                      /* set by member 0 between barriers */
    struct stream_part *parts;      /* [members] for benchmark passes */
    struct noise_duty duty;
    double deadline;
    _Atomic uint64_t bytes;
    atomic_long ops;
};

static void chunk(const struct noise_member *m, size_t n, size_t *lo, size_t *hi)
{
    /* Boundaries on 8 doubles (64 bytes): no cache line is shared by two threads. */
    size_t per = (n / (size_t)m->count + 7) & ~(size_t)7;
    *lo = per * (size_t)m->index;
    *hi = *lo + per;
    if (*lo > n)
        *lo = n;
    if (*hi > n)
        *hi = n;
}

static void first_touch(struct noise_member *m, struct stream_job *j, size_t lo, size_t hi)
{
    /* In blocks: faulting in hundreds of MiB (huge pages may need compaction) can take
     * longer than the 100 ms a stop may take. A stopped run never reads the arrays. */
    for (size_t s = lo; s < hi && !noise_stop_requested(); s += NOISE_BLOCK)
        noise_stream_init(j->a, j->b, j->c, s, s + NOISE_BLOCK < hi ? s + NOISE_BLOCK : hi);
    if (hi > lo)
        m->page_numa = noise_numa_of_address(&j->a[lo]);
}

/* One kernel over the whole arrays: this member's part first, then shares of the parts of
 * members on its NUMA domain (never another domain: first touch put each page where its owner
 * runs, and a timed pass should not cross domains). */
static void bench_pass(struct noise_member *m, struct stream_job *j, enum noise_stream_kernel kern)
{
    int own_numa = j->parts[m->index].numa;
    for (int step = 0; step < m->count; step++) {
        struct stream_part *p = &j->parts[(m->index + step) % m->count];
        if (step > 0 && p->numa != own_numa)
            continue;
        for (;;) {
            size_t lo = atomic_fetch_add(&p->next, SHARE_BLOCK);
            if (lo >= p->hi)
                break;
            size_t hi = lo + SHARE_BLOCK < p->hi ? lo + SHARE_BLOCK : p->hi;
            j->kernel(kern, j->a, j->b, j->c, NOISE_STREAM_SCALAR, lo, hi);
        }
    }
}

static void bench_member(struct noise_member *m)
{
    struct stream_job *j = m->arg;
    struct stream_part *part = &j->parts[m->index];
    chunk(m, j->n, &part->lo, &part->hi);
    atomic_store(&part->next, part->lo);
    first_touch(m, j, part->lo, part->hi);
    part->numa = m->page_numa;
    for (long k = 0; k < j->o->ntimes; k++) {
        noise_team_sync(m);
        if (m->index == 0)
            j->abort = noise_stop_requested();
        noise_team_sync(m);
        if (j->abort)
            return;
        for (int kern = 0; kern < NOISE_KERNELS; kern++) {
            double t0 = 0;
            noise_team_sync(m);
            if (m->index == 0)
                t0 = noise_now();
            bench_pass(m, j, (enum noise_stream_kernel)kern);
            noise_team_sync(m);
            if (m->index == 0)
                j->times[k][kern] = noise_now() - t0;
            /* Everyone is past its last take from this part: rewind it for the next kernel
             * (the barrier before that kernel publishes the store). */
            atomic_store(&part->next, part->lo);
        }
        if (m->index == 0)
            j->rounds = k + 1;
        noise_member_note_cpu(m);
    }
}

static void noise_member(struct noise_member *m)
{
    struct stream_job *j = m->arg;
    size_t lo, hi;
    chunk(m, j->n, &lo, &hi);
    first_touch(m, j, lo, hi);
    uint64_t bytes = 0;
    long ops = 0;
    while (!noise_stop_requested() && noise_now() < j->deadline) {
        for (int kern = 0; kern < NOISE_KERNELS; kern++) {
            for (size_t s = lo; s < hi; s += NOISE_BLOCK) {
                size_t e = s + NOISE_BLOCK < hi ? s + NOISE_BLOCK : hi;
                noise_duty_pace(&j->duty);
                if (noise_stop_requested() || noise_now() >= j->deadline)
                    goto done;
                j->kernel((enum noise_stream_kernel)kern, j->a, j->b, j->c, NOISE_STREAM_STEADY_SCALAR, s, e);
                uint64_t moved = noise_stream_bytes((enum noise_stream_kernel)kern, e - s);
                bytes += moved;
                ops++;
                noise_meter_add(m->meter, moved, 1);
            }
        }
        noise_member_note_cpu(m);
    }
done:
    atomic_fetch_add(&j->bytes, bytes);
    atomic_fetch_add(&j->ops, ops);
}

/* STREAM's rule: each array at least 4x the last-level caches the run uses. */
static uint64_t default_array_bytes(hwloc_const_bitmap_t cpus)
{
    uint64_t llc = 0;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
        hwloc_obj_type_t types[] = {HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L2CACHE};
        for (size_t t = 0; t < 2 && llc == 0; t++) {
            hwloc_obj_t obj = NULL;
            while ((obj = hwloc_get_next_obj_by_type(topo, types[t], obj)) != NULL)
                if (obj->cpuset && hwloc_bitmap_intersects(obj->cpuset, cpus))
                    llc += obj->attr->cache.size;
        }
        hwloc_topology_destroy(topo);
    }
    if (llc == 0)
        llc = 32u << 20; /* unknown: assume a generous L3 */
    return 4 * llc;
}

/* The arrays a pattern's memory step leaves for the next one: allocating and first-touching
 * three arrays of 4x the L3 again took 0.05 to 0.4 s of every step, so a 1 s step streamed for
 * as little as 60 % of it (cosched experiment's blocks). The next memory step of the same size
 * reuses them; noise_stream_release() frees them when the pattern ends. */
static struct {
    double *a, *b, *c;
    size_t n;
} kept;

void noise_stream_release(void)
{
    free(kept.a);
    free(kept.b);
    free(kept.c);
    memset(&kept, 0, sizeof kept);
}

static void *alloc_array(size_t bytes)
{
    void *p = NULL;
    /* Not touched here: each thread's first write places its pages. Transparent huge pages
     * where the kernel offers them on request: fewer TLB misses while streaming, and
     * releasing hundreds of MiB at a stop takes a few ms instead of most of the 100 ms. */
    size_t align = bytes >= (8u << 20) ? 2u << 20 : 4096;
    if (posix_memalign(&p, align, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (align > 4096)
        madvise(p, bytes, MADV_HUGEPAGE); /* advice only: no huge pages is fine */
#endif
    return p;
}

static json_t *result_line(const struct noise_opts *o, const struct stream_job *j, int kern, int validated)
{
    double tmin = 1e300, tmax = 0, tsum = 0;
    long counted = 0;
    for (long k = 1; k < j->rounds; k++) { /* the first pass is not counted */
        double t = j->times[k][kern];
        tmin = t < tmin ? t : tmin;
        tmax = t > tmax ? t : tmax;
        tsum += t;
        counted++;
    }
    double bytes = (double)noise_stream_bytes((enum noise_stream_kernel)kern, j->n);
    double tavg = counted ? tsum / (double)counted : 0;
    json_t *r = json_object();
    json_object_set_new(r, RUNOUT_EVENT, json_string("result"));
    json_object_set_new(r, RUNOUT_MODE, json_string("stream"));
    json_object_set_new(r, "variant",
                        json_string(o->nt_stores && noise_stream_has_nt()
                                        ? "cosched-noise STREAM variant: pthreads, one per CPU, first-touch "
                                          "placement, streaming stores; not the official stream.c"
                                        : "cosched-noise STREAM variant: pthreads, one per CPU, first-touch "
                                          "placement; not the official stream.c"));
    const char *isa = o->nt_stores ? noise_stream_nt_isa() : NULL;
    json_object_set_new(r, "store_isa", isa ? json_string(isa) : json_null());
    json_object_set_new(r, "kernel", json_string(noise_stream_kernel_name((enum noise_stream_kernel)kern)));
    json_object_set_new(r, "config", noise_opts_json(o));
    json_object_set_new(r, "elements", json_integer((json_int_t)j->n));
    json_object_set_new(r, "bytes_per_pass", json_real(bytes));
    json_object_set_new(r, "passes_counted", json_integer(counted));
    if (counted && tmin > 0) {
        json_object_set_new(r, "best_mbs", json_real(bytes / tmin / 1e6));
        json_object_set_new(r, "avg_mbs", json_real(bytes / tavg / 1e6));
        json_object_set_new(r, "min_mbs", json_real(bytes / tmax / 1e6));
        json_object_set_new(r, "max_mbs", json_real(bytes / tmin / 1e6));
        json_object_set_new(r, "min_time", json_real(tmin));
        json_object_set_new(r, "avg_time", json_real(tavg));
        json_object_set_new(r, "max_time", json_real(tmax));
    }
    json_object_set_new(r, "validated", json_boolean(validated));
    return r;
}

int noise_stream_run(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen)
{
    uint64_t bytes = o->array_bytes ? o->array_bytes : default_array_bytes(ctx->place->cpus);
    /* Overcommit would let three huge arrays be allocated and the first touch end in the
     * OOM killer; refuse up front instead. */
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && bytes / 1024 * 3 > (uint64_t)pages / 1024 * (uint64_t)page / 10 * 9) {
        snprintf(err, errlen, "stream needs 3 arrays of %llu bytes, more than the %llu bytes of free memory",
                 (unsigned long long)bytes, (unsigned long long)pages * (unsigned long long)page);
        return -1;
    }
    struct stream_job j;
    memset(&j, 0, sizeof j);
    j.o = o;
    j.kernel = o->nt_stores ? noise_stream_kernel_nt : noise_stream_kernel;
    j.n = (size_t)(bytes / sizeof(double));
    int pattern_step = ctx->step >= 0 && o->duration > 0;
    if (pattern_step && kept.a && kept.n == j.n) {
        j.a = kept.a, j.b = kept.b, j.c = kept.c;
        memset(&kept, 0, sizeof kept);
    } else {
        noise_stream_release(); /* another size: the kept arrays are of no use */
        j.a = alloc_array(j.n * sizeof(double));
        j.b = alloc_array(j.n * sizeof(double));
        j.c = alloc_array(j.n * sizeof(double));
    }
    j.times = calloc((size_t)o->ntimes, sizeof *j.times);
    /* as many parts as noise_team_run starts members */
    int members = o->threads > 0 ? (int)o->threads : hwloc_bitmap_weight(ctx->place->cpus);
    if (members > 0)
        j.parts = aligned_alloc(_Alignof(struct stream_part), (size_t)members * sizeof *j.parts);
    int rc = -1;
    if (!j.a || !j.b || !j.c || !j.times || !j.parts) {
        snprintf(err, errlen, "cannot allocate 3 arrays of %llu bytes for stream",
                 (unsigned long long)(j.n * sizeof(double)));
        goto out;
    }
    double start_wall = noise_wall(), t0 = noise_now(), cpu0 = noise_cpu_seconds();
    if (o->duration > 0) {
        j.duty = (struct noise_duty){.intensity = o->intensity, .period = o->period, .origin = t0};
        j.deadline = t0 + o->duration;
        struct noise_team_time time;
        struct noise_progress progress;
        noise_progress_init(&progress, ctx, o, "noise", t0);
        if (noise_team_run(ctx->place, o->threads, noise_member, &j, &time, &progress, err, errlen) != 0)
            goto out;
        double dt = noise_now() - t0;
        noise_emit_phase(ctx, o, "noise", start_wall, dt, (double)j.bytes, (double)j.ops, noise_cpu_seconds() - cpu0,
                         noise_team_time_json(&time));
        rc = 0;
        goto out;
    }
    struct noise_team_time time;
    if (noise_team_run(ctx->place, o->threads, bench_member, &j, &time, NULL, err, errlen) != 0)
        goto out;
    double dt = noise_now() - t0;
    int stopped = j.rounds < o->ntimes;
    int validated = 0;
    if (!stopped) {
        if (noise_stream_check(j.a, j.b, j.c, j.n, o->ntimes, NOISE_STREAM_SCALAR, err, errlen) != 0)
            goto out;
        validated = 1;
    }
    double total = 0;
    for (int kern = 0; kern < NOISE_KERNELS; kern++) {
        total += (double)noise_stream_bytes((enum noise_stream_kernel)kern, j.n) * (double)j.rounds;
        if (j.rounds >= 2)
            noise_out_emit(ctx->out, result_line(o, &j, kern, validated));
    }
    noise_emit_phase(ctx, o, "benchmark", start_wall, dt, total, (double)(j.rounds * NOISE_KERNELS),
                     noise_cpu_seconds() - cpu0, noise_team_time_json(&time));
    rc = 0;
out:
    if (pattern_step && rc == 0 && j.a && j.b && j.c) {
        kept.a = j.a, kept.b = j.b, kept.c = j.c, kept.n = j.n;
        j.a = j.b = j.c = NULL;
    }
    free(j.a);
    free(j.b);
    free(j.c);
    free(j.times);
    free(j.parts);
    return rc;
}
