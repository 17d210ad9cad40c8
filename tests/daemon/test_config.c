/* test_config: coschedd's YAML settings — defaults, a full file, every kind of bad file refused
 * at its FILE:LINE:COL with the config untouched, operator names resolved, and who is an operator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "throttle.h"

static char tmpdir[4096];
static char errbuf[1024];

/* Write text to a file in the test's temporary directory; the path lives until the next call. */
static const char *write_yaml(const char *text)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/coschedd.yaml", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
    return path;
}

/* A config that is not the defaults, so that "unchanged" cannot pass by resetting to them. */
static void non_default_config(config_t *cfg)
{
    config_defaults(cfg);
    snprintf(cfg->policy, sizeof cfg->policy, "shared");
    cfg->slowdown_budget = 0.25;
    cfg->operator_uids[0] = 4242;
    cfg->n_operator_uids = 1;
}

/* Load text; it must be refused with "PATH:LINE:COL: ..." containing what, and cfg must be intact. */
static void expect_refused(const char *text, const char *line_col, const char *what)
{
    config_t cfg, before;
    non_default_config(&cfg);
    memcpy(&before, &cfg, sizeof cfg);
    const char *path = write_yaml(text);
    errbuf[0] = '\0';
    int rc = config_load(&cfg, path, true, errbuf, sizeof errbuf);
    char prefix[4300];
    snprintf(prefix, sizeof prefix, "%s:%s: ", path, line_col);
    if (rc == 0 || strncmp(errbuf, prefix, strlen(prefix)) != 0 || !strstr(errbuf, what))
        fail_msg("for file\n%s\nexpected an error starting '%s' and containing '%s', got rc %d: '%s'", text, prefix,
                 what, rc, errbuf);
    assert_memory_equal(&cfg, &before, sizeof cfg);
}

static int make_tmpdir(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/test_config.XXXXXX", base);
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/coschedd.yaml", tmpdir);
    unlink(path);
    return rmdir(tmpdir);
}

/* ---- defaults and good files ---- */

/* autoreport.dir's default: PREFIX/lib/cosched/autoreport of the build (daemon/meson.build). */
static bool installed_autoreport_dir(const char *dir)
{
    const char *tail = "/lib/cosched/autoreport";
    size_t n = strlen(dir), t = strlen(tail);
    return dir[0] == '/' && n > t && strcmp(dir + n - t, tail) == 0;
}

static void defaults_are_the_documented_values(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    assert_string_equal(cfg.socket_path, "/run/coschedd/coschedd.sock");
    assert_string_equal(cfg.state_dir, "/var/lib/coschedd");
    assert_string_equal(cfg.topology, "");
    assert_string_equal(cfg.policy, "exclusive");
    assert_int_equal(cfg.n_operator_uids, 0);
    assert_int_equal(cfg.n_operator_gids, 0);
    assert_true(cfg.slowdown_budget == 0.05);
    assert_int_equal(cfg.baseline_steps, 20);
    assert_int_equal(cfg.window_steps, 50);
    assert_string_equal(cfg.push_url, "");
    assert_true(cfg.push_interval == 15);
    assert_string_equal(cfg.textfile, "");
    assert_true(cfg.client_timeout == 5);
    assert_int_equal(cfg.connections_per_user, 64);
    assert_int_equal(cfg.waiting_per_user, 192);
    assert_true(cfg.requests_per_user == 5000);
    assert_true(cfg.watchdog_interval == 0);
    assert_true(cfg.guard_enabled);
    assert_int_equal(cfg.guard_knobs, ((1u << KNOB_COUNT) - 1) & ~(1u << KNOB_CORES)); /* cores: asked for */
    assert_true(cfg.duty_period == 0.1);
    assert_true(cfg.requeue_after == 0);
    assert_int_equal(cfg.n_requeue_partitions, 0); /* no partition opted in */
    assert_int_equal(cfg.requeues_per_owner, 10);
    assert_string_equal(cfg.scontrol, "scontrol");
    assert_int_equal(cfg.guard.min_samples, 8);
    assert_int_equal(cfg.guard.baseline_steps, 20);
    assert_true(cfg.guard.baseline_max_cost == 0.02);
    assert_true(cfg.run_retention == 604800);
    assert_int_equal(cfg.n_run_keep_env, 0);
    assert_int_equal(cfg.progress_source, PROGRESS_AUTO);
    assert_int_equal(cfg.n_partitions, 0);
    assert_true(cfg.gpu_window == 1 && cfg.gpu_idle_below == 0.02 && cfg.gpu_retry == 30);
    assert_string_equal(cfg.nvml_library, "");
    assert_true(cfg.autoreport_enabled);
    assert_int_equal(cfg.n_autoreport_partitions, 0);
    assert_true(installed_autoreport_dir(config_autoreport_dir(&cfg)));
    assert_true(config_autoreport_default(&cfg, NULL) && config_autoreport_default(&cfg, "gpu"));
    assert_int_equal(config_validate(&cfg, errbuf, sizeof errbuf), 0);
}

