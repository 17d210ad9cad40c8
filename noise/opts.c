/* opts: one table of keys drives the command line, YAML config sets, --help and the "config"
 * object of output lines, so a setting is spelt, checked and documented the same way everywhere. */
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpulist.h"

/* K_DOUBLE_OFF: a K_DOUBLE that also takes 0, below min, for "off". */
enum key_type { K_DOUBLE, K_DOUBLE_OFF, K_LONG, K_SIZE, K_MIB, K_BOOL, K_STRING };

#define ALL_MODES 0x1f
#define M(m) (1u << (m))

struct key {
    const char *name;
    enum key_type type;
    unsigned modes; /* modes the key means something for */
    int cli_only;   /* process-wide: not allowed inside a config set */
    size_t offset;
    size_t size;     /* K_STRING buffer size */
    double min, max; /* K_DOUBLE(_OFF) / K_LONG bounds */
    const char *help;
    /* Its key in the "config" object of output lines (noise_opts_to_json); NULL: not shown. late:
     * shown after the keys that are not late (report_every has always come after threads). */
    const char *line_key;
    int late;
};

#define OFF(f) offsetof(struct noise_opts, f)
#define STR(f) OFF(f), sizeof(((struct noise_opts *)0)->f)

static const struct key keys[] = {
    {"duration", K_DOUBLE, ALL_MODES, 1, OFF(duration), 0, 0, 1e9,
     "SECONDS  run as noise this long (0: a measured benchmark)", "duration", 0},
    {"intensity", K_DOUBLE, ALL_MODES, 0, OFF(intensity), 0, 0, 1,
     "0..1     share of every period spent working (0.3 = 30 ms of each 100 ms)", "intensity", 0},
    {"period", K_DOUBLE, ALL_MODES, 0, OFF(period), 0, 0.001, 10, "SECONDS  duty-cycle period (0.1)", "period", 0},
    /* Below 0.1 s the lines would cost the reader more than they tell it. */
    {"report-every", K_DOUBLE_OFF, ALL_MODES, 0, OFF(report_every), 0, 0.1, 3600,
     "SECONDS  as noise, a progress line every SECONDS (1; 0: none)", "report_every", 1},
    {"threads", K_LONG, ALL_MODES, 0, OFF(threads), 0, 0, 4096,
     "N        worker threads (0: one per CPU it may run on)", "threads", 0},
    {"cpus", K_STRING, ALL_MODES, 1, STR(cpus), 0, 0, "LIST     bind threads to these CPUs, one each (0-3,8)", NULL, 0},
    {"mems", K_STRING, ALL_MODES, 1, STR(mems), 0, 0, "LIST     bind memory to these NUMA domains (MPOL_BIND)", NULL,
     0},
    {"output", K_STRING, ALL_MODES, 1, STR(output), 0, 0, "FILE     JSON lines into FILE instead of stdout", NULL, 0},
    {"config", K_STRING, 0, 1, STR(config), 0, 0, "FILE     YAML file with config sets and patterns", NULL, 0},
    {"array-size", K_SIZE, M(NOISE_MODE_STREAM), 0, OFF(array_bytes), 0, 0, 0,
     "SIZE     bytes per array (default: 4x the L3 of the CPUs in use)", "array_bytes", 1},
    {"array-mb", K_MIB, M(NOISE_MODE_STREAM), 0, OFF(array_bytes), 0, 0, 0, "MIB      MiB per array", NULL, 0},
    {"ntimes", K_LONG, M(NOISE_MODE_STREAM), 0, OFF(ntimes), 0, 2, 200,
     "N        benchmark passes; the first is not counted (10)", "ntimes", 1},
    {"streaming-stores", K_BOOL, M(NOISE_MODE_STREAM), 0, OFF(nt_stores), 0, 0, 0,
     "[BOOL]   non-temporal stores that bypass the cache (true)", "streaming_stores", 1},
    {"dir", K_STRING, M(NOISE_MODE_IOR), 0, STR(dir), 0, 0, "DIR      directory for the test files (.)", "dir", 1},
    {"block", K_SIZE, M(NOISE_MODE_IOR), 0, OFF(block), 0, 0, 0, "SIZE     contiguous bytes per task and segment (16M)",
     "block", 1},
    {"transfer", K_SIZE, M(NOISE_MODE_IOR), 0, OFF(transfer), 0, 0, 0, "SIZE     bytes per write/read call (1M)",
     "transfer", 1},
    {"segments", K_LONG, M(NOISE_MODE_IOR), 0, OFF(segments), 0, 1, 1e9, "N        segments (1)", "segments", 1},
    {"file-per-proc", K_BOOL, M(NOISE_MODE_IOR), 0, OFF(file_per_proc), 0, 0, 0,
     "[BOOL]   one file per task (true) or one shared file (false)", "file_per_proc", 1},
    {"write", K_BOOL, M(NOISE_MODE_IOR), 0, OFF(do_write), 0, 0, 0, "[BOOL]   write phase (true)", "write", 1},
    {"read", K_BOOL, M(NOISE_MODE_IOR), 0, OFF(do_read), 0, 0, 0, "[BOOL]   read phase (true)", "read", 1},
    {"direct", K_BOOL, M(NOISE_MODE_IOR), 0, OFF(direct), 0, 0, 0, "[BOOL]   O_DIRECT (false)", "direct", 1},
    {"fsync", K_BOOL, M(NOISE_MODE_IOR), 0, OFF(fsync), 0, 0, 0, "[BOOL]   fsync before close (true)", "fsync", 1},
    {"reorder", K_BOOL, M(NOISE_MODE_IOR), 0, OFF(reorder), 0, 0, 0,
     "[BOOL]   read back the neighbour task's data, as IOR -C (true)", "reorder", 1},
    {"invalidate", K_BOOL, M(NOISE_MODE_IOR), 0, OFF(invalidate), 0, 0, 0,
     "[BOOL]   drop the file from the page cache before reading, as fio does (true)", "invalidate", 1},
    {"preallocate", K_BOOL, M(NOISE_MODE_IOR), 0, OFF(preallocate), 0, 0, 0,
     "[BOOL]   allocate the files' blocks before the first write, untimed, as fio does (false)", "preallocate", 1},
    {"max-bytes", K_SIZE, M(NOISE_MODE_IOR), 0, OFF(max_bytes), 0, 0, 0,
     "SIZE     refuse to put more than this on disk (1G)", "max_bytes", 1},
    {"min-size", K_SIZE, M(NOISE_MODE_PINGPONG), 0, OFF(min_size), 0, 0, 0, "SIZE     smallest message (0)", "min_size",
     1},
    {"max-size", K_SIZE, M(NOISE_MODE_PINGPONG), 0, OFF(max_size), 0, 0, 0, "SIZE     largest message (4M)", "max_size",
     1},
    {"size", K_SIZE, M(NOISE_MODE_PINGPONG), 0, OFF(msg_size), 0, 0, 0,
     "SIZE     message size as noise and in --allpairs (1M)", "size", 1},
    {"iterations", K_LONG, M(NOISE_MODE_PINGPONG), 0, OFF(iterations), 0, 1, 1e9,
     "N        timed iterations per size (1000; 100 above 8 KiB)", "iterations", 1},
    {"warmup", K_LONG, M(NOISE_MODE_PINGPONG), 0, OFF(warmup), 0, 0, 1e9,
     "N        uncounted iterations (100; 10 above 8 KiB)", "warmup", 1},
    {"window", K_LONG, M(NOISE_MODE_PINGPONG), 0, OFF(window), 0, 1, 4096,
     "N        sends in flight for bandwidth (64)", "window", 1},
    {"allpairs", K_BOOL, M(NOISE_MODE_PINGPONG), 0, OFF(allpairs), 0, 0, 0,
     "[BOOL]   Linktest-like: every rank pair in turn", "allpairs", 1},
};

