/* slurm_fixture: what the tests of coschedd's Slurm commands share (escalation, the harvest gate,
 * the time credit) — a stand-in scontrol written into the daemon's state directory, the SIGSTOP
 * knob alone (it needs no cgroup), a co-tenant Slurm started held at a share, and a small file
 * read whole. Built on daemon_fixture.h. */
#ifndef COSCHED_TEST_SLURM_FIXTURE_H
#define COSCHED_TEST_SLURM_FIXTURE_H

#include <sys/stat.h>

#include "cotenants.h"
#include "daemon_fixture.h"
#include "throttle.h"

/* text as DIR/scontrol (DIR the state directory, a short /tmp path), which cfg.scontrol names. */
static inline void fixture_scontrol(daemon_t *d, const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/scontrol", d->cfg.state_dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || chmod(path, 0755) != 0) {
        perror("# the stand-in scontrol");
        abort();
    }
    snprintf(d->cfg.scontrol, sizeof d->cfg.scontrol, "%.200s", path);
}

/* The knobs of this test process alone (subtree cosched-test-<pid>): SIGSTOP only. */
static inline throttle_t *fixture_sigstop_throttle(void)
{
    throttle_config_t cfg;
    throttle_config_defaults(&cfg);
    snprintf(cfg.subtree, sizeof cfg.subtree, "cosched-test-%d", (int)getpid());
    cfg.knobs_allowed = 1u << KNOB_SIGSTOP;
    return throttle_detect(&cfg);
}

/* A co-tenant Slurm started (external), with a group of t and the share given (no process in it:
 * add one to see it stopped). */
static inline job_t *fixture_held_cotenant(daemon_t *d, throttle_t *t, const char *id, double share)
{
    job_t *j = fixture_job(d, id, ROLE_COTENANT, PLAN_L3, 1);
    char err[512];
    j->external = true;
    j->throttle = throttle_group_create(t, id, 1, err, sizeof err);
    if (!j->throttle) {
        fprintf(stderr, "# cannot make a group for %s: %s\n", id, err);
        abort();
    }
    j->share = share;
    j->share_override = -1;
    return j;
}

/* Every co-tenant let go (nothing stays stopped), then the daemon and t freed. */
static inline void fixture_slurm_free(daemon_t *d, throttle_t *t)
{
    for (job_t *j = d->jobs; j; j = j->next)
        cotenant_release(d, j);
    fixture_daemon_free(d);
    throttle_free(t);
}

/* A small file whole ("" when it is missing). */
static inline const char *fixture_read(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

#endif
