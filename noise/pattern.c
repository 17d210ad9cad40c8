/* pattern: YAML pattern files through libyaml's document API. Everything is checked here,
 * before anything runs, and every complaint names FILE:LINE:COLUMN. */
#include "pattern.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Anchors and aliases can make a small file describe a huge tree; refuse past this many nodes. */
#define MAX_NODES 100000

struct parser {
    yaml_document_t doc;
    const char *file;
    char *err;
    size_t errlen;
    size_t nodes;
    struct noise_patterns *out;
};

static int fail_at(struct parser *ps, int line, int column, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(ps->err, ps->errlen, "%s:%d:%d: %s", ps->file, line, column, msg);
    return -1;
}

#define LINE(n) ((int)(n)->start_mark.line + 1)
#define COL(n) ((int)(n)->start_mark.column + 1)
#define fail(ps, n, ...) fail_at(ps, LINE(n), COL(n), __VA_ARGS__)

static yaml_node_t *node_at(struct parser *ps, int id)
{
    return yaml_document_get_node(&ps->doc, id);
}

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *kind_name(yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static int want_mapping(struct parser *ps, yaml_node_t *n, const char *what)
{
    if (n->type != YAML_MAPPING_NODE)
        return fail(ps, n, "%s must be a mapping, not %s", what, kind_name(n));
    return 0;
}

static int get_name(struct parser *ps, yaml_node_t *n, const char *what, char *out)
{
    const char *s = scalar(n);
    if (!s)
        return fail(ps, n, "%s must be a plain name, not %s", what, kind_name(n));
    if (*s == '\0' || strlen(s) >= NOISE_NAME_MAX)
        return fail(ps, n, "%s '%s' must be 1 to %d characters", what, s, NOISE_NAME_MAX - 1);
    strcpy(out, s);
    return 0;
}

static int get_number(struct parser *ps, yaml_node_t *n, const char *what, double min, int min_open, double *out)
{
    const char *s = scalar(n);
    char *end;
    if (!s)
        return fail(ps, n, "%s must be a number, not %s", what, kind_name(n));
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v))
        return fail(ps, n, "%s must be a number, not '%s'", what, s);
    if (min_open ? v <= min : v < min)
        return fail(ps, n, "%s must be %s %g, not %s", what, min_open ? "more than" : "at least", min, s);
    *out = v;
    return 0;
}

static int get_mode(struct parser *ps, yaml_node_t *n, enum noise_mode *out)
{
    const char *s = scalar(n);
    if (!s || noise_mode_parse(s, out) != 0)
        return fail(ps, n, "unknown mode '%s' (memory/stream, io/ior, network/pingpong, busy, idle)",
                    s ? s : kind_name(n));
    return 0;
}

/* ---- config sets ---- */

static int parse_config_sets(struct parser *ps, enum noise_mode mode, yaml_node_t *n)
{
    if (want_mapping(ps, n, "a mode's config sets") != 0)
        return -1;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = node_at(ps, pr->key), *vn = node_at(ps, pr->value);
        struct noise_patterns *out = ps->out;
        struct noise_config_set set = {.mode = mode};
        if (get_name(ps, kn, "config set name", set.name) != 0)
            return -1;
        if (noise_patterns_config(out, mode, set.name))
            return fail(ps, kn, "config set %s.%s is defined twice", noise_mode_name(mode), set.name);
        if (want_mapping(ps, vn, "a config set") != 0)
            return -1;
        struct noise_config_set *sets = realloc(out->sets, (out->nsets + 1) * sizeof *sets);
        if (!sets)
            return fail(ps, vn, "out of memory");
        out->sets = sets;
        struct noise_config_set *s = &out->sets[out->nsets++];
        *s = set;
        size_t count = (size_t)(vn->data.mapping.pairs.top - vn->data.mapping.pairs.start);
        s->settings = calloc(count ? count : 1, sizeof *s->settings);
        if (!s->settings)
            return fail(ps, vn, "out of memory");
        /* Check each value by setting it on a scratch copy: the same code the run will use. */
        struct noise_opts scratch;
        noise_opts_defaults(&scratch);
        scratch.mode = mode;
        scratch.duration = 1; /* a set is only used by steps, and steps always have seconds */
        for (yaml_node_pair_t *q = vn->data.mapping.pairs.start; q < vn->data.mapping.pairs.top; q++) {
            yaml_node_t *k = node_at(ps, q->key), *v = node_at(ps, q->value);
            struct noise_setting *st = &s->settings[s->nsettings];
            char msg[256];
            if (get_name(ps, k, "setting name", st->key) != 0)
                return -1;
            if (!scalar(v))
                return fail(ps, v, "setting %s must be a single value, not %s", st->key, kind_name(v));
            if (noise_opts_set(&scratch, st->key, scalar(v), 1, msg, sizeof msg) != 0)
                /* An unknown or misplaced key is the key's fault, a bad value the value's. */
                return fail(ps, strncmp(msg, "unknown", 7) == 0 || strstr(msg, "cannot be set") ? k : v, "%s", msg);
            st->value = strdup(scalar(v));
            if (!st->value)
                return fail(ps, v, "out of memory");
            st->line = LINE(v);
            st->column = COL(v);
            s->nsettings++;
        }
        char msg[256];
        if (noise_opts_check(&scratch, msg, sizeof msg) != 0)
            return fail(ps, vn, "config set %s.%s: %s", noise_mode_name(mode), s->name, msg);
    }
    return 0;
}

