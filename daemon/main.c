/* coschedd: the node-local co-scheduling daemon. main() reads the configuration, restores the
 * state, opens the control socket and runs the event loop; one file per concern does the rest. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "control.h"
#include "accounting.h"
#include "cotenants.h"
#include "ending.h"
#include "escalation.h"
#include "harvest_gate.h"
#include "time_credit.h"
#include "jobs.h"
#include "log.h"
#include "methods.h"
#include "metrics.h"
#include "progress.h"
#include "progress_gpu.h"
#include "proto.h"
#include "runs.h"
#include "state.h"
#include "state_lock.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: coschedd [--config FILE] [--socket PATH] [--state-dir DIR] [--topology XML]\n"
            "                [--foreground] [--check-config]\n"
            "The cosched node daemon: places jobs on the node's cores, launches and binds their\n"
            "runs, follows their progress and reports slowdown over a Unix socket.\n\n"
            "  --config FILE     YAML configuration (default %s, if it exists)\n"
            "  --socket PATH     control socket (default %s)\n"
            "  --state-dir DIR   where jobs and runs are kept (default %s)\n"
            "  --topology XML    plan on an hwloc XML file instead of this machine\n"
            "  --foreground      do not detach (implied under systemd)\n"
            "  --check-config    validate the configuration and exit (0 valid, 1 not)\n"
            "  -h, --help        show this help\n"
            "  --version         print the version\n\n"
            "Command-line flags override the file. Signals: SIGTERM/SIGINT save and exit, SIGHUP\n"
            "reloads the configuration. See coschedd(8) and coschedd.yaml(5).\n",
            CONFIG_DEFAULT_PATH, PROTO_DEFAULT_SOCKET, CONFIG_DEFAULT_STATE_DIR);
}

typedef struct overrides {
    const char *socket, *state_dir, *topology;
} overrides_t;

static void apply_overrides(config_t *cfg, const overrides_t *o)
{
    if (o->socket)
        snprintf(cfg->socket_path, sizeof cfg->socket_path, "%s", o->socket);
    if (o->state_dir)
        snprintf(cfg->state_dir, sizeof cfg->state_dir, "%s", o->state_dir);
    if (o->topology)
        snprintf(cfg->topology, sizeof cfg->topology, "%s", o->topology);
}

static int load_config(daemon_t *d, const overrides_t *o, config_t *out, char *err, size_t errlen)
{
    config_t cfg;
    config_defaults(&cfg);
    if (config_load(&cfg, d->config_path, d->config_required, err, errlen) < 0)
        return -1;
    apply_overrides(&cfg, o);
    if (config_validate(&cfg, err, errlen) < 0)
        return -1;
    *out = cfg;
    return 0;
}

/* Settings that are valid alone but do nothing together: said in the log, at start and reload. */
static void warn_inert_settings(const config_t *cfg)
{
    if (cfg->requeue_after > 0 && cfg->n_requeue_partitions == 0)
        log_warn("guard.requeue_after is %.0f s but guard.requeue_partitions lists no partition: no co-tenant "
                 "will be requeued (docs/security.md, \"A trainer's word\")",
                 cfg->requeue_after);
}

/* SIGHUP: settings that need no restart take effect; those read only at start keep their running
 * values, and the log names the ones the file changed. */
static void reload(daemon_t *d, const overrides_t *o)
{
    config_t cfg;
    char err[1024];
    if (load_config(d, o, &cfg, err, sizeof err) < 0) {
        log_err("reload refused, keeping the running configuration: %s", err);
        return;
    }
    char changed[512];
    int n = config_changed_at_start(&d->cfg, &cfg, changed, sizeof changed);
    if (n > 0)
        log_warn("reload: %s take%s effect at the next restart", changed, n == 1 ? "s" : "");
    config_keep_at_start(&cfg, &d->cfg);
    bool push_changed = strcmp(cfg.push_url, d->cfg.push_url) != 0 || cfg.push_interval != d->cfg.push_interval;
    cfg.watchdog_interval = d->cfg.watchdog_interval;
    d->cfg = cfg;
    /* Guards keep what they learned; their parameters and budgets follow the file. */
    for (job_t *j = d->jobs; j; j = j->next) {
        guard_params_t params = cfg.guard;
        params.budget = job_budget(d, j);
        guard_set_params(&j->guard, &params, clock_now_mono());
    }
    cotenants_update(d, clock_now_mono());
    if (push_changed) {
        if (d->pusher)
            pusher_stop(d->pusher);
        d->pusher = NULL;
        if (cfg.push_url[0]) {
            d->pusher = pusher_start(cfg.push_url, d->hostname, cfg.push_interval, err, sizeof err);
            if (!d->pusher)
                log_err("metrics push disabled: %s", err);
        }
    }
    warn_inert_settings(&d->cfg);
    log_info("configuration reloaded from %s", d->config_path);
}

