/* throttle_quota: a share as a CFS bandwidth quota, written as cgroup v2 cpu.max "<quota> <period>"
 * or cgroup v1 cpu.cfs_quota_us. quota = share x ncpus x period; share 1 is no quota at all. */
#include "throttle_internal.h"

#include <math.h>
#include <stdio.h>

long long throttle_cpu_quota_us(double share, int ncpus)
{
    if (!(share < 1))
        return -1;
    double want = share > 0 ? share * ncpus * THROTTLE_CPU_PERIOD_US : 0;
    long long quota = llround(want);
    return quota < THROTTLE_CPU_MIN_QUOTA_US ? THROTTLE_CPU_MIN_QUOTA_US : quota;
}

static int write_quota(throttle_group_t *g, knob_t knob, long long quota, char *err, size_t errlen)
{
    char path[THROTTLE_LONG_PATH], text[64];
    bool v2 = knob == KNOB_CPU_MAX;
    if (throttle_fs_path(path, sizeof path, g->dir[v2 ? DIR_CG2 : DIR_CPU1], v2 ? "cpu.max" : "cpu.cfs_quota_us") < 0) {
        snprintf(err, errlen, "cgroup for %s: path too long", g->name);
        return -1;
    }
    if (v2 && quota < 0)
        snprintf(text, sizeof text, "max %d\n", THROTTLE_CPU_PERIOD_US);
    else if (v2)
        snprintf(text, sizeof text, "%lld %d\n", quota, THROTTLE_CPU_PERIOD_US);
    else
        snprintf(text, sizeof text, "%lld\n", quota);
    return throttle_fs_write(path, text, err, errlen);
}

/* v1 keeps the period in a file of its own; it is set once, to the kernel's default, so that a
 * directory taken over from someone else means what the quota says. */
int throttle_quota_init(throttle_group_t *g, knob_t knob, char *err, size_t errlen)
{
    char path[THROTTLE_LONG_PATH], text[32];
    if (knob == KNOB_CFS_QUOTA) {
        if (throttle_fs_path(path, sizeof path, g->dir[DIR_CPU1], "cpu.cfs_period_us") < 0) {
            snprintf(err, errlen, "cgroup for %s: path too long", g->name);
            return -1;
        }
        snprintf(text, sizeof text, "%d\n", THROTTLE_CPU_PERIOD_US);
        if (throttle_fs_write(path, text, err, errlen) < 0)
            return -1;
    }
    return write_quota(g, knob, -1, err, errlen);
}

/* Slurm's own values back in the job cgroup the quota was borrowed from (throttle_external.c):
 * share 1 there is what Slurm set, not "no limit". v1: the period first, as Slurm had it. */
int throttle_quota_restore(throttle_group_t *g, char *err, size_t errlen)
{
    const throttle_ext_t *x = g->ext;
    char path[THROTTLE_LONG_PATH], text[80];
    int rc = 0;
    if (g->borrowed[DIR_CG2] && throttle_fs_path(path, sizeof path, g->dir[DIR_CG2], "cpu.max") == 0) {
        snprintf(text, sizeof text, "%s\n", x->saved_quota);
        rc |= throttle_fs_write(path, text, err, errlen);
    }
    if (g->borrowed[DIR_CPU1] && throttle_fs_path(path, sizeof path, g->dir[DIR_CPU1], "cpu.cfs_period_us") == 0) {
        snprintf(text, sizeof text, "%s\n", x->saved_period);
        rc |= throttle_fs_write(path, text, err, errlen);
        throttle_fs_path(path, sizeof path, g->dir[DIR_CPU1], "cpu.cfs_quota_us");
        snprintf(text, sizeof text, "%s\n", x->saved_quota);
        rc |= throttle_fs_write(path, text, err, errlen);
    }
    return rc ? -1 : 0;
}

/* achieved: the share the quota holds the group to; below the 1 ms minimum quota (and at share
 * 0) the rest is left to duty cycling. */
int throttle_quota_set(throttle_group_t *g, double share, double *achieved, char *err, size_t errlen)
{
    long long quota = throttle_cpu_quota_us(share, g->ncpus);
    bool borrowed = g->borrowed[g->primary == KNOB_CPU_MAX ? DIR_CG2 : DIR_CPU1];
    if (borrowed && quota < 0) {
        *achieved = 1;
        return throttle_quota_restore(g, err, errlen);
    }
    if (borrowed && g->primary == KNOB_CFS_QUOTA && throttle_quota_init(g, KNOB_CFS_QUOTA, err, errlen) < 0)
        return -1; /* our period again over Slurm's, unlimited until the quota below */
    if (write_quota(g, g->primary, quota, err, errlen) < 0)
        return -1;
    double floor_share = (double)THROTTLE_CPU_MIN_QUOTA_US / ((double)g->ncpus * THROTTLE_CPU_PERIOD_US);
    *achieved = quota < 0 ? 1 : share < floor_share ? floor_share : share;
    return 0;
}
