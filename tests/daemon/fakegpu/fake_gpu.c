/* fake_gpu: the control file and the busy model of the fake GPU libraries (fake_gpu.h). */
#include "fake_gpu.h"

#include <stdbool.h>

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static fake_gpus_t gpus;
static struct timespec loaded_mtime;
static off_t loaded_size = -1;
static ino_t loaded_ino;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

unsigned long long fake_now_us(void)
{
    return (unsigned long long)(mono() * 1e6);
}

static bool parse_pci(const char *text, unsigned *d, unsigned *b, unsigned *dev, unsigned *f)
{
    return sscanf(text, "%x:%x:%x.%x", d, b, dev, f) == 4;
}

fake_device_t *fake_find(unsigned domain, unsigned bus, unsigned device, unsigned function)
{
    for (int i = 0; i < gpus.ndevices; i++) {
        fake_device_t *g = &gpus.devices[i];
        if (g->domain == domain && g->bus == bus && g->device == device && g->function == function)
            return g;
    }
    return NULL;
}

fake_device_t *fake_find_text(const char *pci)
{
    unsigned d, b, dev, f;
    fake_gpus();
    return pci && parse_pci(pci, &d, &b, &dev, &f) ? fake_find(d, b, dev, f) : NULL;
}

/* One "gpu PCI key value ..." line, into the device of that bus id (kept across re-reads, so
 * that handles the library gave out stay valid). */
/* A co-tenant of the model; one at the same place in the list keeps its last measurement. */
static void add_cotenant(fake_device_t *g, const char *path, double k, int before)
{
    fake_cotenant_t *c = &g->cotenants[g->ncotenants];
    if (g->ncotenants >= before || strcmp(c->path, path) != 0) {
        memset(c, 0, sizeof *c);
        snprintf(c->path, sizeof c->path, "%s", path);
    }
    c->k = k;
    g->ncotenants++;
}

static void parse_gpu(char *rest)
{
    char *save = NULL, *pci = strtok_r(rest, " \t", &save);
    unsigned d, b, dev, f;
    if (!pci || !parse_pci(pci, &d, &b, &dev, &f))
        return;
    fake_device_t *g = fake_find(d, b, dev, f);
    if (!g) {
        if (gpus.ndevices == FAKE_MAX_GPUS)
            return;
        g = &gpus.devices[gpus.ndevices++];
        memset(g, 0, sizeof *g);
        g->domain = d, g->bus = b, g->device = dev, g->function = f;
    }
    g->state = FAKE_OK;
    g->base = 0.9;
    double k = 0;
    int before = g->ncotenants;
    g->ncotenants = 0;
    g->steps[0] = '\0';
    g->gpu_time = 0;
    unsigned long seed = 0;
    for (char *key; (key = strtok_r(NULL, " \t", &save));) {
        char *value = strtok_r(NULL, " \t", &save);
        if (!value)
            break;
        if (strcmp(key, "busy") == 0)
            g->base = atof(value);
        else if (strcmp(key, "k") == 0)
            k = atof(value);
        else if (strcmp(key, "cotenant") == 0 && g->ncotenants < FAKE_MAX_COTENANTS)
            add_cotenant(g, value, k, before);
        else if (strcmp(key, "steps") == 0)
            snprintf(g->steps, sizeof g->steps, "%s", value);
        else if (strcmp(key, "gpu_time") == 0)
            g->gpu_time = atof(value);
        else if (strcmp(key, "swing") == 0)
            seed = strtoul(value, NULL, 10);
        else if (strcmp(key, "state") == 0)
            g->state = !strcmp(value, "lost")    ? FAKE_LOST
                       : !strcmp(value, "error") ? FAKE_ERROR
                       : !strcmp(value, "mig")   ? FAKE_MIG
                       : !strcmp(value, "hang")  ? FAKE_HANG
                                                 : FAKE_OK;
    }
    if (seed != g->swing_seed) { /* a new series starts now; the same one goes on across re-reads */
        g->swing_seed = seed;
        swing_init(&g->swing, seed, SWING_H200_SD, SWING_H200_AR);
        g->swing_start = mono();
        g->swing_factor = 1;
    }
}

static void load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    gpus.init_fails = gpus.no_samples = false;
    for (int i = 0; i < gpus.ndevices; i++)
        gpus.devices[i].state = FAKE_ABSENT; /* until the file lists it again */
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "#\n")] = '\0';
        if (strncmp(line, "init fail", 9) == 0)
            gpus.init_fails = true;
        else if (strncmp(line, "samples unsupported", 19) == 0)
            gpus.no_samples = true;
        else if (strncmp(line, "gpu ", 4) == 0)
            parse_gpu(line + 4);
    }
    fclose(f);
}