/* ---- pattern nodes ---- */

static int parse_node(struct parser *ps, yaml_node_t *n, int depth, struct noise_node *out);

static int parse_list(struct parser *ps, yaml_node_t *n, int depth, struct noise_node *out)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(ps, n, "sequence must be a list of steps, not %s", kind_name(n));
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count == 0)
        return fail(ps, n, "sequence is empty");
    out->kind = NOISE_NODE_SEQUENCE;
    out->children = calloc(count, sizeof *out->children);
    if (!out->children)
        return fail(ps, n, "out of memory");
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        /* Counted before parsing, so a child that fails halfway is still freed. */
        if (parse_node(ps, node_at(ps, *it), depth + 1, &out->children[out->nchildren++]) != 0)
            return -1;
    }
    return 0;
}

static int parse_step(struct parser *ps, yaml_node_t *n, struct noise_node *out)
{
    int have_mode = 0, have_seconds = 0;
    out->kind = NOISE_NODE_STEP;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node_at(ps, pr->key), *v = node_at(ps, pr->value);
        const char *key = scalar(k);
        if (key && strcmp(key, "mode") == 0) {
            if (get_mode(ps, v, &out->step.mode) != 0)
                return -1;
            have_mode = 1;
        } else if (key && strcmp(key, "config") == 0) {
            if (get_name(ps, v, "config", out->step.config) != 0)
                return -1;
        } else if (key && strcmp(key, "seconds") == 0) {
            if (get_number(ps, v, "seconds", 0, 1, &out->step.seconds) != 0)
                return -1;
            have_seconds = 1;
        } else {
            return fail(ps, k, "unknown key '%s' in a step (mode, config, seconds)", key ? key : "?");
        }
    }
    if (!have_mode || !have_seconds)
        return fail(ps, n, "a step needs %s", !have_mode ? "a mode" : "seconds");
    return 0;
}

static int parse_weights(struct parser *ps, yaml_node_t *n, struct noise_random *r)
{
    if (want_mapping(ps, n, "weights") != 0)
        return -1;
    double total = 0;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node_at(ps, pr->key), *v = node_at(ps, pr->value);
        enum noise_mode mode;
        double w;
        if (get_mode(ps, k, &mode) != 0 || get_number(ps, v, "a weight", 0, 0, &w) != 0)
            return -1;
        r->weights[mode] += w;
        total += w;
    }
    if (!(total > 0))
        return fail(ps, n, "weights must not all be zero");
    return 0;
}

