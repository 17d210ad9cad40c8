/* process: pid and start time, read from /proc/PID/stat. */
#include "process.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

bool process_is(pid_t pid, unsigned long long start_ticks)
{
    return pid > 0 && start_ticks > 0 && process_start_ticks(pid) == start_ticks;
}