static void autoreport_per_site_and_partition(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    const char *text = "autoreport:\n"
                       "  partitions:\n"
                       "    gpu: true\n"
                       "    cpu: false\n"
                       "  dir: /opt/cosched/autoreport\n";
    assert_int_equal(config_load(&cfg, write_yaml(text), true, errbuf, sizeof errbuf), 0);
    assert_int_equal(cfg.n_autoreport_partitions, 2);
    assert_true(config_autoreport_default(&cfg, "gpu"));
    assert_false(config_autoreport_default(&cfg, "cpu"));
    assert_true(config_autoreport_default(&cfg, "other"));
    assert_true(config_autoreport_default(&cfg, NULL));
    assert_string_equal(config_autoreport_dir(&cfg), "/opt/cosched/autoreport");
    /* The one line that turns it off turns it off everywhere, whatever the partitions say. */
    assert_int_equal(config_load(&cfg, write_yaml("autoreport:\n  enabled: false\n"), true, errbuf, sizeof errbuf), 0);
    assert_false(config_autoreport_default(&cfg, "gpu"));
    assert_false(config_autoreport_default(&cfg, NULL));
    assert_int_equal(config_load(&cfg, write_yaml("autoreport:\n  partitions: ~\n  dir: \"\"\n"), true, errbuf,
                                 sizeof errbuf),
                     0);
    assert_int_equal(cfg.n_autoreport_partitions, 0);
    assert_true(installed_autoreport_dir(config_autoreport_dir(&cfg)));
    expect_refused("autoreport:\n  enabled: yes\n", "2:12", "autoreport.enabled must be true or false");
    expect_refused("autoreport:\n  partitions:\n    gpu: gpu\n", "3:10", "autoreport.partitions must be true or false");
    expect_refused("autoreport:\n  partitions:\n    gpu: true\n    gpu: false\n", "4:5",
                   "autoreport.partitions: partition 'gpu' is given twice");
    expect_refused("autoreport:\n  partitions:\n    a/b: true\n", "3:5", "'a/b' is not a partition name");
    expect_refused("autoreport:\n  partitions: [gpu]\n", "2:15",
                   "autoreport.partitions must be a mapping of partition names to true or false");
    expect_refused("autoreport:\n  dir: lib/cosched\n", "2:8", "autoreport.dir 'lib/cosched' must be an absolute path");
    expect_refused("autoreport:\n  path: /x\n", "2:3", "unknown key 'path' in 'autoreport'");
}

static void progress_sources_per_site_and_partition(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    const char *text = "progress:\n"
                       "  source: steps\n"
                       "  partitions:\n"
                       "    gpu: gpu\n"
                       "    cpu-long: pmu\n"
                       "  gpu_window: 0.5\n"
                       "  gpu_idle_below: 0.1\n"
                       "  gpu_retry: 5\n"
                       "  nvml_library: /opt/nvidia/lib/libnvidia-ml.so.1\n";
    assert_int_equal(config_load(&cfg, write_yaml(text), true, errbuf, sizeof errbuf), 0);
    assert_int_equal(cfg.progress_source, PROGRESS_STEPS);
    assert_int_equal(cfg.n_partitions, 2);
    assert_int_equal(config_progress_default(&cfg, "gpu"), PROGRESS_GPU);
    assert_int_equal(config_progress_default(&cfg, "cpu-long"), PROGRESS_PMU);
    assert_int_equal(config_progress_default(&cfg, "other"), PROGRESS_STEPS);
    assert_int_equal(config_progress_default(&cfg, NULL), PROGRESS_STEPS);
    assert_true(cfg.gpu_window == 0.5 && cfg.gpu_idle_below == 0.1 && cfg.gpu_retry == 5);
    assert_string_equal(cfg.nvml_library, "/opt/nvidia/lib/libnvidia-ml.so.1");
    assert_true(config_partition_valid("a100_x4.long-1"));
    assert_false(config_partition_valid("a b"));
    assert_false(config_partition_valid(""));
    expect_refused("progress:\n  source: gpus\n", "2:11", "progress.source 'gpus' is not a progress source");
    expect_refused("progress:\n  partitions:\n    gpu: fast\n", "3:10", "'fast' is not a progress source");
    expect_refused("progress:\n  partitions:\n    gpu: gpu\n    gpu: pmu\n", "4:5", "partition 'gpu' is given twice");
    expect_refused("progress:\n  partitions:\n    a/b: gpu\n", "3:5", "'a/b' is not a partition name");
    expect_refused("progress:\n  partitions: [gpu]\n", "2:15", "must be a mapping of partition names");
    expect_refused("progress:\n  gpu_window: 0.1\n", "2:15", "progress.gpu_window 0.1 is out of range");
}