static int parse_random(struct parser *ps, yaml_node_t *n, struct noise_node *out)
{
    struct noise_random *r = &out->random;
    int have_seconds = 0, have_weights = 0;
    out->kind = NOISE_NODE_RANDOM;
    r->step_seconds = 1;
    if (want_mapping(ps, n, "random") != 0)
        return -1;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node_at(ps, pr->key), *v = node_at(ps, pr->value);
        const char *key = scalar(k);
        if (key && strcmp(key, "seed") == 0) {
            const char *s = scalar(v);
            char *end;
            errno = 0;
            unsigned long long seed = s && *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
            if (!s || *s < '0' || *s > '9' || errno || *end != '\0')
                return fail(ps, v, "seed must be a whole number, not '%s'", s ? s : kind_name(v));
            r->seed = seed;
        } else if (key && strcmp(key, "seconds") == 0) {
            if (get_number(ps, v, "seconds", 0, 1, &r->seconds) != 0)
                return -1;
            have_seconds = 1;
        } else if (key && strcmp(key, "step_seconds") == 0) {
            if (get_number(ps, v, "step_seconds", 0, 1, &r->step_seconds) != 0)
                return -1;
        } else if (key && strcmp(key, "weights") == 0) {
            if (parse_weights(ps, v, r) != 0)
                return -1;
            have_weights = 1;
        } else if (key && strcmp(key, "configs") == 0) {
            if (want_mapping(ps, v, "configs") != 0)
                return -1;
            for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
                enum noise_mode mode;
                if (get_mode(ps, node_at(ps, q->key), &mode) != 0 ||
                    get_name(ps, node_at(ps, q->value), "config", r->configs[mode]) != 0)
                    return -1;
            }
        } else {
            return fail(ps, k, "unknown key '%s' in random (seed, seconds, step_seconds, weights, configs)",
                        key ? key : "?");
        }
    }
    if (!have_seconds || !have_weights)
        return fail(ps, n, "random needs %s", !have_seconds ? "seconds" : "weights");
    return 0;
}

static int parse_node(struct parser *ps, yaml_node_t *n, int depth, struct noise_node *out)
{
    out->line = LINE(n);
    out->column = COL(n);
    out->repeat = 1;
    if (depth > NOISE_MAX_DEPTH)
        return fail(ps, n, "patterns nest deeper than %d levels", NOISE_MAX_DEPTH);
    if (++ps->nodes > MAX_NODES)
        return fail(ps, n, "more than %d steps and blocks", MAX_NODES);
    if (n->type == YAML_SEQUENCE_NODE)
        return parse_list(ps, n, depth, out);
    if (n->type != YAML_MAPPING_NODE)
        return fail(ps, n,
                    "expected a step {mode, config, seconds}, a {repeat, sequence} block or "
                    "a {random} block, not %s",
                    kind_name(n));
    yaml_node_t *seq = NULL, *rep = NULL, *rnd = NULL, *unknown = NULL;
    int is_step = 0;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node_at(ps, pr->key);
        const char *key = scalar(k);
        if (key && strcmp(key, "sequence") == 0)
            seq = node_at(ps, pr->value);
        else if (key && strcmp(key, "repeat") == 0)
            rep = node_at(ps, pr->value);
        else if (key && strcmp(key, "random") == 0)
            rnd = node_at(ps, pr->value);
        else if (key && (strcmp(key, "mode") == 0 || strcmp(key, "seconds") == 0 || strcmp(key, "config") == 0))
            is_step = 1;
        else if (!unknown)
            unknown = k;
    }
    if (is_step) {
        if (seq || rep || rnd)
            return fail(ps, n, "a step cannot also have sequence, repeat or random");
        return parse_step(ps, n, out);
    }
    if (unknown)
        return fail(ps, unknown,
                    "unknown key '%s' (a step has mode, config, seconds; a block has "
                    "sequence and repeat, or random)",
                    scalar(unknown) ? scalar(unknown) : "?");
    if (rnd) {
        if (seq)
            return fail(ps, n, "a block has either sequence or random, not both");
        if (rep)
            return fail(ps, rep, "put repeat around random in a sequence: {repeat: N, sequence: [{random: ...}]}");
        return parse_random(ps, rnd, out);
    }
    if (!seq)
        return fail(ps, n, "a block needs a sequence");
    long repeat = 1;
    if (rep) {
        const char *s = scalar(rep);
        char *end;
        errno = 0;
        if (s && strcmp(s, "forever") == 0) {
            repeat = NOISE_FOREVER;
        } else {
            repeat = s && *s >= '0' && *s <= '9' ? strtol(s, &end, 10) : 0;
            if (!s || *s < '0' || *s > '9' || errno || *end != '\0' || repeat < 1)
                return fail(ps, rep, "repeat must be a whole number of at least 1 or 'forever', not '%s'",
                            s ? s : kind_name(rep));
        }
    }
    if (parse_list(ps, seq, depth, out) != 0)
        return -1;
    out->repeat = repeat;
    return 0;
}

