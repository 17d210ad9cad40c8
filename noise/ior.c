/* ior: IOR-style POSIX I/O noise. Tasks are threads; the layout, the open-to-close timing
 * and the neighbour read-back (-C) follow IOR. Files live in a private directory that is
 * removed on every way out, and the footprint is checked against --max-bytes and free space. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "noise_clock.h"
#include "noise_progress.h"
#include "phase_line.h"
#include "run.h"
#include "stop.h"
#include "team.h"

/* Leave this much of the file system free whatever --max-bytes allows. */
#define RESERVE_BYTES (256ull << 20)

struct ior_job {
    const struct noise_opts *o;
    struct noise_ctx *ctx;
    char dir[PATH_MAX];
    int tasks;
    double *t_open, *t_close; /* per task, for the phase being run */
    atomic_int failed;
    char err[PATH_MAX + 600];
    int abort;                     /* member 0 decides between barriers */
    uint64_t mark_bytes, mark_ops; /* counters when the current phase started, idem */
    struct noise_duty duty;
    double deadline; /* noise mode; 0 in a benchmark */
    _Atomic uint64_t bytes, ops;
    double phase_bytes[2], phase_ops[2], phase_time[2];
    double start_wall;
};

static void task_file(const struct ior_job *j, int task, char *path, size_t len)
{
    if (j->o->file_per_proc)
        snprintf(path, len, "%s/data.%05d", j->dir, task);
    else
        snprintf(path, len, "%s/data.shared", j->dir);
}

static uint64_t task_offset(const struct ior_job *j, int task, long segment, uint64_t in_block)
{
    const struct noise_opts *o = j->o;
    if (o->file_per_proc)
        return (uint64_t)segment * o->block + in_block;
    /* IOR's shared-file layout: segments outermost, then each task's block. */
    return ((uint64_t)segment * (uint64_t)j->tasks + (uint64_t)task) * o->block + in_block;
}

static void set_error(struct ior_job *j, const char *fmt, const char *path, int e)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&j->failed, &expected, 1))
        snprintf(j->err, sizeof j->err, fmt, path, strerror(e));
}

/* One task's write or read pass over the data of task `owner`. Returns transfers done. */
static long io_pass(struct ior_job *j, struct noise_meter *meter, int task, int owner, int writing, char *buf)
{
    const struct noise_opts *o = j->o;
    char path[PATH_MAX + 32];
    task_file(j, owner, path, sizeof path);
    int flags = writing ? O_WRONLY | O_CREAT : O_RDONLY;
    if (o->direct)
        flags |= O_DIRECT;
    j->t_open[task] = noise_now();
    int fd = open(path, flags | O_CLOEXEC, 0600);
    if (fd < 0) {
        set_error(j,
                  errno == EINVAL && o->direct ? "cannot open %s with O_DIRECT (the file system does "
                                                 "not support it?): %s"
                                               : "cannot open %s: %s",
                  path, errno);
        j->t_close[task] = noise_now();
        return 0;
    }
    long done = 0;
    for (long s = 0; s < o->segments; s++) {
        for (uint64_t in = 0; in < o->block; in += o->transfer) {
            if (noise_stop_requested() || atomic_load(&j->failed) || (j->deadline > 0 && noise_now() >= j->deadline))
                goto close;
            if (j->deadline > 0)
                noise_duty_pace(&j->duty);
            uint64_t off = task_offset(j, owner, s, in);
            uint64_t stamp[2] = {off, (uint64_t)owner};
            if (writing)
                memcpy(buf, stamp, sizeof stamp);
            ssize_t n = writing ? pwrite(fd, buf, o->transfer, (off_t)off) : pread(fd, buf, o->transfer, (off_t)off);
            if (n < 0 && errno == EINTR) {
                in -= o->transfer; /* a signal cut the call short: retry or notice the stop */
                continue;
            }
            if (n != (ssize_t)o->transfer) {
                set_error(j, n < 0 ? "I/O error on %s: %s" : "short transfer on %s (%s)", path, n < 0 ? errno : ENOSPC);
                goto close;
            }
            /* The stamp proves we read what the owner wrote there, not a hole or someone else's data. */
            if (!writing && memcmp(buf, stamp, sizeof stamp) != 0) {
                set_error(j, "read-back check failed in %s (%s)", path, EIO);
                goto close;
            }
            atomic_fetch_add(&j->bytes, o->transfer);
            noise_meter_add(meter, o->transfer, 1);
            done++;
        }
    }
close:
    /* fsync can take seconds with much dirty data; skip it when asked to stop. */
    if (writing && o->fsync && !noise_stop_requested() && fsync(fd) != 0)
        set_error(j, "fsync %s: %s", path, errno);
    if (close(fd) != 0)
        set_error(j, "close %s: %s", path, errno);
    j->t_close[task] = noise_now();
    atomic_fetch_add(&j->ops, (uint64_t)done);
    return done;
}