fake_gpus_t *fake_gpus(void)
{
    const char *path = getenv("COSCHED_FAKE_GPU");
    struct stat st;
    if (path && stat(path, &st) == 0 &&
        (st.st_mtim.tv_sec != loaded_mtime.tv_sec || st.st_mtim.tv_nsec != loaded_mtime.tv_nsec ||
         st.st_size != loaded_size || st.st_ino != loaded_ino)) {
        loaded_mtime = st.st_mtim;
        loaded_size = st.st_size;
        loaded_ino = st.st_ino;
        load(path);
    }
    return &gpus;
}

/* How many CPUs a process wants now: one per thread /proc says 'R' (running or waiting for a CPU;
 * stopped 'T', frozen 'D' and sleeping ones want none), no more than the CPUs it may run on. */
static int running_threads(int pid)
{
    char path[64], buf[1024];
    int running = 0;
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%.20s/stat", pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        running += p && p[1] == ' ' && p[2] == 'R';
    }
    if (d)
        closedir(d);
    cpu_set_t cpus;
    if (running > 1 && sched_getaffinity(pid, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) < running)
        running = CPU_COUNT(&cpus);
    return running;
}

static void add_pid(int *pids, int *n, int pid)
{
    for (int i = 0; i < *n; i++)
        if (pids[i] == pid)
            return;
    if (*n < FAKE_MAX_PIDS)
        pids[(*n)++] = pid;
}

static void pids_in_file(const char *path, int *pids, int *n)
{
    FILE *f = fopen(path, "r");
    int pid;
    if (!f)
        return;
    while (fscanf(f, "%d", &pid) == 1)
        if (pid > 0)
            add_pid(pids, n, pid);
    fclose(f);
}

/* Every cgroup.procs below a cgroup directory. */
static void pids_in_cgroup(const char *dir, int *pids, int *n, int depth)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    pids_in_file(path, pids, n);
    DIR *d = depth < 8 ? opendir(dir) : NULL;
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_type == DT_DIR && e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            pids_in_cgroup(path, pids, n, depth + 1);
        }
    closedir(d);
}

/* Where the cgroup hierarchies that hold CPU quotas are mounted: v1's cpu, and v2. */
static void cpu_mounts(char *v1, char *v2, size_t len)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    char line[4096];
    v1[0] = v2[0] = '\0';
    while (f && fgets(line, sizeof line, f)) {
        char mount[1024], fstype[64], options[1024];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %1023s", mount) != 1 ||
            sscanf(dash + 3, "%63s %*s %1023s", fstype, options) != 2)
            continue;
        if (strcmp(fstype, "cgroup2") == 0 && !v2[0])
            snprintf(v2, len, "%s", mount);
        bool cpu = false;
        for (char *save = NULL, *o = strtok_r(options, ",", &save); o; o = strtok_r(NULL, ",", &save))
            cpu |= strcmp(o, "cpu") == 0;
        if (strcmp(fstype, "cgroup") == 0 && cpu && !v1[0])
            snprintf(v1, len, "%s", mount);
    }
    if (f)
        fclose(f);
}

/* The CPUs a cgroup's quota allows, from dir's own files: v1 cpu.cfs_quota_us / cpu.cfs_period_us,
 * v2 cpu.max; < 0 without a quota. */
static double dir_quota(const char *dir, bool v2)
{
    char path[FAKE_PATH_MAX + 32];
    long long quota = -1, period = 0;
    snprintf(path, sizeof path, "%s/%s", dir, v2 ? "cpu.max" : "cpu.cfs_quota_us");
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int got = v2 ? fscanf(f, "%lld %lld", &quota, &period) : fscanf(f, "%lld", &quota);
    fclose(f);
    if (!v2) {
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%lld", &period) != 1)
                period = 0;
            fclose(f);
        }
    }
    return got >= 1 && quota > 0 && period > 0 ? (double)quota / (double)period : -1;
}

/* The tightest quota over a process's cpu cgroups and their parents: its limit in CPUs and the
 * directory that sets it ("" and a negative limit when none does). */
static double process_limit(int pid, char *limiting, size_t len)
{
    static char v1[1024], v2[1024]; /* what mountinfo's %1023s reads */
    static bool found;
    if (!found) {
        cpu_mounts(v1, v2, sizeof v1);
        found = true;
    }
    char path[64], line[2048], dir[FAKE_PATH_MAX];
    double limit = -1;
    limiting[0] = '\0';
    snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':'), *cgroup = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!cgroup)
            continue;
        *cgroup++ = '\0';
        bool is_v2 = controllers[1] == '\0', is_cpu = false;
        for (char *save = NULL, *c = strtok_r(controllers + 1, ",", &save); c; c = strtok_r(NULL, ",", &save))
            is_cpu |= strcmp(c, "cpu") == 0;
        const char *mount = is_v2 ? v2 : is_cpu ? v1 : "";
        if (!mount[0])
            continue;
        snprintf(dir, sizeof dir, "%.1023s%.2047s", mount, strcmp(cgroup, "/") == 0 ? "" : cgroup);
        for (size_t root = strlen(mount);;) { /* the process's cgroup up to the mount */
            double q = dir_quota(dir, is_v2);
            if (q >= 0 && (limit < 0 || q < limit)) {
                limit = q;
                snprintf(limiting, len, "%.*s", (int)len - 1, dir);
            }
            char *slash = strrchr(dir, '/');
            if (!slash || (size_t)(slash - dir) < root)
                break;
            *slash = '\0';
        }
    }
    if (f)
        fclose(f);
    return limit;
}

