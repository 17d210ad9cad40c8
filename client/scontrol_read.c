/* scontrol_read: scontrol's outputs into records; see scontrol_read.h. Values of `-o` lines hold
 * no spaces except a few free-text ones (OS=Linux 6.1.0 ..., Reason=...): a word without '=' goes
 * on with the value before it. */
#include "scontrol_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MAX_LINE = 65536, MAX_RECORDS = 65536, MAX_KEYS = 512, TOO_MANY_KEYS = -2 };

/* 0, -1 out of memory, TOO_MANY_KEYS. */
static int record_add(scontrol_record_t *r, const char *key, size_t keylen, const char *value, size_t valuelen)
{
    if (r->n == MAX_KEYS)
        return TOO_MANY_KEYS;
    if (r->n % 32 == 0) {
        char **k = realloc(r->keys, (size_t)(r->n + 32) * sizeof *k);
        if (k)
            r->keys = k;
        char **v = realloc(r->values, (size_t)(r->n + 32) * sizeof *v);
        if (v)
            r->values = v;
        if (!k || !v)
            return -1;
    }
    r->keys[r->n] = strndup(key, keylen);
    r->values[r->n] = strndup(value, valuelen);
    if (!r->keys[r->n] || !r->values[r->n]) {
        free(r->keys[r->n]);
        free(r->values[r->n]);
        return -1;
    }
    r->n++;
    return 0;
}

static void record_free(scontrol_record_t *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->keys[i]);
        free(r->values[i]);
    }
    free(r->keys);
    free(r->values);
    memset(r, 0, sizeof *r);
}

/* "Key    = value" of `scontrol show config`; headers ("Cgroup Support Configuration:"), status
 * lines ("Slurmctld(primary) at host is UP") and whatever a later Slurm prints without a one-word
 * key are passed over: a file with no key at all is what is refused. */
static int config_line(scontrol_record_t *r, const char *line)
{
    const char *eq = strstr(line, " = ");
    if (!eq)
        return 0;
    size_t keylen = (size_t)(eq - line);
    while (keylen > 0 && line[keylen - 1] == ' ')
        keylen--;
    if (keylen == 0 || strchr(line, ' ') < line + keylen)
        return 0; /* a key has no spaces */
    const char *value = eq + 3;
    return record_add(r, line, keylen, value, strcspn(value, "\n"));
}

/* One `scontrol -o` line: Key=value words. */
static int oneline_record(scontrol_record_t *r, const char *line, const char *first_key)
{
    if (strncasecmp(line, first_key, strlen(first_key)) != 0 || line[strlen(first_key)] != '=')
        return 1;
    const char *p = line;
    while (*p && *p != '\n') {
        size_t word = strcspn(p, " \n");
        const char *eq = memchr(p, '=', word);
        if (eq) {
            int added = record_add(r, p, (size_t)(eq - p), eq + 1, word - (size_t)(eq - p) - 1);
            if (added < 0)
                return added;
        } else if (r->n > 0) { /* a free-text value's next word */
            char *longer;
            if (asprintf(&longer, "%s %.*s", r->values[r->n - 1], (int)word, p) < 0)
                return -1;
            free(r->values[r->n - 1]);
            r->values[r->n - 1] = longer;
        }
        p += word;
        while (*p == ' ')
            p++;
    }
    return 0;
}

/* A stream of scontrol output: the config (records NULL), or `-o` lines starting with first_key. */
static int read_stream(FILE *f, const char *what, const char *first_key, scontrol_record_t *config,
                       scontrol_record_t **records, int *n, char *err, size_t errlen)
{
    char *line = malloc(MAX_LINE);
    int lineno = 0, rc = 0;
    if (!line) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    while (rc == 0 && fgets(line, MAX_LINE, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "%s:%d: a line longer than %d bytes", what, lineno, MAX_LINE - 1);
            rc = -1;
        } else if (line[strspn(line, " \t\n")] == '\0') {
            continue;
        } else if (config) {
            int r = config_line(config, line);
            if (r == TOO_MANY_KEYS)
                snprintf(err, errlen, "%s:%d: more than %d settings", what, lineno, MAX_KEYS);
            else if (r != 0)
                snprintf(err, errlen,
                         r < 0 ? "out of memory" : "%s:%d: not a 'Key = value' line of scontrol show config", what,
                         lineno);
            rc = r ? -1 : 0;
        } else if (*n == MAX_RECORDS) {
            snprintf(err, errlen, "%s:%d: more than %d records", what, lineno, MAX_RECORDS);
            rc = -1;
        } else {
            scontrol_record_t *more = realloc(*records, (size_t)(*n + 1) * sizeof *more);
            if (!more) {
                snprintf(err, errlen, "out of memory");
                rc = -1;
                break;
            }
            *records = more;
            memset(&more[*n], 0, sizeof more[*n]);
            int r = oneline_record(&more[*n], line, first_key);
            (*n)++;
            if (r == TOO_MANY_KEYS)
                snprintf(err, errlen, "%s:%d: more than %d Key=value words in one line", what, lineno, MAX_KEYS);
            else if (r != 0)
                snprintf(err, errlen, r < 0 ? "out of memory" : "%s:%d: not a line of scontrol -o (it starts with %s=)",
                         what, lineno, first_key);
            rc = r ? -1 : 0;
        }
    }
    free(line);
    if (rc == 0 && config && config->n == 0) {
        snprintf(err, errlen, "%s: no 'Key = value' line: not the output of scontrol show config", what);
        rc = -1;
    }
    return rc;
}

