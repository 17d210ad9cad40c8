/* process: pid, start time and state from /proc/PID/stat, /proc/PID/status, and pidfds. */
#include "process.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

unsigned long long process_start_ticks(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields start after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    unsigned long long ticks = 0;
    /* after ')': state(3) ... starttime is field 22, i.e. the 20th after the state */
    char *save = NULL, *tok = strtok_r(p + 1, " ", &save);
    for (int field = 3; tok && field < 22; field++)
        tok = strtok_r(NULL, " ", &save);
    if (tok)
        ticks = strtoull(tok, NULL, 10);
    return ticks;
}

int process_cpu(pid_t pid, pid_t *pgid, double *self_seconds, double *children_seconds)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* after ')': state(3) ppid(4) pgrp(5) ... utime(14) stime(15) cutime(16) cstime(17) */
    unsigned long long v[18] = {0};
    char *save = NULL, *tok = strtok_r(p + 1, " ", &save);
    for (int field = 3; tok && field <= 17; field++) {
        v[field] = strtoull(tok, NULL, 10);
        tok = strtok_r(NULL, " ", &save);
    }
    long hz = sysconf(_SC_CLK_TCK);
    double tick = 1.0 / (double)(hz > 0 ? hz : 100);
    *pgid = (pid_t)v[5];
    *self_seconds = (double)(v[14] + v[15]) * tick;
    *children_seconds = (double)(v[16] + v[17]) * tick;
    return 0;
}

bool process_same(pid_t pid, unsigned long long start_ticks)
{
    return pid > 0 && start_ticks > 0 && process_start_ticks(pid) == start_ticks;
}

char process_state(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold anything */
    return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

ssize_t process_status(pid_t pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || len == 0)
        return fd < 0 ? -1 : (close(fd), -1);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < len && (r = read(fd, buf + got, len - 1 - got)) > 0)
        got += (size_t)r;
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

int process_pidfd(pid_t pid)
{
    return pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
}

int process_pidfd_signal(int pidfd, int sig)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

bool process_ref_open(process_ref_t *r, pid_t pid)
{
    r->pid = pid;
    r->pidfd = process_pidfd(pid);
    r->ticks = process_start_ticks(pid); /* read after the pidfd: it is that process's */
    if (r->ticks > 0)
        return true;
    process_ref_close(r);
    return false;
}

bool process_ref_open_as(process_ref_t *r, pid_t pid, unsigned long long ticks)
{
    if (process_ref_open(r, pid) && r->ticks == ticks)
        return true;
    process_ref_close(r);
    return false;
}

int process_group_signal(pid_t leader, int sig)
{
    /* A run leads its own session: the whole group, or what is left of it. */
    return kill(-leader, sig) == 0 || kill(leader, sig) == 0 ? 0 : -1;
}

int process_ref_signal(const process_ref_t *r, int sig)
{
    if (r->pidfd >= 0)
        return process_pidfd_signal(r->pidfd, sig);
    return process_same(r->pid, r->ticks) ? kill(r->pid, sig) : -1;
}

void process_ref_close(process_ref_t *r)
{
    if (r->pidfd >= 0)
        close(r->pidfd);
    r->pidfd = -1;
}