static void notify_status(const daemon_t *d)
{
    int jobs = 0, running = 0;
    for (const job_t *j = d->jobs; j; j = j->next)
        jobs++;
    for (const run_t *r = d->runs; r; r = r->next)
        running += r->state == RUN_RUNNING;
    sd_notifyf(0, "STATUS=%d job%s, %d run%s running, %d client%s", jobs, jobs == 1 ? "" : "s", running,
               running == 1 ? "" : "s", d->nclients, d->nclients == 1 ? "" : "s");
}

static int setup_fds(daemon_t *d, char *err, size_t errlen)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    d->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    d->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    d->output_pause_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    d->throttle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (d->signal_fd < 0 || d->timer_fd < 0 || d->inotify_fd < 0 || d->output_pause_fd < 0 || d->throttle_fd < 0 ||
        d->epoll_fd < 0) {
        snprintf(err, errlen, "cannot set up the event loop: %s", strerror(errno));
        return -1;
    }
    /* One tick a second drives timeouts, liveness, the watchdog and metrics. */
    struct itimerspec tick = {.it_interval = {1, 0}, .it_value = {1, 0}};
    timerfd_settime(d->timer_fd, 0, &tick, NULL);
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.u64 = EV_SIGNAL;
    epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->signal_fd, &ev);
    ev.data.u64 = EV_TIMER;
    epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->timer_fd, &ev);
    ev.data.u64 = EV_OUTPUT_PAUSE;
    epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->output_pause_fd, &ev);
    ev.data.u64 = EV_THROTTLE;
    epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->throttle_fd, &ev);
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u64 = EV_INOTIFY;
    epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->inotify_fd, &ev);
    return 0;
}

/* Runs print a line per step; waking for each would cost more than the lines are worth. After
 * reading output, inotify is ignored for OUTPUT_PAUSE_MS (the kernel merges the events meanwhile),
 * so output wakes the daemon a few times a second however many runs write. */
enum { OUTPUT_PAUSE_MS = 250 };

static void pause_output_events(daemon_t *d)
{
    struct itimerspec once = {.it_value = {0, OUTPUT_PAUSE_MS * 1000000L}};
    timerfd_settime(d->output_pause_fd, 0, &once, NULL);
}

static void resume_output_events(daemon_t *d)
{
    uint64_t expirations;
    if (read(d->output_pause_fd, &expirations, sizeof expirations) < 0)
        return;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = EV_INOTIFY};
    epoll_ctl(d->epoll_fd, EPOLL_CTL_MOD, d->inotify_fd, &ev);
}

static void on_inotify(daemon_t *d)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(d->inotify_fd, buf, sizeof buf)) > 0)
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            run_on_inotify(d, ev->wd);
            p += sizeof *ev + ev->len;
        }
    pause_output_events(d);
}

static void on_tick(daemon_t *d, double *next_push, double *next_watchdog)
{
    uint64_t expirations;
    if (read(d->timer_fd, &expirations, sizeof expirations) < 0)
        return;
    control_tick(d);
    runs_tick(d);
    runs_expire(d);
    progress_tick(d);
    accounting_tick(d, clock_now_mono());
    cotenants_watch(d, clock_now_mono());
    /* after the watch: the news it noted */
    ending_tick(d, clock_now_mono());
    harvest_gate_tick(d, clock_now_mono()); /* first: it sees a hold the escalation may let go */
    escalation_tick(d, clock_now_mono());
    time_credit_tick(d, clock_now_mono());
    double now = clock_now_mono();
    if (d->cfg.watchdog_interval > 0 && now >= *next_watchdog) {
        sd_notify(0, "WATCHDOG=1");
        *next_watchdog = now + d->cfg.watchdog_interval / 2;
    }
    if (now >= *next_push) {
        metrics_publish(d);
        notify_status(d);
        *next_push = now + d->cfg.push_interval;
    }
}