static const char *const mode_names[NOISE_MODE_COUNT] = {"stream", "ior", "pingpong", "busy", "idle"};

int noise_mode_parse(const char *name, enum noise_mode *out)
{
    static const struct {
        const char *alias;
        enum noise_mode mode;
    } aliases[] = {{"memory", NOISE_MODE_STREAM}, {"io", NOISE_MODE_IOR}, {"network", NOISE_MODE_PINGPONG}};
    for (int m = 0; m < NOISE_MODE_COUNT; m++)
        if (strcmp(name, mode_names[m]) == 0) {
            *out = (enum noise_mode)m;
            return 0;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) {
            *out = aliases[i].mode;
            return 0;
        }
    return -1;
}

const char *noise_mode_name(enum noise_mode mode)
{
    return (unsigned)mode < NOISE_MODE_COUNT ? mode_names[mode] : "?";
}

void noise_opts_defaults(struct noise_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = NOISE_MODE_BUSY;
    o->intensity = 1.0;
    o->period = 0.1;
    o->report_every = 1.0;
    o->ntimes = 10;
    o->nt_stores = 1;
    strcpy(o->dir, ".");
    o->block = 16u << 20;
    o->transfer = 1u << 20;
    o->segments = 1;
    o->file_per_proc = 1;
    o->do_write = 1;
    o->do_read = 1;
    o->fsync = 1;
    o->reorder = 1;
    o->invalidate = 1;
    o->max_bytes = 1ull << 30;
    o->max_size = 4u << 20;
    o->msg_size = 1u << 20;
    o->window = 64;
}

