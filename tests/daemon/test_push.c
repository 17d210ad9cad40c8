/* test_push: snapshots reach a real prometheus-pushgateway with job="coschedd" and the instance
 * label, a dead or refusing collector counts failures and backs off, and textfiles are atomic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "push.h"

/* Waits are bounded so that a broken push fails the test instead of hanging it; the bound is
 * generous for loaded CI machines and is never asserted on. */
#define WAIT_LIMIT_S 60

static char tmpdir[4096];
static char errbuf[1024];
static pid_t gateway_pid = -1;
static int gateway_port;
static char gateway_url[64];
static char gateway_problem[512] = "not started";

/* ---- helpers: ports, HTTP GET, the gateway's life ---- */

/* A loopback socket bound to a free port. Kept open (not listening) it is a port nobody answers. */
static int bind_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(addr.sin_port);
    return fd;
}

struct body {
    char *data;
    size_t len;
};

static size_t append_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct body *b = userdata;
    size_t n = size * nmemb;
    char *grown = realloc(b->data, b->len + n + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, data, n);
    b->len += n;
    grown[b->len] = '\0';
    b->data = grown;
    return n;
}

/* GET url; the body (malloc'd) when the answer is 200, else NULL. */
static char *http_get(const char *url)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    struct body b = {NULL, 0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (status != 200) {
        free(b.data);
        return NULL;
    }
    return b.data ? b.data : strdup("");
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void print_gateway_log(void)
{
    char path[4200], line[512];
    snprintf(path, sizeof path, "%s/pushgateway.log", tmpdir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        printf("# pushgateway: %s", line);
    fclose(f);
}

/* Start prometheus-pushgateway on a free loopback port, without persistence, and wait until it
 * answers /-/ready. It dies with this process (PR_SET_PDEATHSIG) even if a test crashes. */
static int start_gateway(void)
{
    const char *binary = getenv("COSCHED_PUSHGATEWAY") ? getenv("COSCHED_PUSHGATEWAY")
                                                       : "/usr/bin/prometheus-pushgateway";
    if (access(binary, X_OK) < 0) {
        snprintf(gateway_problem, sizeof gateway_problem,
                 "%s is not executable: %s (Debian package "
                 "prometheus-pushgateway)",
                 binary, strerror(errno));
        return -1;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        int fd = bind_loopback(&gateway_port);
        if (fd < 0) {
            snprintf(gateway_problem, sizeof gateway_problem, "cannot find a free loopback port: %s", strerror(errno));
            return -1;
        }
        close(fd); /* a race with another process for this port is caught by the retry below */
        char listen_arg[64], log_path[4200];
        snprintf(listen_arg, sizeof listen_arg, "--web.listen-address=127.0.0.1:%d", gateway_port);
        snprintf(log_path, sizeof log_path, "%s/pushgateway.log", tmpdir);
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0) {
            snprintf(gateway_problem, sizeof gateway_problem, "cannot fork: %s", strerror(errno));
            return -1;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(127);
            FILE *log = freopen(log_path, "w", stdout);
            if (log)
                dup2(fileno(log), STDERR_FILENO);
            execl(binary, binary, listen_arg, "--persistence.file=", (char *)NULL);
            _exit(127);
        }
        gateway_pid = pid;
        snprintf(gateway_url, sizeof gateway_url, "http://127.0.0.1:%d", gateway_port);
        char ready[128];
        snprintf(ready, sizeof ready, "%s/-/ready", gateway_url);
        for (int waited = 0; waited < WAIT_LIMIT_S * 20; waited++) {
            char *body = http_get(ready);
            if (body) {
                free(body);
                return 0;
            }
            int status;
            if (waitpid(pid, &status, WNOHANG) == pid) {
                gateway_pid = -1;
                snprintf(gateway_problem, sizeof gateway_problem, "%s exited (status %d) before answering", binary,
                         WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
                break;
            }
            sleep_ms(50);
        }
        if (gateway_pid > 0) {
            snprintf(gateway_problem, sizeof gateway_problem, "%s did not answer %s", binary, ready);
            kill(gateway_pid, SIGKILL);
            waitpid(gateway_pid, NULL, 0);
            gateway_pid = -1;
            return -1;
        }
    }
    print_gateway_log();
    return -1;
}

static void stop_gateway(void)
{
    if (gateway_pid > 0) {
        kill(gateway_pid, SIGTERM);
        waitpid(gateway_pid, NULL, 0);
        gateway_pid = -1;
    }
}

/* Every test that talks to the gateway fails, not skips, when it could not be started. */
static void require_gateway(void)
{
    if (gateway_pid <= 0)
        fail_msg("no pushgateway to push to: %s", gateway_problem);
}

/* Poll the pusher's counters until they reach the wanted values (or the bound runs out). */
static void wait_for_counts(pusher_t *p, unsigned long want_ok, unsigned long want_failed)
{
    unsigned long ok = 0, failed = 0;
    double backoff;
    for (int i = 0; i < WAIT_LIMIT_S * 100; i++) {
        pusher_stats(p, &ok, &failed, &backoff);
        if (ok >= want_ok && failed >= want_failed)
            return;
        sleep_ms(10);
    }
    fail_msg("pusher never reached %lu ok / %lu failed pushes (has %lu / %lu)", want_ok, want_failed, ok, failed);
}

/* Whether the gateway's /metrics holds this exact sample line. */
static bool gateway_has_line(const char *line)
{
    char url[128];
    snprintf(url, sizeof url, "%s/metrics", gateway_url);
    char *body = http_get(url);
    if (!body)
        fail_msg("GET %s failed", url);
    size_t n = strlen(line);
    bool found = false;
    for (const char *s = body; !found && (s = strstr(s, line)); s++)
        found = (s == body || s[-1] == '\n') && (s[n] == '\n' || s[n] == '\0');
    if (!found) {
        printf("# no line '%s' in the gateway's metrics:\n", line);
        for (char *l = strtok(body, "\n"); l; l = strtok(NULL, "\n"))
            if (!strncmp(l, "cosched", 7))
                printf("#   %s\n", l);
    }
    free(body);
    return found;
}

static int set_up(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/test_push.XXXXXX", base);
    if (!mkdtemp(tmpdir))
        return -1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    start_gateway(); /* a failure is reported by the first test, with the reason */
    return 0;
}

static int tear_down(void **state)
{
    (void)state;
    stop_gateway();
    curl_global_cleanup();
    char path[4200];
    snprintf(path, sizeof path, "%s/pushgateway.log", tmpdir);
    unlink(path);
    return rmdir(tmpdir);
}

/* ---- the pushgateway ---- */

static void a_real_pushgateway_starts(void **state)
{
    (void)state;
    require_gateway();
}

static void a_snapshot_appears_with_job_and_instance_labels(void **state)
{
    (void)state;
    require_gateway();
    pusher_t *p = pusher_start(gateway_url, "node-7", 0.05, errbuf, sizeof errbuf);
    if (!p)
        fail_msg("pusher_start: %s", errbuf);
    pusher_update(p, "# HELP cosched_push_test_value A value the push test sets.\n"
                     "# TYPE cosched_push_test_value gauge\n"
                     "cosched_push_test_value{rank=\"3\"} 42\n");
    wait_for_counts(p, 1, 0);
    unsigned long ok, failed;
    double backoff;
    pusher_stats(p, &ok, &failed, &backoff);
    assert_int_equal(failed, 0);
    assert_true(backoff == 0);
    pusher_stop(p);
    assert_true(gateway_has_line("cosched_push_test_value{instance=\"node-7\",job=\"coschedd\",rank=\"3\"} 42"));
}

static void the_latest_snapshot_is_pushed_on_stop(void **state)
{
    (void)state;
    require_gateway();
    /* an interval that never comes round during the test: only pusher_stop pushes */
    pusher_t *p = pusher_start(gateway_url, "on-stop", 3600, errbuf, sizeof errbuf);
    if (!p)
        fail_msg("pusher_start: %s", errbuf);
    pusher_update(p, "cosched_push_test_stop 1\n");
    pusher_update(p, "cosched_push_test_stop 2\n");
    pusher_stop(p);
    assert_true(gateway_has_line("cosched_push_test_stop{instance=\"on-stop\",job=\"coschedd\"} 2"));
}

static void instances_with_spaces_and_slashes_keep_their_value(void **state)
{
    (void)state;
    require_gateway();
    const char *instances[] = {"rack 3", "rack 3/node 7", "a+b&c=d%"};
    for (size_t i = 0; i < sizeof instances / sizeof instances[0]; i++) {
        pusher_t *p = pusher_start(gateway_url, instances[i], 3600, errbuf, sizeof errbuf);
        if (!p)
            fail_msg("pusher_start: %s", errbuf);
        char text[128], line[256];
        snprintf(text, sizeof text, "cosched_push_test_escape %zu\n", i);
        pusher_update(p, text);
        pusher_stop(p);
        snprintf(line, sizeof line, "cosched_push_test_escape{instance=\"%s\",job=\"coschedd\"} %zu", instances[i], i);
        assert_true(gateway_has_line(line));
    }
}

static void a_snapshot_the_gateway_refuses_counts_as_a_failure(void **state)
{
    (void)state;
    require_gateway();
    pusher_t *p = pusher_start(gateway_url, "refused", 0.02, errbuf, sizeof errbuf);
    if (!p)
        fail_msg("pusher_start: %s", errbuf);
    pusher_update(p, "this is { not the text format\n"); /* the gateway answers 400 */
    wait_for_counts(p, 0, 2);
    unsigned long ok, failed;
    double backoff;
    pusher_stats(p, &ok, &failed, &backoff);
    assert_int_equal(ok, 0);
    assert_true(backoff > 0.02);
    pusher_stop(p);
}

static void a_dead_url_counts_failures_and_stop_still_returns(void **state)
{
    (void)state;
    int port;
    int fd = bind_loopback(&port); /* bound, never listening: connections are refused */
    assert_true(fd >= 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    pusher_t *p = pusher_start(url, "dead", 0.01, errbuf, sizeof errbuf);
    if (!p)
        fail_msg("pusher_start: %s", errbuf);
    pusher_update(p, "cosched_push_test_dead 1\n");
    wait_for_counts(p, 0, 3);
    unsigned long ok, failed;
    double backoff;
    pusher_stats(p, &ok, &failed, &backoff);
    assert_int_equal(ok, 0);
    assert_true(failed >= 3);
    assert_true(backoff >= 0.08); /* doubled at each of at least three failures: 0.02, 0.04, 0.08 */
    pusher_stop(p);               /* returns: the wait is cut short, no final push to a dead URL */
    close(fd);
}

static void before_any_snapshot_nothing_is_pushed_or_failed(void **state)
{
    (void)state;
    int port;
    int fd = bind_loopback(&port);
    assert_true(fd >= 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    pusher_t *p = pusher_start(url, "idle", 0.01, errbuf, sizeof errbuf);
    assert_non_null(p);
    sleep_ms(100);
    unsigned long ok, failed;
    double backoff;
    pusher_stats(p, &ok, &failed, &backoff);
    assert_int_equal(ok, 0);
    assert_int_equal(failed, 0);
    pusher_stop(p);
    close(fd);
}

static void bad_arguments_are_refused_with_a_reason(void **state)
{
    (void)state;
    assert_null(pusher_start("ftp://gw:9091", "n", 15, errbuf, sizeof errbuf));
    assert_non_null(strstr(errbuf, "push URL 'ftp://gw:9091' must start with http:// or https://"));
    assert_null(pusher_start("http://gw:9091", "n", 0, errbuf, sizeof errbuf));
    assert_non_null(strstr(errbuf, "push interval 0 must be more than 0 seconds"));
    assert_null(pusher_start("http://gw:9091", "n", -1, errbuf, sizeof errbuf));
}

static void a_missing_pusher_is_a_no_op(void **state)
{
    (void)state;
    unsigned long ok = 9, failed = 9;
    double backoff = 9;
    pusher_update(NULL, "x 1\n");
    pusher_stats(NULL, &ok, &failed, &backoff);
    assert_int_equal(ok, 0);
    assert_int_equal(failed, 0);
    assert_true(backoff == 0);
    pusher_stop(NULL);
}

/* ---- the node_exporter textfile ---- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    struct body b = {NULL, 0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        append_body(chunk, 1, n, &b);
    fclose(f);
    return b.data ? b.data : strdup("");
}

/* The names in tmpdir other than the gateway's log, joined by spaces. */
static void list_dir(char *out, size_t len)
{
    out[0] = '\0';
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "pushgateway.log"))
            continue;
        snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? " " : "", e->d_name);
    }
    closedir(d);
}