/* Config names can be used before they are defined; check them once the whole file is read. */
static int resolve(struct parser *ps, const struct noise_node *n)
{
    const struct noise_patterns *p = ps->out;
    if (n->kind == NOISE_NODE_STEP) {
        if (n->step.config[0] && !noise_patterns_config(p, n->step.mode, n->step.config))
            return fail_at(ps, n->line, n->column, "step uses %s config '%s', which is not defined",
                           noise_mode_name(n->step.mode), n->step.config);
        return 0;
    }
    if (n->kind == NOISE_NODE_RANDOM) {
        for (int m = 0; m < NOISE_MODE_COUNT; m++)
            if (n->random.configs[m][0] && !noise_patterns_config(p, (enum noise_mode)m, n->random.configs[m]))
                return fail_at(ps, n->line, n->column, "random uses %s config '%s', which is not defined",
                               noise_mode_name((enum noise_mode)m), n->random.configs[m]);
        return 0;
    }
    for (size_t i = 0; i < n->nchildren; i++)
        if (resolve(ps, &n->children[i]) != 0)
            return -1;
    return 0;
}

static int parse_root(struct parser *ps)
{
    yaml_node_t *root = yaml_document_get_root_node(&ps->doc);
    if (!root)
        return fail_at(ps, 1, 1, "the file is empty");
    if (want_mapping(ps, root, "the file") != 0)
        return -1;
    yaml_node_t *patterns = NULL;
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node_at(ps, pr->key), *v = node_at(ps, pr->value);
        const char *key = scalar(k);
        enum noise_mode mode;
        if (key && strcmp(key, "patterns") == 0) {
            patterns = v;
        } else if (key && noise_mode_parse(key, &mode) == 0) {
            if (parse_config_sets(ps, mode, v) != 0)
                return -1;
        } else {
            return fail(ps, k,
                        "unknown top-level key '%s' (patterns, or a mode's config sets: memory, "
                        "io, network, stream, ior, pingpong, busy, idle)",
                        key ? key : "?");
        }
    }
    if (!patterns)
        return fail(ps, root, "no 'patterns' section");
    if (want_mapping(ps, patterns, "patterns") != 0)
        return -1;
    size_t count = (size_t)(patterns->data.mapping.pairs.top - patterns->data.mapping.pairs.start);
    if (count == 0)
        return fail(ps, patterns, "no patterns defined");
    struct noise_patterns *out = ps->out;
    out->patterns = calloc(count, sizeof *out->patterns);
    if (!out->patterns)
        return fail(ps, patterns, "out of memory");
    for (yaml_node_pair_t *pr = patterns->data.mapping.pairs.start; pr < patterns->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node_at(ps, pr->key);
        struct noise_pattern *pat = &out->patterns[out->npatterns];
        if (get_name(ps, k, "pattern name", pat->name) != 0)
            return -1;
        if (noise_patterns_find(out, pat->name))
            return fail(ps, k, "pattern '%s' is defined twice", pat->name);
        out->npatterns++;
        if (parse_node(ps, node_at(ps, pr->value), 1, &pat->root) != 0)
            return -1;
    }
    for (size_t i = 0; i < out->npatterns; i++)
        if (resolve(ps, &out->patterns[i].root) != 0)
            return -1;
    return 0;
}

/* libyaml's scanner slows down quadratically with [ { nesting (60000 open brackets take
 * ten seconds), so deep flow nesting is refused before libyaml sees it. Quoted text and
 * comments are skipped; a pattern file never needs more than a few levels. */
#define MAX_FLOW_DEPTH 64

static int flow_depth_ok(struct parser *ps, const char *text, size_t len)
{
    int depth = 0, line = 1, col = 0;
    char quote = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        col++;
        if (ch == '\n') {
            line++;
            col = 0;
            if (quote == 0)
                continue;
        }
        if (quote) {
            if (ch == quote)
                quote = 0;
            else if (ch == '\\' && quote == '"' && i + 1 < len)
                i++, col++;
            continue;
        }
        if (ch == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
            while (i + 1 < len && text[i + 1] != '\n')
                i++;
        } else if (ch == '"' || (ch == '\'' && (i == 0 || strchr(" \t\n[{,:", text[i - 1])))) {
            quote = ch;
        } else if (ch == '[' || ch == '{') {
            if (++depth > MAX_FLOW_DEPTH)
                return fail_at(ps, line, col, "brackets nest deeper than %d levels", MAX_FLOW_DEPTH);
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
    }
    return 0;
}