int noise_parse_size(const char *text, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)*text))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        end++;
        if (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0)
            end += strlen(end);
    } else if (strcasecmp(end, "B") == 0) {
        end++;
    }
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_bool(const char *text, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

static const struct key *find_key(const char *name)
{
    char norm[64];
    size_t n = strlen(name);
    if (n >= sizeof norm)
        return NULL;
    /* YAML spells keys with '_', the command line with '-'. */
    for (size_t i = 0; i <= n; i++)
        norm[i] = name[i] == '_' ? '-' : name[i];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(keys[i].name, norm) == 0)
            return &keys[i];
    return NULL;
}

int noise_opts_set(struct noise_opts *o, const char *key, const char *value, int from_config, char *err, size_t errlen)
{
    const struct key *k = find_key(key);
    if (!k) {
        snprintf(err, errlen, "unknown setting '%s'", key);
        return -1;
    }
    if (from_config && (k->cli_only || !(k->modes & M(o->mode)))) {
        snprintf(err, errlen, "'%s' cannot be set in a %s config set", key, noise_mode_name(o->mode));
        return -1;
    }
    char *field = (char *)o + k->offset;
    const char *what = NULL;
    switch (k->type) {
    case K_DOUBLE:
    case K_DOUBLE_OFF: {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end != '\0' || !isfinite(v) || v > k->max ||
            (v < k->min && !(k->type == K_DOUBLE_OFF && v == 0)))
            what = k->type == K_DOUBLE_OFF ? "0 (off) or a number in range" : "a number in range";
        else
            *(double *)field = v;
        break;
    }
    case K_LONG: {
        long v;
        if (cpulist_parse_int(value, (long)k->min, (long)k->max, &v) != 0)
            what = "a whole number in range";
        else
            *(long *)field = v;
        break;
    }
    case K_SIZE:
    case K_MIB: {
        uint64_t v;
        if (noise_parse_size(value, &v) != 0 || (k->type == K_MIB && v > (UINT64_MAX >> 20)))
            what = "a size like 4096, 64k, 16M or 1G";
        else
            *(uint64_t *)field = k->type == K_MIB ? v << 20 : v;
        break;
    }
    case K_BOOL:
        if (parse_bool(value, (int *)field) != 0)
            what = "true or false";
        break;
    case K_STRING:
        if (strlen(value) >= k->size)
            what = "shorter";
        else
            strcpy(field, value);
        break;
    }
    if (what) {
        if (k->type == K_DOUBLE || k->type == K_DOUBLE_OFF || k->type == K_LONG)
            snprintf(err, errlen, "'%s' for %s must be %s [%g, %g]", value, key, what, k->min, k->max);
        else
            snprintf(err, errlen, "'%s' for %s must be %s", value, key, what);
        return -1;
    }
    return 0;
}

