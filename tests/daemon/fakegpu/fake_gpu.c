/* fake_gpu: the control file and the busy model of the fake GPU libraries (fake_gpu.h). */
#include "fake_gpu.h"

#include <dirent.h>
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
        else if (strcmp(key, "state") == 0)
            g->state = !strcmp(value, "lost")    ? FAKE_LOST
                       : !strcmp(value, "error") ? FAKE_ERROR
                       : !strcmp(value, "mig")   ? FAKE_MIG
                       : !strcmp(value, "hang")  ? FAKE_HANG
                                                 : FAKE_OK;
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

/* utime + stime of a process in seconds; < 0 when it is gone. */
static double cpu_seconds(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long utime = 0, stime = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
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

/* CPUs the co-tenant used since the last measurement: what each process still there used. */
static void measure(fake_cotenant_t *c, double now)
{
    static int pids[FAKE_MAX_PIDS];
    static double cpu[FAKE_MAX_PIDS];
    int n = 0;
    struct stat st;
    if (stat(c->path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            pids_in_cgroup(c->path, pids, &n, 0);
        else
            pids_in_file(c->path, pids, &n);
    }
    double used = 0;
    for (int i = 0; i < n; i++) {
        cpu[i] = cpu_seconds(pids[i]);
        for (int j = 0; j < c->npids && cpu[i] >= 0; j++)
            if (c->pids[j] == pids[i] && c->cpu[j] >= 0 && cpu[i] >= c->cpu[j])
                used += cpu[i] - c->cpu[j];
    }
    double dt = now - c->measured_at;
    c->share = c->measured_at > 0 && dt > 0 ? used / dt : 0;
    c->measured_at = now;
    c->npids = n;
    memcpy(c->pids, pids, (size_t)n * sizeof *pids);
    memcpy(c->cpu, cpu, (size_t)n * sizeof *cpu);
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
    double busy = g->base / (1 + cost);
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