static void a_full_file_sets_every_key(void **state)
{
    (void)state;
    const char *text = "# every key, none at its default\n"
                       "socket: /run/test/c.sock\n"
                       "state_dir: /var/tmp/coschedd\n"
                       "topology: \"/etc/cosched/node.xml\"\n"
                       "policy: l3\n"
                       "operators:\n"
                       "  uids: [1000, root]\n"
                       "  groups:\n"
                       "    - 1001\n"
                       "    - nogroup\n"
                       "slowdown_budget: 0.1\n"
                       "stats:\n"
                       "  baseline_steps: 30\n"
                       "  window_steps: 100\n"
                       "metrics:\n"
                       "  push_url: http://pushgw.example:9091\n"
                       "  push_interval: 2.5\n"
                       "  textfile: /var/lib/node_exporter/coschedd.prom\n"
                       "client_timeout: 0.5\n"
                       "private_jobs: redact\n"
                       "limits:\n"
                       "  connections_per_user: 8\n"
                       "  waiting_per_user: 0\n"
                       "  requests_per_second_per_user: 12.5\n"
                       "guard:\n"
                       "  enabled: false\n"
                       "  knobs: [cfs-quota, sigstop]\n"
                       "  resctrl_root: /tmp/resctrl\n"
                       "  cgroup2_root: none\n"
                       "  cgroup1_root: /tmp/cg1\n"
                       "  duty_period: 0.2\n"
                       "  subtree: cosched-test\n"
                       "  margin: 0.01\n"
                       "  min_samples: 5\n"
                       "  settle_steps: 2\n"
                       "  max_window: 32\n"
                       "  decrease: 0.6\n"
                       "  increase: 0.05\n"
                       "  min_share: 0.1\n"
                       "  relax_interval: 3\n"
                       "  max_backoff: 8\n"
                       "  baseline_steps: 15\n"
                       "  baseline_max_age: 120\n"
                       "  baseline_max_cost: 0.01\n"
                       "  pause_timeout: 4\n"
                       "  idle_release: 20\n"
                       "  requeue_after: 900\n"
                       "  requeue_partitions: [harvest, preempt]\n"
                       "  requeues_per_owner: 3\n"
                       "  scontrol: /usr/local/bin/scontrol\n"
                       "  slurm_node: jwb0042\n"
                       "runs:\n"
                       "  retention: 3600\n"
                       "  keep_environment: [http_proxy, ASAN_OPTIONS]\n";
    config_t cfg;
    config_defaults(&cfg);
    assert_int_equal(config_load(&cfg, write_yaml(text), true, errbuf, sizeof errbuf), 0);
    assert_true(cfg.requeue_after == 900);
    assert_int_equal(cfg.n_requeue_partitions, 2);
    assert_string_equal(cfg.requeue_partitions[1], "preempt");
    assert_int_equal(cfg.requeues_per_owner, 3);
    assert_string_equal(cfg.scontrol, "/usr/local/bin/scontrol");
    assert_string_equal(cfg.slurm_node, "jwb0042");
    assert_string_equal(cfg.socket_path, "/run/test/c.sock");
    assert_string_equal(cfg.state_dir, "/var/tmp/coschedd");
    assert_string_equal(cfg.topology, "/etc/cosched/node.xml");
    assert_string_equal(cfg.policy, "l3");
    assert_int_equal(cfg.n_operator_uids, 2);
    assert_int_equal(cfg.operator_uids[0], 1000);
    assert_int_equal(cfg.operator_uids[1], 0);
    assert_int_equal(cfg.n_operator_gids, 2);
    assert_int_equal(cfg.operator_gids[0], 1001);
    struct group *nogroup = getgrnam("nogroup");
    assert_non_null(nogroup);
    assert_int_equal(cfg.operator_gids[1], nogroup->gr_gid);
    assert_true(cfg.slowdown_budget == 0.1);
    assert_int_equal(cfg.baseline_steps, 30);
    assert_int_equal(cfg.window_steps, 100);
    assert_string_equal(cfg.push_url, "http://pushgw.example:9091");
    assert_true(cfg.push_interval == 2.5);
    assert_string_equal(cfg.textfile, "/var/lib/node_exporter/coschedd.prom");
    assert_true(cfg.client_timeout == 0.5);
    assert_int_equal(cfg.private_jobs, PRIVATE_JOBS_REDACT);
    assert_int_equal(cfg.connections_per_user, 8);
    assert_int_equal(cfg.waiting_per_user, 0);
    assert_true(cfg.requests_per_user == 12.5);
    assert_false(cfg.guard_enabled);
    assert_int_equal(cfg.guard_knobs, (1u << KNOB_CFS_QUOTA) | (1u << KNOB_SIGSTOP));
    assert_string_equal(cfg.resctrl_root, "/tmp/resctrl");
    assert_string_equal(cfg.cgroup2_root, "none");
    assert_string_equal(cfg.cgroup1_root, "/tmp/cg1");
    assert_true(cfg.duty_period == 0.2);
    assert_string_equal(cfg.guard_subtree, "cosched-test");
    const guard_params_t *g = &cfg.guard;
    assert_true(g->margin == 0.01 && g->decrease == 0.6 && g->increase == 0.05 && g->min_share == 0.1);
    assert_true(g->relax_interval == 3 && g->max_backoff == 8 && g->baseline_max_age == 120);
    assert_true(g->baseline_max_cost == 0.01 && g->pause_timeout == 4 && g->idle_release == 20);
    assert_int_equal(g->min_samples, 5);
    assert_int_equal(g->settle_steps, 2);
    assert_int_equal(g->max_window, 32);
    assert_int_equal(g->baseline_steps, 15);
    assert_true(cfg.run_retention == 3600);
    assert_int_equal(cfg.n_run_keep_env, 2);
    assert_string_equal(cfg.run_keep_env[0], "http_proxy");
    assert_string_equal(cfg.run_keep_env[1], "ASAN_OPTIONS");
    assert_int_equal(config_validate(&cfg, errbuf, sizeof errbuf), 0);
}

static void bad_runs_settings_are_refused_where_written(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    cfg.n_run_keep_env = 1;
    assert_int_equal(config_load(&cfg, write_yaml("runs:\n  keep_environment: ~\n"), true, errbuf, sizeof errbuf), 0);
    assert_int_equal(cfg.n_run_keep_env, 0); /* null: none, as for the operators' lists */
    expect_refused("runs:\n  retention: -1\n", "2:14", "runs.retention -1 is out of range");
    expect_refused("runs:\n  keep_environment: [PATH, 1BAD]\n", "2:28",
                   "runs.keep_environment: '1BAD' is not an environment variable name");
    expect_refused("runs:\n  keep_environment: [\"A=B\"]\n", "2:22", "'A=B' is not an environment variable name");
    expect_refused("runs:\n  keep_environment: PATH\n", "2:21", "must be a list of environment variable names");
}

