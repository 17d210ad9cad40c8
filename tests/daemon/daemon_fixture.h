/* daemon_fixture: a daemon_t for unit tests — defaults, a topology, a temp state directory and
 * the descriptors runs need — and its teardown, which leaves nothing behind. */
#ifndef COSCHED_TEST_DAEMON_FIXTURE_H
#define COSCHED_TEST_DAEMON_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "daemon.h"
#include "../topology/fixtures.h"
#include "jobs.h"
#include "state.h"

static inline daemon_t *fixture_daemon(const char *topology)
{
    daemon_t *d = calloc(1, sizeof *d);
    config_defaults(&d->cfg);
    snprintf(d->cfg.state_dir, sizeof d->cfg.state_dir, "%s", "/tmp/cosched-test-XXXXXX");
    if (!mkdtemp(d->cfg.state_dir)) {
        perror("# mkdtemp");
        abort();
    }
    d->topo = fixture_load(topology);
    d->next_run_id = 1;
    d->guard_share = 1;
    d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    d->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    d->listen_fd = d->signal_fd = d->timer_fd = d->output_pause_fd = d->throttle_fd = -1;
    return d;
}

/* Register a job for a test; the test fails when it cannot be placed. */
static inline job_t *fixture_job(daemon_t *d, const char *id, job_role_t role, plan_policy_t policy, int cores)
{
    job_request_t req = {.id = id,
                         .uid = geteuid(),
                         .role = role,
                         .policy = policy,
                         .ranks_per_gpu = 1,
                         .cores_per_rank = policy == PLAN_L3 ? 1 : 0,
                         .cores = cores};
    job_t *j = NULL;
    bool existing;
    result_t r = job_register(d, &req, &j, &existing);
    if (r.code != RESULT_OK) {
        fprintf(stderr, "# cannot register %s: %s\n", id, r.message);
        abort();
    }
    return j;
}

static inline void fixture_daemon_free(daemon_t *d)
{
    state_clear(d); /* runs close their descriptors as they are freed */
    topo_free(d->topo);
    close(d->epoll_fd);
    close(d->inotify_fd);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->cfg.state_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", d->cfg.state_dir);
    free(d);
}

#endif