/* The CPUs the co-tenant's processes are allowed now: one for each thread that wants to run, held
 * to the quota of the cgroup that limits its process, shared by those it limits together. What the knobs allow, not
 * what a loaded machine gives: the model does not change with the machine's load. */
static void measure(fake_cotenant_t *c, double now)
{
    enum { MAX_GROUPS = 64 };
    static int pids[FAKE_MAX_PIDS];
    static char dirs[MAX_GROUPS][FAKE_PATH_MAX];
    static double limits[MAX_GROUPS];
    static int running[MAX_GROUPS];
    int n = 0, ngroups = 0;
    double allowed = 0;
    struct stat st;
    if (stat(c->path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            pids_in_cgroup(c->path, pids, &n, 0);
        else
            pids_in_file(c->path, pids, &n);
    }
    for (int i = 0; i < n; i++) {
        int threads = running_threads(pids[i]);
        if (threads == 0)
            continue;
        char dir[FAKE_PATH_MAX];
        double limit = process_limit(pids[i], dir, sizeof dir);
        if (limit < 0 || ngroups == MAX_GROUPS) {
            allowed += threads;
            continue;
        }
        int g = 0;
        while (g < ngroups && strcmp(dirs[g], dir) != 0)
            g++;
        if (g == ngroups) {
            snprintf(dirs[ngroups], sizeof dirs[ngroups], "%s", dir);
            limits[ngroups] = limit;
            running[ngroups++] = 0;
        }
        running[g] += threads;
    }
    for (int g = 0; g < ngroups; g++)
        allowed += limits[g] < running[g] ? limits[g] : running[g];
    c->share = allowed;
    c->measured_at = now;
}

/* The steps the trainer wrote since the last reading: G / their mean step time. */
static double busy_from_steps(fake_device_t *g)
{
    FILE *f = fopen(g->steps, "r");
    char line[4096];
    double sum = 0;
    int n = 0;
    if (!f)
        return g->last_step_busy > 0 ? g->last_step_busy : g->base;
    if (fseek(f, g->steps_offset, SEEK_SET) != 0)
        rewind(f);
    while (fgets(line, sizeof line, f)) {
        if (line[strlen(line) - 1] != '\n')
            break; /* half a line: read it whole next time */
        g->steps_offset = ftell(f);
        const char *t = strstr(line, "\"t_step\":");
        if (t && strstr(line, "\"event\":\"step\"")) {
            sum += atof(t + 9);
            n++;
        }
    }
    fclose(f);
    if (n > 0 && sum > 0)
        g->last_step_busy = g->gpu_time / (sum / n);
    return g->last_step_busy > 0 ? g->last_step_busy : g->base;
}

/* The swing's factor for this second of the series (swing.h): one value a second, replayed. */
static double swing_now(fake_device_t *g)
{
    if (!g->swing_seed)
        return 1;
    long second = (long)(mono() - g->swing_start);
    while (g->swing.index <= second)
        g->swing_factor = swing_next(&g->swing);
    return g->swing_factor;
}

double fake_busy(fake_device_t *g)
{
    if (g->steps[0] && g->gpu_time > 0) {
        double busy = busy_from_steps(g);
        return busy < 0 ? 0 : busy > 1 ? 1 : busy;
    }
    double now = mono(), cost = 0;
    for (int i = 0; i < g->ncotenants; i++) {
        fake_cotenant_t *c = &g->cotenants[i];
        if (now - c->measured_at >= 0.1)
            measure(c, now);
        cost += c->k * c->share;
    }
    double busy = g->base / (1 + cost) * swing_now(g);
    return busy < 0 ? 0 : busy > 1 ? 1 : busy;
}

void fake_hang(void)
{
    char marker[1100];
    const char *path = getenv("COSCHED_FAKE_GPU");
    snprintf(marker, sizeof marker, "%s.hanging", path ? path : "/tmp/cosched-fake-gpu");
    FILE *f = fopen(marker, "w");
    if (f)
        fclose(f);
    sleep(60);
}