static void textfile_write_gives_the_exact_text_and_leaves_no_temp_file(void **state)
{
    (void)state;
    char path[4200], names[1024];
    snprintf(path, sizeof path, "%s/coschedd.prom", tmpdir);
    const char *texts[] = {"# TYPE cosched_runs gauge\ncosched_runs 3\n", "cosched_runs 4\n", ""};
    mode_t old_mask = umask(077); /* the file is world-readable whatever the daemon's umask */
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        if (push_textfile_write(path, texts[i], false, errbuf, sizeof errbuf) != 0)
            fail_msg("push_textfile_write: %s", errbuf);
        char *got = slurp(path);
        assert_non_null(got);
        assert_string_equal(got, texts[i]);
        free(got);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644);
        list_dir(names, sizeof names);
        assert_string_equal(names, "coschedd.prom");
    }
    umask(old_mask);
    assert_int_equal(unlink(path), 0);
}

/* private_jobs: hide: the file names every job; node_exporter reads it as its directory's group. */
static void a_private_textfile_is_for_its_directorys_group_alone(void **state)
{
    (void)state;
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/private", tmpdir);
    assert_int_equal(mkdir(dir, 0750), 0);
    gid_t group = geteuid() == 0 ? 65534 : getegid(); /* root may give it any group */
    assert_int_equal(chown(dir, (uid_t)-1, group), 0);
    snprintf(path, sizeof path, "%s/coschedd.prom", dir);
    if (push_textfile_write(path, "cosched_runs 1\n", true, errbuf, sizeof errbuf) != 0)
        fail_msg("push_textfile_write: %s", errbuf);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(st.st_gid, group);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

static void textfile_write_to_a_missing_directory_names_the_path(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/no-such-dir/coschedd.prom", tmpdir);
    assert_int_equal(push_textfile_write(path, "x 1\n", false, errbuf, sizeof errbuf), -1);
    assert_non_null(strstr(errbuf, path));
    assert_non_null(strstr(errbuf, "No such file or directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_real_pushgateway_starts),
        cmocka_unit_test(a_snapshot_appears_with_job_and_instance_labels),
        cmocka_unit_test(the_latest_snapshot_is_pushed_on_stop),
        cmocka_unit_test(instances_with_spaces_and_slashes_keep_their_value),
        cmocka_unit_test(a_snapshot_the_gateway_refuses_counts_as_a_failure),
        cmocka_unit_test(a_dead_url_counts_failures_and_stop_still_returns),
        cmocka_unit_test(before_any_snapshot_nothing_is_pushed_or_failed),
        cmocka_unit_test(bad_arguments_are_refused_with_a_reason),
        cmocka_unit_test(a_missing_pusher_is_a_no_op),
        cmocka_unit_test(textfile_write_gives_the_exact_text_and_leaves_no_temp_file),
        cmocka_unit_test(a_private_textfile_is_for_its_directorys_group_alone),
        cmocka_unit_test(textfile_write_to_a_missing_directory_names_the_path),
    };
    return cmocka_run_group_tests(tests, set_up, tear_down);
}