static void bad_limits_settings_are_refused_where_written(void **state)
{
    (void)state;
    expect_refused("limits:\n  connections_per_user: 0\n", "2:25",
                   "limits.connections_per_user 0 is out of range (1 to 1024)");
    expect_refused("limits:\n  connections_per_user: 2000\n", "2:25",
                   "limits.connections_per_user 2000 is out of range");
    expect_refused("limits:\n  connections_per_user: 6.5\n", "2:25",
                   "limits.connections_per_user must be a whole number, not '6.5'");
    expect_refused("limits:\n  waiting_per_user: -1\n", "2:21",
                   "limits.waiting_per_user -1 is out of range (0 to 1024)");
    expect_refused("limits:\n  requests_per_second_per_user: -5\n", "2:33",
                   "limits.requests_per_second_per_user -5 is out of range (0 to 1e+06)");
    expect_refused("limits:\n  requests_per_second_per_user: \"200\"\n", "2:33",
                   "limits.requests_per_second_per_user must be a number, not a quoted string");
    expect_refused("limits:\n  connections: 5\n", "2:3",
                   "unknown key 'connections' in 'limits'; valid keys are: connections_per_user, waiting_per_user, "
                   "requests_per_second_per_user");
    expect_refused("limits: 64\n", "1:9", "limits must be a mapping of keys, not a scalar");
    config_t cfg;
    config_defaults(&cfg);
    assert_int_equal(config_load(&cfg, write_yaml("limits:\n  requests_per_second_per_user: 0\n"), true, errbuf,
                                 sizeof errbuf),
                     0);
    assert_true(cfg.requests_per_user == 0); /* 0: no rate limit */
}

static void bad_guard_settings_are_refused_where_written(void **state)
{
    (void)state;
    expect_refused("guard:\n  enabled: yes please\n", "2:12", "guard.enabled must be true or false");
    expect_refused("guard:\n  knobs: [cfs-quota, turbo]\n", "2:22", "guard.knobs: 'turbo' is not a knob");
    expect_refused("guard:\n  knobs: []\n", "2:10", "guard.knobs must be a non-empty list");
    expect_refused("guard:\n  decrease: 1\n", "2:13", "guard.decrease 1 is out of range");
    expect_refused("guard:\n  min_samples: 2\n", "2:16", "guard.min_samples 2 is out of range");
    expect_refused("guard:\n  cgroup1_root: sys/fs/cgroup\n", "2:17",
                   "must be an absolute path, \"\" (find it) or none");
    expect_refused("guard:\n  turbo: true\n", "2:3", "unknown key 'turbo' in 'guard'");
    expect_refused("guard:\n  subtree: ../escape\n", "2:12", "may hold only letters, digits");
    config_t cfg;
    config_defaults(&cfg);
    cfg.guard.min_samples = 40;
    cfg.guard.max_window = 20;
    assert_int_equal(config_validate(&cfg, errbuf, sizeof errbuf), -1);
    assert_non_null(strstr(errbuf, "guard.min_samples (40) must not exceed guard.max_window (20)"));
}

static void the_packaged_example_holds_the_defaults(void **state)
{
    (void)state;
    const char *root = getenv("COSCHED_SOURCE_ROOT");
    if (!root)
        fail_msg("COSCHED_SOURCE_ROOT is not set (meson test sets it to the source tree)");
    char path[4200];
    snprintf(path, sizeof path, "%s/packaging/coschedd.yaml", root);
    config_t cfg, defaults;
    config_defaults(&defaults);
    memcpy(&cfg, &defaults, sizeof cfg);
    cfg.slowdown_budget = 1; /* so that "unchanged" cannot pass for "not read" */
    if (config_load(&cfg, path, true, errbuf, sizeof errbuf) != 0)
        fail_msg("%s", errbuf);
    assert_memory_equal(&cfg, &defaults, sizeof cfg);
}

static void a_file_overrides_only_the_keys_it_names(void **state)
{
    (void)state;
    config_t cfg;
    non_default_config(&cfg);
    assert_int_equal(config_load(&cfg, write_yaml("stats:\n  window_steps: 7\n"), true, errbuf, sizeof errbuf), 0);
    assert_int_equal(cfg.window_steps, 7);
    assert_int_equal(cfg.baseline_steps, 20);
    assert_string_equal(cfg.policy, "shared");
    assert_true(cfg.slowdown_budget == 0.25);
    assert_int_equal(cfg.n_operator_uids, 1);
}

static void empty_and_comment_only_files_keep_every_value(void **state)
{
    (void)state;
    const char *texts[] = {"", "# nothing set here\n\n", "---\n", "---\n# still nothing\n...\n"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        config_t cfg, before;
        non_default_config(&cfg);
        memcpy(&before, &cfg, sizeof cfg);
        if (config_load(&cfg, write_yaml(texts[i]), true, errbuf, sizeof errbuf) != 0)
            fail_msg("'%s' refused: %s", texts[i], errbuf);
        assert_memory_equal(&cfg, &before, sizeof cfg);
    }
}

static void null_strings_mean_empty(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    snprintf(cfg.push_url, sizeof cfg.push_url, "http://x:1");
    snprintf(cfg.textfile, sizeof cfg.textfile, "/x.prom");
    assert_int_equal(config_load(&cfg, write_yaml("metrics:\n  push_url: ~\n  textfile:\n"), true, errbuf,
                                 sizeof errbuf),
                     0);
    assert_string_equal(cfg.push_url, "");
    assert_string_equal(cfg.textfile, "");
}