int noise_patterns_parse(struct noise_patterns *p, const char *text, size_t len, const char *name, char *err,
                         size_t errlen)
{
    memset(p, 0, sizeof *p);
    struct parser ps = {.file = name, .err = err, .errlen = errlen, .out = p};
    if (flow_depth_ok(&ps, text, len) != 0)
        return -1;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, errlen, "%s: cannot start the YAML parser", name);
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int rc = -1;
    if (!yaml_parser_load(&parser, &ps.doc)) {
        snprintf(err, errlen, "%s:%zu:%zu: %s%s%s", name, parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                 parser.problem ? parser.problem : "invalid YAML", parser.context ? " " : "",
                 parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return -1;
    }
    rc = parse_root(&ps);
    yaml_document_delete(&ps.doc);
    yaml_parser_delete(&parser);
    if (rc != 0)
        noise_patterns_free(p);
    return rc;
}

int noise_patterns_load(struct noise_patterns *p, const char *path, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "cannot open pattern file %s: %s", path, strerror(errno));
        return -1;
    }
    /* Pattern files are small; a cap keeps a wrong path (a disk image, /dev/zero) from eating memory. */
    size_t cap = 1u << 20, len = 0;
    char *text = malloc(cap + 1);
    if (!text) {
        fclose(fp);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    len = fread(text, 1, cap + 1, fp);
    int bad = ferror(fp);
    fclose(fp);
    if (bad || len > cap) {
        free(text);
        snprintf(err, errlen, "%s: %s", path, bad ? "cannot read the file" : "larger than 1 MiB, not a pattern file");
        return -1;
    }
    int rc = noise_patterns_parse(p, text, len, path, err, errlen);
    free(text);
    return rc;
}

static void free_node(struct noise_node *n)
{
    for (size_t i = 0; i < n->nchildren; i++)
        free_node(&n->children[i]);
    free(n->children);
    n->children = NULL;
    n->nchildren = 0;
}

void noise_patterns_free(struct noise_patterns *p)
{
    for (size_t i = 0; i < p->nsets; i++) {
        for (size_t j = 0; j < p->sets[i].nsettings; j++)
            free(p->sets[i].settings[j].value);
        free(p->sets[i].settings);
    }
    free(p->sets);
    for (size_t i = 0; i < p->npatterns; i++)
        free_node(&p->patterns[i].root);
    free(p->patterns);
    memset(p, 0, sizeof *p);
}

const struct noise_pattern *noise_patterns_find(const struct noise_patterns *p, const char *name)
{
    for (size_t i = 0; i < p->npatterns; i++)
        if (strcmp(p->patterns[i].name, name) == 0)
            return &p->patterns[i];
    return NULL;
}

const struct noise_config_set *noise_patterns_config(const struct noise_patterns *p, enum noise_mode mode,
                                                     const char *name)
{
    for (size_t i = 0; i < p->nsets; i++)
        if (p->sets[i].mode == mode && strcmp(p->sets[i].name, name) == 0)
            return &p->sets[i];
    return NULL;
}

int noise_config_apply(const struct noise_config_set *set, struct noise_opts *o, char *err, size_t errlen)
{
    for (size_t i = 0; i < set->nsettings; i++) {
        char msg[256];
        if (noise_opts_set(o, set->settings[i].key, set->settings[i].value, 1, msg, sizeof msg) != 0) {
            snprintf(err, errlen, "config %s.%s at line %d: %s", noise_mode_name(set->mode), set->name,
                     set->settings[i].line, msg);
            return -1;
        }
    }
    return 0;
}

int noise_node_uses(const struct noise_node *n, enum noise_mode mode)
{
    switch (n->kind) {
    case NOISE_NODE_STEP: return n->step.mode == mode;
    case NOISE_NODE_RANDOM: return n->random.weights[mode] > 0;
    case NOISE_NODE_SEQUENCE:
        for (size_t i = 0; i < n->nchildren; i++)
            if (noise_node_uses(&n->children[i], mode))
                return 1;
        return 0;
    }
    return 0;
}