/* fio's default layout step: the blocks of this task's part allocated up front, outside
 * the timed window, so the write phase measures writing into allocated blocks. IOR has no
 * such step; --preallocate lets the two be compared either way. fallocate, not
 * posix_fallocate: glibc's fallback writes every block, which would be neither fast nor
 * what was asked. */
static void preallocate(struct ior_job *j, int task)
{
    const struct noise_opts *o = j->o;
    char path[PATH_MAX + 32];
    task_file(j, task, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        set_error(j, "cannot open %s: %s", path, errno);
        return;
    }
    for (long s = 0; s < o->segments && !noise_stop_requested(); s++)
        if (fallocate(fd, 0, (off_t)task_offset(j, task, s, 0), (off_t)o->block) != 0) {
            set_error(j,
                      errno == EOPNOTSUPP ? "--preallocate: the file system of %s cannot "
                                            "allocate blocks ahead (%s)"
                                          : "fallocate %s: %s",
                      path, errno);
            break;
        }
    close(fd);
}

/* On one node a neighbour's pages sit in the same page cache, so -C alone does not make
 * reads reach the disk; dropping the (clean, fsynced) pages does, untimed, as fio does. */
static void invalidate(struct ior_job *j, int owner)
{
    char path[PATH_MAX + 32];
    task_file(j, owner, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* the timed open reports it */
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* Barrier, then agree on whether to go on: stop, failure or deadline seen by member 0. */
static int keep_going(struct noise_member *m, struct ior_job *j)
{
    noise_team_barrier(m);
    if (m->index == 0) {
        j->abort = noise_stop_requested() || atomic_load(&j->failed) || (j->deadline > 0 && noise_now() >= j->deadline);
        /* Snapshot here, while every member waits: a phase's bytes are the difference. */
        j->mark_bytes = atomic_load(&j->bytes);
        j->mark_ops = atomic_load(&j->ops);
    }
    noise_team_barrier(m);
    return !j->abort;
}

static void record_phase(struct ior_job *j, int phase, uint64_t bytes_before, uint64_t ops_before)
{
    /* Called by member 0 between phases, before the next keep_going() takes a new mark. */
    double first = 1e300, last = 0;
    for (int t = 0; t < j->tasks; t++) {
        first = j->t_open[t] < first ? j->t_open[t] : first;
        last = j->t_close[t] > last ? j->t_close[t] : last;
    }
    /* IOR's bandwidth: aggregate bytes over last close minus first open. */
    j->phase_time[phase] += last - first;
    j->phase_bytes[phase] += (double)(atomic_load(&j->bytes) - bytes_before);
    j->phase_ops[phase] += (double)(atomic_load(&j->ops) - ops_before);
}

static void ior_member(struct noise_member *m)
{
    struct ior_job *j = m->arg;
    const struct noise_opts *o = j->o;
    char *buf = NULL;
    int task = m->index;
    /* -C: read the next task's data, so a task never reads pages it wrote itself. */
    int owner = o->reorder ? (task + 1) % j->tasks : task;
    if (posix_memalign((void **)&buf, 4096, o->transfer) != 0) {
        set_error(j, "cannot allocate a transfer buffer%s: %s", "", ENOMEM);
        buf = NULL;
    } else {
        for (uint64_t i = 0; i < o->transfer; i++)
            buf[i] = (char)('a' + (i + (uint64_t)task) % 26);
    }
    if (o->preallocate && buf)
        preallocate(j, task);
    int first = 1;
    while (keep_going(m, j) && (first || j->deadline > 0)) {
        first = 0;
        /* Reads need data; without a measured write phase it is written unmeasured. */
        uint64_t b0 = j->mark_bytes, n0 = j->mark_ops;
        io_pass(j, m->meter, task, task, 1, buf);
        if (!keep_going(m, j))
            break;
        if (m->index == 0 && o->do_write)
            record_phase(j, 0, b0, n0);
        if (!o->do_write && j->deadline == 0 && m->index == 0) {
            atomic_store(&j->bytes, b0);
            atomic_store(&j->ops, n0);
        }
        if (!o->do_read)
            continue;
        if (o->invalidate)
            invalidate(j, owner);
        if (!keep_going(m, j))
            break;
        b0 = j->mark_bytes;
        n0 = j->mark_ops;
        io_pass(j, m->meter, task, owner, 0, buf);
        if (!keep_going(m, j))
            break;
        if (m->index == 0)
            record_phase(j, 1, b0, n0);
    }
    free(buf);
}

static void remove_files(struct ior_job *j)
{
    char path[PATH_MAX + 32];
    for (int t = 0; t < (j->o->file_per_proc ? j->tasks : 1); t++) {
        task_file(j, t, path, sizeof path);
        unlink(path);
    }
    rmdir(j->dir);
}

static int check_space(const struct ior_job *j, uint64_t footprint, char *err, size_t errlen)
{
    const struct noise_opts *o = j->o;
    if (footprint > o->max_bytes) {
        snprintf(err, errlen,
                 "ior would put %llu bytes in %s (%d tasks x %ld segments x block %llu), "
                 "more than --max-bytes %llu",
                 (unsigned long long)footprint, o->dir, j->tasks, o->segments, (unsigned long long)o->block,
                 (unsigned long long)o->max_bytes);
        return -1;
    }
    struct statvfs vfs;
    if (statvfs(o->dir, &vfs) != 0) {
        snprintf(err, errlen, "cannot use --dir %s: %s", o->dir, strerror(errno));
        return -1;
    }
    uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    uint64_t reserve = (uint64_t)vfs.f_blocks * vfs.f_frsize / 20;
    if (reserve < RESERVE_BYTES)
        reserve = RESERVE_BYTES;
    if (footprint + reserve > avail) {
        snprintf(err, errlen, "ior would put %llu bytes in %s, which has %llu free; it keeps %llu free",
                 (unsigned long long)footprint, o->dir, (unsigned long long)avail, (unsigned long long)reserve);
        return -1;
    }
    return 0;
}

int noise_ior_run(const struct noise_opts *o, struct noise_ctx *ctx, char *err, size_t errlen)
{
    struct ior_job j;
    memset(&j, 0, sizeof j);
    j.o = o;
    j.ctx = ctx;
    j.tasks = o->threads > 0 ? (int)o->threads : hwloc_bitmap_weight(ctx->place->cpus);
    if (j.tasks < 1)
        j.tasks = 1;
    uint64_t footprint = o->block * (uint64_t)o->segments * (uint64_t)j.tasks;
    if (o->block && footprint / o->block / (uint64_t)j.tasks != (uint64_t)o->segments) {
        snprintf(err, errlen, "ior size overflows: block x segments x tasks");
        return -1;
    }
    if (check_space(&j, footprint, err, errlen) != 0)
        return -1;
    if (snprintf(j.dir, sizeof j.dir, "%s/cosched-noise-ior.%d.XXXXXX", o->dir, (int)getpid()) >= (int)sizeof j.dir ||
        !mkdtemp(j.dir)) {
        snprintf(err, errlen, "cannot create a directory in %s: %s", o->dir, strerror(errno));
        return -1;
    }
    j.t_open = calloc((size_t)j.tasks, sizeof(double));
    j.t_close = calloc((size_t)j.tasks, sizeof(double));
    int rc = -1;
    if (!j.t_open || !j.t_close) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    double t0 = noise_now(), cpu0 = noise_cpu_seconds();
    j.start_wall = noise_wall();
    if (o->duration > 0) {
        j.deadline = t0 + o->duration;
        j.duty = (struct noise_duty){.intensity = o->intensity, .period = o->period, .origin = t0};
    }
    struct noise_team_time time;
    struct noise_progress progress;
    noise_progress_init(&progress, ctx, o, "noise", t0); /* off in a benchmark (no duration) */
    if (noise_team_run(ctx->place, j.tasks, ior_member, &j, &time, &progress, err, errlen) != 0)
        goto out;
    if (atomic_load(&j.failed)) {
        snprintf(err, errlen, "%s", j.err);
        goto out;
    }
    double cpu = noise_cpu_seconds() - cpu0;
    if (o->duration > 0) {
        json_t *x = noise_team_time_json(&time);
        json_object_set_new(x, "tasks", json_integer(j.tasks));
        noise_emit_phase(ctx, o, "noise", j.start_wall, noise_now() - t0, (double)j.bytes, (double)j.ops, cpu, x);
    } else {
        static const char *const names[2] = {"write", "read"};
        for (int p = 0; p < 2; p++) {
            if ((p == 0 && !o->do_write) || (p == 1 && !o->do_read) || j.phase_time[p] <= 0)
                continue;
            json_t *x = json_object();
            json_object_set_new(x, "tasks", json_integer(j.tasks));
            json_object_set_new(x, "files", json_integer(o->file_per_proc ? j.tasks : 1));
            json_object_set_new(x, "bw_mibs", json_real(j.phase_bytes[p] / j.phase_time[p] / 1048576.0));
            noise_emit_phase(ctx, o, names[p], j.start_wall, j.phase_time[p], j.phase_bytes[p], j.phase_ops[p], cpu, x);
        }
    }
    rc = 0;
out:
    remove_files(&j);
    free(j.t_open);
    free(j.t_close);
    return rc;
}