static void empty_sections_and_lists_mean_none(void **state)
{
    (void)state;
    config_t cfg, before;
    non_default_config(&cfg);
    memcpy(&before, &cfg, sizeof cfg);
    assert_int_equal(config_load(&cfg, write_yaml("metrics:\nstats: ~\n"), true, errbuf, sizeof errbuf), 0);
    assert_memory_equal(&cfg, &before, sizeof cfg);
    assert_int_equal(config_load(&cfg, write_yaml("operators:\n  uids:\n"), true, errbuf, sizeof errbuf), 0);
    assert_int_equal(cfg.n_operator_uids, 0);
}

static void missing_file_is_an_error_only_when_required(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/no-such.yaml", tmpdir);
    config_t cfg, before;
    non_default_config(&cfg);
    memcpy(&before, &cfg, sizeof cfg);
    assert_int_equal(config_load(&cfg, path, false, errbuf, sizeof errbuf), 0);
    assert_memory_equal(&cfg, &before, sizeof cfg);
    assert_int_equal(config_load(&cfg, path, true, errbuf, sizeof errbuf), -1);
    assert_non_null(strstr(errbuf, path));
    assert_non_null(strstr(errbuf, "No such file"));
    assert_memory_equal(&cfg, &before, sizeof cfg);
}

static void a_directory_is_refused_even_when_optional(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    assert_int_equal(config_load(&cfg, tmpdir, false, errbuf, sizeof errbuf), -1);
    assert_non_null(strstr(errbuf, tmpdir));
    assert_non_null(strstr(errbuf, "Is a directory"));
}

/* ---- bad files: refused at the right place, config untouched ---- */

static void unknown_keys_are_named_with_the_valid_ones(void **state)
{
    (void)state;
    expect_refused("policy: shared\nsokcet: /run/x.sock\n", "2:1",
                   "unknown key 'sokcet'; valid keys are: socket, state_dir, topology, policy, operators, "
                   "slowdown_budget, stats, metrics, client_timeout");
    expect_refused("stats:\n  baseline_steps: 10\n  window: 5\n", "3:3",
                   "unknown key 'window' in 'stats'; valid keys are: baseline_steps, window_steps");
    expect_refused("operators:\n  users: [root]\n", "2:3", "valid keys are: uids, groups");
}

static void values_of_the_wrong_type_are_refused(void **state)
{
    (void)state;
    expect_refused("stats: 5\n", "1:8", "stats must be a mapping of keys, not a scalar");
    expect_refused("slowdown_budget: lots\n", "1:18", "slowdown_budget must be a number, not 'lots'");
    expect_refused("socket: [a, b]\n", "1:9", "socket must be a string, not a list");
    expect_refused("client_timeout: \"5\"\n", "1:17", "client_timeout must be a number, not a quoted string");
    expect_refused("client_timeout:\n", "1:16", "client_timeout must be a number, not empty");
    expect_refused("operators:\n  uids: root\n", "2:9", "operators.uids must be a list of user names or ids");
    expect_refused("operators:\n  groups: [[1]]\n", "2:12", "operators.groups: each entry must be a group");
    expect_refused("stats:\n  baseline_steps: 2.5\n", "2:19", "stats.baseline_steps must be a whole number");
    expect_refused("metrics:\n  push_interval: {a: 1}\n", "2:18",
                   "metrics.push_interval must be a number, not a mapping");
    expect_refused("- socket\n- policy\n", "1:1", "the file must be a mapping of keys");
    expect_refused("[1, 2]: x\n", "1:1", "a key must be a name, not a list");
}

/* The names topology/plan_policy.c's table knows, cores included. */
static void every_placement_policy_is_accepted(void **state)
{
    (void)state;
    static const char *const names[] = {"exclusive", "shared", "l3", "cores"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char text[64];
        snprintf(text, sizeof text, "policy: %s\n", names[i]);
        config_t cfg;
        config_defaults(&cfg);
        if (config_load(&cfg, write_yaml(text), true, errbuf, sizeof errbuf) != 0)
            fail_msg("policy %s refused: %s", names[i], errbuf);
        assert_string_equal(cfg.policy, names[i]);
        assert_int_equal(config_validate(&cfg, errbuf, sizeof errbuf), 0);
    }
}

static void values_out_of_range_are_refused(void **state)
{
    (void)state;
    expect_refused("slowdown_budget: 11\n", "1:18", "slowdown_budget 11 is out of range (more than 0 to 10)");
    expect_refused("slowdown_budget: 0\n", "1:18", "slowdown_budget 0 is out of range (more than 0 to 10)");
    expect_refused("slowdown_budget: -0.01\n", "1:18", "out of range");
    expect_refused("metrics:\n  push_interval: 0\n", "2:18", "metrics.push_interval 0 is out of range (more than 0");
    expect_refused("stats:\n  window_steps: -1\n", "2:17", "stats.window_steps -1 is out of range (1 to 1e+06)");
    expect_refused("client_timeout: 1e999\n", "1:17", "client_timeout must be a number, not '1e999'");
    expect_refused("policy: fair\n", "1:9", "policy 'fair' is not one of exclusive, shared, l3, cores");
    expect_refused("guard:\n  requeue_partitions: harvest\n", "2:23",
                   "guard.requeue_partitions must be a list of Slurm partition names");
    expect_refused("guard:\n  requeue_partitions: [ok, 'no way']\n", "2:28",
                   "guard.requeue_partitions: 'no way' is not a partition name");
    expect_refused("guard:\n  requeues_per_owner: 0\n", "2:23", "guard.requeues_per_owner 0 is out of range (1 to");
    expect_refused("private_jobs: yes-please\n", "1:15", "private_jobs 'yes-please' is not off, redact or hide");
    expect_refused("private_jobs: [hide]\n", "1:15", "private_jobs 'a list' is not off, redact or hide");
    char text[400];
    snprintf(text, sizeof text, "socket: /%0120d\n", 0);
    expect_refused(text, "1:9", "socket is too long (121 bytes, at most 107)");
    expect_refused("socket: \"/run/a\\0b\"\n", "1:9", "socket contains a NUL byte");
}