/* The three outputs: where --from finds each, the command that prints it, its first key. */
static const struct output {
    const char *file, *command, *first_key;
} outputs[SCONTROL_OUTPUTS] = {
    {"config", "scontrol show config", NULL},
    {"partitions", "scontrol -o show partition", "PartitionName"},
    {"nodes", "scontrol -o show node", "NodeName"},
};

static int parse_one(scontrol_view_t *v, int which, FILE *f, const char *name, char *err, size_t errlen)
{
    if (which == 0)
        return read_stream(f, name, NULL, &v->config, NULL, NULL, err, errlen);
    if (which == 1)
        return read_stream(f, name, outputs[1].first_key, NULL, &v->partitions, &v->npartitions, err, errlen);
    return read_stream(f, name, outputs[2].first_key, NULL, &v->nodes, &v->nnodes, err, errlen);
}

int scontrol_view_parse(FILE *const files[SCONTROL_OUTPUTS], const char *const names[SCONTROL_OUTPUTS],
                        scontrol_view_t *view, char *err, size_t errlen)
{
    memset(view, 0, sizeof *view);
    for (int i = 0; i < SCONTROL_OUTPUTS; i++)
        if (parse_one(view, i, files[i], names[i], err, errlen) < 0) {
            scontrol_view_free(view);
            return -1;
        }
    return 0;
}

/* The command's whole output into a memory stream (stderr apart, into errout), and its status;
 * NULL when it cannot run. Read whole first, so that a failing scontrol is reported by what it
 * said, not by a parse error of it. */
static FILE *run_command(const char *command, char **buf, size_t *len, int *status, char *errout, size_t errlen)
{
    char full[512];
    int errfd = -1;
    char errpath[] = "/tmp/cosched-scontrol-XXXXXX";
    errfd = mkstemp(errpath);
    if (errfd < 0)
        return NULL;
    unlink(errpath);
    snprintf(full, sizeof full, "%s 2>/dev/fd/%d", command, errfd);
    FILE *p = popen(full, "r");
    if (!p) {
        close(errfd);
        return NULL;
    }
    FILE *mem = open_memstream(buf, len);
    char chunk[8192];
    size_t n;
    while (mem && (n = fread(chunk, 1, sizeof chunk, p)) > 0)
        fwrite(chunk, 1, n, mem);
    *status = pclose(p);
    ssize_t got = pread(errfd, errout, errlen - 1, 0);
    errout[got > 0 ? got : 0] = '\0';
    errout[strcspn(errout, "\n")] = '\0';
    close(errfd);
    if (!mem)
        return NULL;
    fclose(mem);
    return fmemopen(*buf, *len ? *len : 1, "r");
}

/* One output, from DIR's file or from the command. */
static int read_one(const char *dir, int which, scontrol_view_t *view, char *err, size_t errlen)
{
    const struct output *o = &outputs[which];
    char path[4096], said[256] = "";
    char *buf = NULL;
    size_t len = 0;
    int status = 0;
    FILE *f;
    if (dir) {
        snprintf(path, sizeof path, "%s/%s", dir, o->file);
        if (!(f = fopen(path, "r"))) {
            snprintf(err, errlen,
                     "cannot read %s: %s (--from DIR holds config, partitions and nodes: the outputs of "
                     "scontrol show config, scontrol -o show partition and scontrol -o show node)",
                     path, strerror(errno));
            return -1;
        }
    } else {
        snprintf(path, sizeof path, "%s", o->command);
        if (!(f = run_command(o->command, &buf, &len, &status, said, sizeof said))) {
            snprintf(err, errlen, "cannot run %s: %s", o->command, strerror(errno));
            free(buf);
            return -1;
        }
        if (status != 0) {
            snprintf(err, errlen, "%s failed (%s %d)%s%s: is this a node of a running Slurm cluster?", o->command,
                     WIFEXITED(status) ? "exit status" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), said[0] ? ": " : "", said);
            fclose(f);
            free(buf);
            return -1;
        }
        if (len == 0) /* fmemopen of an empty output: one byte of nothing */
            fgetc(f);
    }
    int rc = parse_one(view, which, f, path, err, errlen);
    fclose(f);
    free(buf);
    return rc;
}

int scontrol_view_read(const char *dir, scontrol_view_t *view, char *err, size_t errlen)
{
    memset(view, 0, sizeof *view);
    for (int i = 0; i < SCONTROL_OUTPUTS; i++)
        if (read_one(dir, i, view, err, errlen) < 0) {
            scontrol_view_free(view);
            return -1;
        }
    return 0;
}

void scontrol_view_free(scontrol_view_t *view)
{
    record_free(&view->config);
    for (int i = 0; i < view->npartitions; i++)
        record_free(&view->partitions[i]);
    for (int i = 0; i < view->nnodes; i++)
        record_free(&view->nodes[i]);
    free(view->partitions);
    free(view->nodes);
    memset(view, 0, sizeof *view);
}

const char *scontrol_get(const scontrol_record_t *r, const char *key)
{
    for (int i = 0; r && i < r->n; i++)
        if (strcasecmp(r->keys[i], key) == 0)
            return r->values[i];
    return NULL;
}

const scontrol_record_t *scontrol_find(const scontrol_record_t *records, int n, const char *key, const char *value)
{
    for (int i = 0; i < n; i++) {
        const char *v = scontrol_get(&records[i], key);
        if (v && strcmp(v, value) == 0)
            return &records[i];
    }
    return NULL;
}