int noise_opts_parse_argv(struct noise_opts *o, int argc, char **argv, int first, const char **positional, int max_pos,
                          int *help, char *err, size_t errlen)
{
    int npos = 0;
    *help = 0;
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            *help = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            int flag;
            if (npos >= max_pos) {
                snprintf(err, errlen, "unexpected argument '%s'%s", arg,
                         parse_bool(arg, &flag) == 0 ? " (on/off options are written --flag, --no-flag or --flag=false)"
                                                     : "");
                return -1;
            }
            positional[npos++] = arg;
            continue;
        }
        char name[64];
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof name) {
            snprintf(err, errlen, "unknown option '%s'", arg);
            return -1;
        }
        memcpy(name, arg + 2, len);
        name[len] = '\0';
        const char *value = eq ? eq + 1 : NULL;
        const struct key *k = find_key(name);
        int negated = 0;
        if (!k && strncmp(name, "no-", 3) == 0 && (k = find_key(name + 3)) && k->type == K_BOOL && !value)
            negated = 1;
        if (!k || (negated == 0 && strchr(name, '_'))) {
            snprintf(err, errlen, "unknown option '--%s' (see --help)", name);
            return -1;
        }
        if (!value && k->type == K_BOOL)
            value = negated ? "false" : "true";
        if (!value) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "option --%s needs a value", name);
                return -1;
            }
            value = argv[++i];
        }
        if (noise_opts_set(o, k->name, value, 0, err, errlen) != 0)
            return -1;
    }
    return npos;
}

int noise_opts_check(const struct noise_opts *o, char *err, size_t errlen)
{
    if (o->mode == NOISE_MODE_IOR) {
        if (o->transfer == 0 || o->block == 0 || o->block % o->transfer != 0) {
            snprintf(err, errlen, "--block (%llu) must be a non-zero multiple of --transfer (%llu)",
                     (unsigned long long)o->block, (unsigned long long)o->transfer);
            return -1;
        }
        if (o->transfer > (1u << 30)) {
            /* Linux moves at most 2 GiB - 4 KiB per write(); IOR caps transfers too. */
            snprintf(err, errlen, "--transfer %llu is above 1 GiB", (unsigned long long)o->transfer);
            return -1;
        }
        if (o->direct && o->transfer % 4096 != 0) {
            snprintf(err, errlen, "--direct needs --transfer to be a multiple of 4096, not %llu",
                     (unsigned long long)o->transfer);
            return -1;
        }
        if (!o->do_write && !o->do_read) {
            snprintf(err, errlen, "--no-write and --no-read leave nothing to do");
            return -1;
        }
    }
    if ((o->mode == NOISE_MODE_BUSY || o->mode == NOISE_MODE_IDLE) && o->duration <= 0) {
        snprintf(err, errlen, "%s needs --duration SECONDS (it measures nothing)", noise_mode_name(o->mode));
        return -1;
    }
    if (o->mode == NOISE_MODE_PINGPONG && o->min_size > o->max_size) {
        snprintf(err, errlen, "--min-size is larger than --max-size");
        return -1;
    }
    if (o->mode == NOISE_MODE_STREAM && o->array_bytes != 0 && o->array_bytes < 8 * 16) {
        snprintf(err, errlen, "--array-size %llu is too small (16 doubles at least)",
                 (unsigned long long)o->array_bytes);
        return -1;
    }
    return 0;
}

void noise_opts_usage(FILE *fp, int mode)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const struct key *k = &keys[i];
        int common = k->modes == ALL_MODES;
        if (mode < 0 ? !common : (common || !(k->modes & M(mode))))
            continue;
        fprintf(fp, "  --%-14s %s\n", k->name, k->help);
    }
}

json_t *noise_opts_to_json(const struct noise_opts *o)
{
    json_t *c = json_object();
    for (int late = 0; late <= 1; late++)
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            const struct key *k = &keys[i];
            if (!k->line_key || k->late != late || !(k->modes & M(o->mode)))
                continue;
            const char *field = (const char *)o + k->offset;
            json_t *v = NULL;
            switch (k->type) {
            case K_DOUBLE:
            case K_DOUBLE_OFF: v = json_real(*(const double *)field); break;
            case K_LONG: v = json_integer(*(const long *)field); break;
            case K_SIZE:
            case K_MIB: v = json_integer((json_int_t)(*(const uint64_t *)field)); break;
            case K_BOOL: v = json_boolean(*(const int *)field); break;
            case K_STRING: v = json_string(field); break;
            }
            json_object_set_new(c, k->line_key, v);
        }
    return c;
}