static void relative_paths_and_other_urls_are_refused_where_written(void **state)
{
    (void)state;
    expect_refused("socket: run/c.sock\n", "1:9", "socket 'run/c.sock' must be an absolute path");
    expect_refused("socket:\n", "1:8", "socket '' must be an absolute path");
    expect_refused("state_dir: var/lib\n", "1:12", "state_dir 'var/lib' must be an absolute path");
    expect_refused("metrics:\n  textfile: c.prom\n", "2:13", "metrics.textfile 'c.prom' must be an absolute path");
    expect_refused("metrics:\n  push_url: ftp://gw\n", "2:13",
                   "metrics.push_url 'ftp://gw' must start with http:// or https://");
}

static void duplicate_keys_are_refused(void **state)
{
    (void)state;
    expect_refused("policy: l3\nsocket: /a\npolicy: shared\n", "3:1", "duplicate key 'policy' (first given at line 1)");
    expect_refused("metrics:\n  textfile: /a.prom\n  textfile: /b.prom\n", "3:3", "duplicate key 'textfile'");
}

static void yaml_syntax_errors_carry_libyamls_problem_and_mark(void **state)
{
    (void)state;
    expect_refused("policy: shared\nsocket: [unterminated\n", "3:1",
                   "YAML syntax error: did not find expected ',' or ']' (while parsing a flow sequence at line 2 "
                   "column 9)");
    expect_refused("stats:\n  baseline_steps: 1\n window_steps: 2\n", "3:2",
                   "YAML syntax error: did not find expected key");
    expect_refused("policy: shared\ntopology: *nowhere\n", "2:11", "YAML syntax error: found undefined alias");
    expect_refused("policy: shared\nsocket: \xff\n", "2:9", "YAML syntax error: invalid leading UTF-8 octet");
    expect_refused("policy: shared\n---\npolicy: l3\n", "2:1", "a second YAML document starts here");
}

static void unknown_operator_names_are_refused_by_name(void **state)
{
    (void)state;
    expect_refused("operators:\n  uids: [root, no-such-user-cosched]\n", "2:16",
                   "operators.uids: no such user 'no-such-user-cosched'");
    expect_refused("operators:\n  groups:\n    - nogroup\n    - no-such-group-cosched\n", "4:7",
                   "operators.groups: no such group 'no-such-group-cosched'");
    expect_refused("operators:\n  uids: [4294967295]\n", "2:10", "no such user '4294967295'");
}