static void on_throttle_timer(daemon_t *d)
{
    uint64_t expirations;
    if (read(d->throttle_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        return;
    cotenants_tick(d, clock_now_mono());
    ending_tick(d, clock_now_mono()); /* Slurm's answer, when it is asked whether a co-tenant ends */
}

static void on_signal(daemon_t *d, const overrides_t *o)
{
    struct signalfd_siginfo si;
    while (read(d->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGHUP) {
            sd_notify(0, "RELOADING=1");
            reload(d, o);
            sd_notify(0, "READY=1");
        } else {
            log_info("signal %d: saving state and exiting", (int)si.ssi_signo);
            d->stopping = true;
        }
    }
}

static void run_loop(daemon_t *d, const overrides_t *o)
{
    double next_push = clock_now_mono() + d->cfg.push_interval, next_watchdog = 0;
    struct epoll_event events[64];
    while (!d->stopping) {
        int n = epoll_wait(d->epoll_fd, events, 64, -1);
        if (n < 0 && errno != EINTR) {
            log_err("epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            uint64_t tag = events[i].data.u64;
            if (tag == EV_LISTEN)
                control_accept(d);
            else if (tag == EV_SIGNAL)
                on_signal(d, o);
            else if (tag == EV_TIMER)
                on_tick(d, &next_push, &next_watchdog);
            else if (tag == EV_INOTIFY)
                on_inotify(d);
            else if (tag == EV_OUTPUT_PAUSE)
                resume_output_events(d);
            else if (tag == EV_THROTTLE)
                on_throttle_timer(d);
            else if (tag == EV_GPU)
                progress_gpu_event(d);
            else if (tag == EV_CLIENT_RATE)
                control_rate_timer(d);
            else if (tag >= EV_CLIENT_BASE)
                control_client_event(d, (unsigned)(tag - EV_CLIENT_BASE), events[i].events);
            else if (tag >= EV_RUN_BASE) {
                run_t *r = run_find(d, (int)(tag - EV_RUN_BASE));
                if (r && r->state == RUN_RUNNING)
                    run_ended(d, r);
            }
        }
        state_save_if_dirty(d);
    }
}

static int prepare_state_dir(const char *dir, char *err, size_t errlen)
{
    /* 0711: users pass through to their runs' output (runs/UID/), and list nothing; the state
     * file is the daemon's alone (0600). */
    if (mkdir(dir, 0711) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create state directory %.400s: %s", dir, strerror(errno));
        return -1;
    }
    chmod(dir, 0711); /* an older version's 0750, or a umask's 0700, would keep users from runs/ */
    if (access(dir, W_OK) < 0) {
        snprintf(err, errlen, "cannot write to state directory %.400s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static void shutdown_daemon(daemon_t *d)
{
    control_stop_listening(d);
    control_close_all(d);
    progress_stop(d);
    cotenants_shutdown(d);
    harvest_gate_shutdown(d);
    state_save(d);
    if (d->pusher)
        pusher_stop(d->pusher);
    state_clear(d);
    topo_free(d->topo);
    close(d->epoll_fd);
    close(d->signal_fd);
    close(d->timer_fd);
    close(d->inotify_fd);
    close(d->output_pause_fd);
    close(d->throttle_fd);
}

/* The command line: 0 to go on, else the exit status (help printed, or a usage error). */
typedef struct cmdline {
    overrides_t o;
    bool foreground, check_only;
} cmdline_t;

static int parse_args(daemon_t *d, cmdline_t *cl, int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"socket", required_argument, NULL, 's'},
        {"state-dir", required_argument, NULL, 'd'},
        {"topology", required_argument, NULL, 't'},
        {"foreground", no_argument, NULL, 'f'},
        {"check-config", no_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    snprintf(d->config_path, sizeof d->config_path, "%s", CONFIG_DEFAULT_PATH);
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 'c':
            snprintf(d->config_path, sizeof d->config_path, "%s", optarg);
            d->config_required = true;
            break;
        case 's': cl->o.socket = optarg; break;
        case 'd': cl->o.state_dir = optarg; break;
        case 't': cl->o.topology = optarg; break;
        case 'f': cl->foreground = true; break;
        case 'k': cl->check_only = true; break;
        case 'h': usage(stdout); return -1;
        case 'V': printf("coschedd %s\n", COSCHED_VERSION_STRING); return -1;
        default:
            fprintf(stderr, "coschedd: unknown or incomplete option '%s'\nTry 'coschedd --help'.\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "coschedd: unexpected argument '%s'\nTry 'coschedd --help'.\n", argv[optind]);
        return 2;
    }
    return 0;
}

/* Everything between a valid configuration and the first request: topology, state directory,
 * descriptors and socket, the state restored, runs and co-tenants taken over again. */
static int start(daemon_t *d, char *err, size_t errlen)
{
    uint64_t watchdog_usec = 0;
    if (sd_watchdog_enabled(0, &watchdog_usec) > 0)
        d->cfg.watchdog_interval = (double)watchdog_usec / 1e6;
    gethostname(d->hostname, sizeof d->hostname - 1);
    d->started = clock_now_unix();
    d->guard_share = 1;
    d->listen_fd = d->throttle_fd = -1;
    d->topo = topo_load(topo_source_from_env(d->cfg.topology), err, errlen);
    if (!d->topo || prepare_state_dir(d->cfg.state_dir, err, errlen) < 0 ||
        (d->state_lock_fd = state_lock(d->cfg.state_dir, err, errlen)) < 0 || setup_fds(d, err, errlen) < 0 ||
        control_listen(d, err, errlen) < 0)
        return -1;
    harvest_gate_init(&d->gate);
    state_restore(d);
    runs_reconcile(d);
    cotenants_init(d);
    cotenants_adopt_runs(d);
    cotenants_update(d, clock_now_mono());
    state_save(d);
    return 0;
}

/* After daemon(): a signalfd watched by epoll wakes the waiters of the process that added it to
 * epoll, the parent, which is gone; the child's SIGTERM would be pending and never seen. */
static int renew_signal_fd(daemon_t *d, char *err, size_t errlen)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, d->signal_fd, NULL);
    close(d->signal_fd);
    d->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_SIGNAL};
    if (d->signal_fd < 0 || epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->signal_fd, &ev) < 0) {
        snprintf(err, errlen, "cannot watch signals after detaching: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The threads come after daemon(): a fork keeps only the thread that calls it. */
static void start_threads(daemon_t *d)
{
    char err[1024];
    progress_start(d);
    if (d->gpus) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_GPU};
        epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, gpu_sampler_fd(d->gpus), &ev);
    }
    for (job_t *j = d->jobs; j; j = j->next)
        progress_choose_source(d, j);
    cotenants_update(d, clock_now_mono());
    if (d->cfg.push_url[0]) {
        d->pusher = pusher_start(d->cfg.push_url, d->hostname, d->cfg.push_interval, err, sizeof err);
        if (!d->pusher)
            log_err("metrics push disabled: %s", err);
    }
}

int main(int argc, char **argv)
{
    static daemon_t daemon_state;
    daemon_t *d = &daemon_state;
    cmdline_t cl = {0};
    int rc = parse_args(d, &cl, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    log_init();
    char err[1024];
    if (load_config(d, &cl.o, &d->cfg, err, sizeof err) < 0) {
        fprintf(stderr, "coschedd: %s\n", err);
        return 1;
    }
    if (cl.check_only) {
        printf("coschedd: configuration %s is valid\n", d->config_path);
        return 0;
    }
    if (start(d, err, sizeof err) < 0) {
        log_err("%s", err);
        return 1;
    }
    bool under_systemd = getenv("NOTIFY_SOCKET") || getenv("INVOCATION_ID");
    if (!cl.foreground && !under_systemd) {
        if (daemon(0, 1) < 0) {
            log_err("cannot detach: %s", strerror(errno));
            return 1;
        }
        if (renew_signal_fd(d, err, sizeof err) < 0) {
            log_err("%s", err);
            return 1;
        }
    }
    state_lock_record_pid(d->state_lock_fd);
    start_threads(d);
    log_info("ready on %s (topology: %s, %d NUMA domains, %d GPUs; state in %s)",
             d->listen_from_systemd ? "the socket systemd passed" : d->cfg.socket_path, d->topo->source, d->topo->nnuma,
             d->topo->ngpus, d->cfg.state_dir);
    warn_inert_settings(&d->cfg);
    sd_notify(0, "READY=1");
    notify_status(d);
    run_loop(d, &cl.o);
    sd_notify(0, "STOPPING=1");
    shutdown_daemon(d);
    log_info("stopped");
    return 0;
}
