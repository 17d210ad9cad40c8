/* slurm_conf: KillWait from slurm.conf. The file's syntax (slurm.conf(5)): one Key=Value per word,
 * keys in any case, '#' to the end of a line a comment, "Include FILE" (relative to the
 * including file's directory) read in place; the last setting wins. */
#include "slurm_conf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum { MAX_INCLUDE_DEPTH = 4, LINE_MAX_BYTES = 4096 };

const char *slurm_conf_path(const char *configured)
{
    const char *env = getenv("SLURM_CONF");
    if (configured && configured[0])
        return configured;
    return env && env[0] == '/' ? env : "/etc/slurm/slurm.conf";
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* "KillWait=45" among the words of a line: its value, or -1 when the line does not set it. */
static long kill_wait_in(char *line)
{
    long found = -1;
    for (char *save = NULL, *word = strtok_r(line, " \t", &save); word; word = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(word, '=');
        if (!eq || (size_t)(eq - word) != strlen("KillWait") || strncasecmp(word, "KillWait", 8) != 0)
            continue;
        char *end;
        errno = 0;
        long v = strtol(eq + 1, &end, 10);
        if (end != eq + 1 && *end == '\0' && errno == 0 && v >= 0 && v <= INT_MAX)
            found = v;
    }
    return found;
}

/* The Include's file, relative to the including file's directory. */
static void include_path(const char *from, const char *name, char *out, size_t len)
{
    const char *slash = strrchr(from, '/');
    if (name[0] == '/' || !slash)
        snprintf(out, len, "%s", name);
    else
        snprintf(out, len, "%.*s/%s", (int)(slash - from), from, name);
}

static int read_file(const char *path, int depth, long *kill_wait, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char line[LINE_MAX_BYTES], inc[PATH_MAX];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "#")] = '\0';
        char *s = trim(line);
        if (strncasecmp(s, "include", 7) == 0 && isspace((unsigned char)s[7])) {
            include_path(path, trim(s + 7), inc, sizeof inc);
            if (depth < MAX_INCLUDE_DEPTH)
                read_file(inc, depth + 1, kill_wait, err, errlen); /* a missing include: Slurm's to refuse */
            continue;
        }
        long v = kill_wait_in(s);
        if (v >= 0)
            *kill_wait = v;
    }
    fclose(f);
    return 0;
}

int slurm_conf_kill_wait(const char *path, char *err, size_t errlen)
{
    long kill_wait = SLURM_CONF_DEFAULT_KILL_WAIT;
    if (read_file(path, 0, &kill_wait, err, errlen) < 0)
        return -1;
    return (int)kill_wait;
}

int slurm_conf_cached_kill_wait(slurm_conf_cache_t *cache, const char *path)
{
    struct stat st;
    long long mtime_ns = -1, size = -2;
    if (stat(path, &st) == 0) {
        mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
        size = (long long)st.st_size;
    }
    if (strcmp(cache->path, path) == 0 && cache->mtime_ns == mtime_ns && cache->size == size)
        return cache->kill_wait;
    snprintf(cache->path, sizeof cache->path, "%s", path);
    cache->mtime_ns = mtime_ns;
    cache->size = size;
    cache->error[0] = '\0';
    cache->kill_wait = slurm_conf_kill_wait(path, cache->error, sizeof cache->error);
    if (cache->kill_wait < 0)
        cache->kill_wait = SLURM_CONF_DEFAULT_KILL_WAIT;
    return cache->kill_wait;
}