static void too_many_operators_are_refused(void **state)
{
    (void)state;
    char text[2048] = "operators:\n  uids: [";
    for (int i = 0; i <= CONFIG_MAX_OPERATORS; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%d", i ? ", " : "", 2000 + i);
    strcat(text, "]\n");
    expect_refused(text, "2:394", "operators.uids: more than 64 entries"); /* 9 + 64 * 6 + 1 */
}

/* ---- operator names and ids ---- */

static void operator_names_and_ids_are_resolved(void **state)
{
    (void)state;
    struct passwd *nobody = getpwnam("nobody");
    struct group *nogroup = getgrnam("nogroup");
    assert_non_null(nobody);
    assert_non_null(nogroup);
    uid_t nobody_uid = nobody->pw_uid;
    gid_t nogroup_gid = nogroup->gr_gid;
    config_t cfg;
    config_defaults(&cfg);
    const char *text = "operators:\n  uids: [root, nobody, 1234]\n  groups: [nogroup, 4321, root]\n";
    assert_int_equal(config_load(&cfg, write_yaml(text), true, errbuf, sizeof errbuf), 0);
    assert_int_equal(cfg.n_operator_uids, 3);
    assert_int_equal(cfg.operator_uids[0], 0);
    assert_int_equal(cfg.operator_uids[1], nobody_uid);
    assert_int_equal(cfg.operator_uids[2], 1234);
    assert_int_equal(cfg.n_operator_gids, 3);
    assert_int_equal(cfg.operator_gids[0], nogroup_gid);
    assert_int_equal(cfg.operator_gids[1], 4321);
    assert_int_equal(cfg.operator_gids[2], 0);

    /* A later file replaces the lists it names rather than appending to them. */
    assert_int_equal(config_load(&cfg, write_yaml("operators:\n  uids: []\n"), true, errbuf, sizeof errbuf), 0);
    assert_int_equal(cfg.n_operator_uids, 0);
    assert_int_equal(cfg.n_operator_gids, 3);
}

/* ---- cross-field checks ---- */

static void expect_invalid(const config_t *cfg, const char *what)
{
    errbuf[0] = '\0';
    if (config_validate(cfg, errbuf, sizeof errbuf) == 0 || !strstr(errbuf, what))
        fail_msg("expected validation to fail with '%s', got '%s'", what, errbuf);
}

static void validation_refuses_each_broken_rule(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    snprintf(cfg.policy, sizeof cfg.policy, "fair");
    expect_invalid(&cfg, "policy 'fair' is not one of exclusive, shared, l3, cores");

    config_defaults(&cfg);
    snprintf(cfg.socket_path, sizeof cfg.socket_path, "run/c.sock");
    expect_invalid(&cfg, "socket 'run/c.sock' must be an absolute path");

    config_defaults(&cfg);
    memset(cfg.socket_path, 'a', sizeof cfg.socket_path); /* no room left for the NUL */
    cfg.socket_path[0] = '/';
    expect_invalid(&cfg, "longer than the 107 bytes");
    cfg.socket_path[107] = '\0'; /* exactly 107 fits */
    assert_int_equal(config_validate(&cfg, errbuf, sizeof errbuf), 0);

    config_defaults(&cfg);
    snprintf(cfg.state_dir, sizeof cfg.state_dir, "state");
    expect_invalid(&cfg, "state_dir 'state' must be an absolute path");

    config_defaults(&cfg);
    cfg.push_interval = 0;
    expect_invalid(&cfg, "metrics.push_interval 0 must be more than 0 seconds");

    config_defaults(&cfg);
    cfg.requests_per_user = 0.4; /* a bucket of 0.8 never holds a token: every request would wait */
    expect_invalid(&cfg, "limits.requests_per_second_per_user 0.4 must be 0 (no limit) or at least 1");

    config_defaults(&cfg);
    cfg.client_timeout = -1;
    expect_invalid(&cfg, "client_timeout -1 must be more than 0 seconds");

    config_defaults(&cfg);
    cfg.baseline_steps = 0;
    expect_invalid(&cfg, "stats.baseline_steps (0)");

    config_defaults(&cfg);
    cfg.slowdown_budget = 10.5;
    expect_invalid(&cfg, "slowdown_budget 10.5 is out of range");

    config_defaults(&cfg);
    snprintf(cfg.push_url, sizeof cfg.push_url, "ftp://gw:9091");
    expect_invalid(&cfg, "metrics.push_url 'ftp://gw:9091' must start with http:// or https://");
    snprintf(cfg.push_url, sizeof cfg.push_url, "https://gw:9091");
    assert_int_equal(config_validate(&cfg, errbuf, sizeof errbuf), 0);

    config_defaults(&cfg);
    snprintf(cfg.textfile, sizeof cfg.textfile, "coschedd.prom");
    expect_invalid(&cfg, "metrics.textfile 'coschedd.prom' must be an absolute path");
}

/* ---- operators ---- */

static void root_is_always_an_operator(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    assert_true(config_is_operator(&cfg, 0, 0));
    assert_true(config_is_operator(&cfg, 0, 12345));
}

static void nobody_else_is_without_configuration(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    struct passwd *nobody = getpwnam("nobody");
    assert_non_null(nobody);
    assert_false(config_is_operator(&cfg, nobody->pw_uid, nobody->pw_gid));
    assert_false(config_is_operator(&cfg, 1000, 1000));
}

static void listed_uids_are_operators(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    cfg.operator_uids[cfg.n_operator_uids++] = 1000;
    cfg.operator_uids[cfg.n_operator_uids++] = 31337;
    assert_true(config_is_operator(&cfg, 31337, 31337));
    assert_false(config_is_operator(&cfg, 31338, 31337));
}

static void the_callers_primary_gid_makes_an_operator(void **state)
{
    (void)state;
    config_t cfg;
    config_defaults(&cfg);
    cfg.operator_gids[cfg.n_operator_gids++] = 5555;
    /* uid 54321 has no passwd entry: only the gid handed in (from SO_PEERCRED) can match */
    assert_true(config_is_operator(&cfg, 54321, 5555));
    assert_false(config_is_operator(&cfg, 54321, 5556));
}

static void groups_from_the_database_make_an_operator(void **state)
{
    (void)state;
    struct passwd *nobody = getpwnam("nobody");
    assert_non_null(nobody);
    uid_t uid = nobody->pw_uid;
    gid_t gid = nobody->pw_gid;
    config_t cfg;
    config_defaults(&cfg);
    cfg.operator_gids[cfg.n_operator_gids++] = gid;
    /* A caller whose process runs with another gid is still in its passwd group. */
    assert_true(config_is_operator(&cfg, uid, 54321));
    cfg.operator_gids[0] = 54320;
    assert_false(config_is_operator(&cfg, uid, 54321));
}

static void supplementary_groups_make_an_operator(void **state)
{
    (void)state;
    /* Find any user listed as a member of a group other than its passwd group. */
    char user[256] = "";
    gid_t member_of = 0;
    setgrent();
    for (struct group *gr; !user[0] && (gr = getgrent());) {
        for (char **m = gr->gr_mem; *m && !user[0]; m++) {
            struct passwd *pw = getpwnam(*m);
            if (pw && pw->pw_uid != 0 && pw->pw_gid != gr->gr_gid) {
                snprintf(user, sizeof user, "%s", *m);
                member_of = gr->gr_gid;
            }
        }
    }
    endgrent();
    if (!user[0])
        skip(); /* this machine's group file lists no supplementary members */
    struct passwd *pw = getpwnam(user);
    assert_non_null(pw);
    config_t cfg;
    config_defaults(&cfg);
    cfg.operator_gids[cfg.n_operator_gids++] = member_of;
    assert_true(config_is_operator(&cfg, pw->pw_uid, pw->pw_gid));
}

/* next: the running configuration with text read over it, as a reload reads the file. */
static void read_over(const config_t *running, config_t *next, const char *text)
{
    *next = *running;
    if (config_load(next, write_yaml(text), true, errbuf, sizeof errbuf) != 0)
        fail_msg("%s", errbuf);
}

/* A reload: the keys read only at start are named when the file changes them, and keep their
 * running values; every other key takes the file's. */
static void a_reload_names_the_keys_read_at_start_and_keeps_them(void **state)
{
    (void)state;
    config_t running, next;
    config_defaults(&running);
    snprintf(running.pmu_event, sizeof running.pmu_event, "task-clock");
    read_over(&running, &next, "progress:\n  pmu_event: instructions\n  source: pmu\nslowdown_budget: 0.2\n");
    char names[512];
    assert_int_equal(config_changed_at_start(&running, &next, names, sizeof names), 1);
    assert_string_equal(names, "progress.pmu_event");
    config_keep_at_start(&next, &running);
    assert_string_equal(next.pmu_event, "task-clock");
    assert_int_equal(next.progress_source, PROGRESS_PMU); /* reloadable keys follow the file */
    assert_true(next.slowdown_budget == 0.2);
    assert_int_equal(config_changed_at_start(&running, &next, names, sizeof names), 0);
    assert_string_equal(names, "");
}

static void a_reload_that_changes_only_reloadable_keys_names_none(void **state)
{
    (void)state;
    config_t running, next;
    config_defaults(&running);
    read_over(&running, &next,
              "policy: shared\nguard:\n  margin: 0.01\n  law: 1\nmetrics:\n  push_interval: 30\n"
              "autoreport:\n  enabled: false\n");
    char names[512] = "unset";
    assert_int_equal(config_changed_at_start(&running, &next, names, sizeof names), 0);
    assert_string_equal(names, "");
}

/* The list docs/coschedd.yaml.md gives under "Reloading", in the same order. */
static void every_key_read_at_start_is_named_in_the_documented_order(void **state)
{
    (void)state;
    config_t running, next;
    config_defaults(&running);
    read_over(&running, &next,
              "socket: /run/other.sock\nstate_dir: /var/lib/other\ntopology: /tmp/node.xml\n"
              "guard:\n  enabled: false\n  knobs: [freezer]\n  resctrl_root: none\n"
              "  cgroup2_root: /sys/fs/cgroup/x\n  cgroup1_root: none\n  duty_period: 0.5\n  subtree: other\n"
              "progress:\n  gpu_window: 2\n  gpu_retry: 5\n  nvml_library: /opt/libnvidia-ml.so\n"
              "  rocm_smi_library: /opt/librocm_smi64.so\n  pmu_event: task-clock\n");
    char names[512];
    assert_int_equal(config_changed_at_start(&running, &next, names, sizeof names), 15);
    assert_string_equal(names, "socket, state_dir, topology, guard.enabled, guard.knobs, guard.resctrl_root, "
                               "guard.cgroup2_root, guard.cgroup1_root, guard.duty_period, guard.subtree, "
                               "progress.gpu_window, progress.gpu_retry, progress.nvml_library, "
                               "progress.rocm_smi_library and progress.pmu_event");
    config_keep_at_start(&next, &running);
    assert_int_equal(config_changed_at_start(&running, &next, names, sizeof names), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_are_the_documented_values),
        cmocka_unit_test(a_full_file_sets_every_key),
        cmocka_unit_test(progress_sources_per_site_and_partition),
        cmocka_unit_test(autoreport_per_site_and_partition),
        cmocka_unit_test(the_packaged_example_holds_the_defaults),
        cmocka_unit_test(a_file_overrides_only_the_keys_it_names),
        cmocka_unit_test(empty_and_comment_only_files_keep_every_value),
        cmocka_unit_test(null_strings_mean_empty),
        cmocka_unit_test(empty_sections_and_lists_mean_none),
        cmocka_unit_test(missing_file_is_an_error_only_when_required),
        cmocka_unit_test(a_directory_is_refused_even_when_optional),
        cmocka_unit_test(unknown_keys_are_named_with_the_valid_ones),
        cmocka_unit_test(values_of_the_wrong_type_are_refused),
        cmocka_unit_test(every_placement_policy_is_accepted),
        cmocka_unit_test(values_out_of_range_are_refused),
        cmocka_unit_test(relative_paths_and_other_urls_are_refused_where_written),
        cmocka_unit_test(duplicate_keys_are_refused),
        cmocka_unit_test(yaml_syntax_errors_carry_libyamls_problem_and_mark),
        cmocka_unit_test(unknown_operator_names_are_refused_by_name),
        cmocka_unit_test(too_many_operators_are_refused),
        cmocka_unit_test(operator_names_and_ids_are_resolved),
        cmocka_unit_test(validation_refuses_each_broken_rule),
        cmocka_unit_test(bad_limits_settings_are_refused_where_written),
        cmocka_unit_test(bad_guard_settings_are_refused_where_written),
        cmocka_unit_test(bad_runs_settings_are_refused_where_written),
        cmocka_unit_test(root_is_always_an_operator),
        cmocka_unit_test(nobody_else_is_without_configuration),
        cmocka_unit_test(listed_uids_are_operators),
        cmocka_unit_test(the_callers_primary_gid_makes_an_operator),
        cmocka_unit_test(groups_from_the_database_make_an_operator),
        cmocka_unit_test(supplementary_groups_make_an_operator),
        cmocka_unit_test(a_reload_names_the_keys_read_at_start_and_keeps_them),
        cmocka_unit_test(a_reload_that_changes_only_reloadable_keys_names_none),
        cmocka_unit_test(every_key_read_at_start_is_named_in_the_documented_order),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
