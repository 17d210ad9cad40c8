/* options: cosched-train's command line as one table (name, kind, bounds, help), as noise/opts.c
 * and client/cli_table.c hold theirs: the parser, its errors and --help all read it, so a bad
 * flag is refused with its name and range before anything is loaded or allocated. gen-data's
 * options are a second table of the same rows, read by the same parser. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "model.h"
#include "options.h"

enum option_kind {
    OPT_STRING, /* kept as given: a path, a list or a spec, checked where it is used */
    OPT_CHOICE, /* one of the words of `values`, kept as given */
    OPT_ON_OFF, /* on or off, stored as 1 or 0 in an int */
    OPT_INT,    /* a whole number within [min, max], stored in an int */
    OPT_LONG,   /* ... in a long */
    OPT_SEED,   /* ... in a uint64_t */
    OPT_DOUBLE, /* a number within [min, max] */
    OPT_FLAG,   /* takes no value: stores `set` in an int */
};

struct train_option {
    const char *name; /* --name; getopt takes any unambiguous prefix of it */
    const char *arg;  /* what --help calls its value (N, F, FILE); NULL: it takes none */
    enum option_kind kind;
    size_t offset;             /* where in the struct its table fills */
    double min, max;           /* a number's range, both included */
    const char *values;        /* OPT_CHOICE: the words it takes, space-separated */
    int set;                   /* OPT_FLAG: what it stores */
    const char *heading;       /* a row without a name: a group's heading in --help */
    const char *(*lead)(void); /* --help prints these words before the help (the models) */
    const char *help;          /* its --help text ('\n' goes on under it); NULL: on another's line */
};

/* The struct the table below fills: train_options here, gen-data's options further down. */
#define FILLS train_options
#define AT(f) offsetof(FILLS, f)
#define WHOLE(n, a, k, f, lo, hi, h)                                                                                   \
    {                                                                                                                  \
        .name = n, .arg = a, .kind = k, .offset = AT(f), .min = lo, .max = hi, .help = h                               \
    }
#define NUMBER(n, a, f, lo, hi, h) WHOLE(n, a, OPT_DOUBLE, f, lo, hi, h)
#define TEXT(n, a, f, h)                                                                                               \
    {                                                                                                                  \
        .name = n, .arg = a, .kind = OPT_STRING, .offset = AT(f), .help = h                                            \
    }
#define CHOICE(n, a, f, words, h)                                                                                      \
    {                                                                                                                  \
        .name = n, .arg = a, .kind = OPT_CHOICE, .offset = AT(f), .values = words, .help = h                           \
    }
#define FLAG(n, f, v, h)                                                                                               \
    {                                                                                                                  \
        .name = n, .kind = OPT_FLAG, .offset = AT(f), .set = v, .help = h                                              \
    }
#define HEADING(text)                                                                                                  \
    {                                                                                                                  \
        .heading = text                                                                                                \
    }
#define STEPS_MAX 1000000000

/* In the order of --help. */
static const struct train_option options[] = {
    HEADING("model and data:"),
    {.name = "model",
     .arg = "NAME",
     .kind = OPT_STRING,
     .offset = AT(model),
     .lead = train_model_names,
     .help = "(default resnet20)"},
    TEXT("data", "SPEC", data,
         "cifar10:DIR, cifar100:DIR, fashion-mnist:DIR, synthetic[:N]\n(default synthetic:10000)"),
    WHOLE("image-size", "N", OPT_INT, image_size, 8, 1024, "synthetic images are N x N (default 32)"),
    WHOLE("classes", "N", OPT_INT, classes, 2, 255, "synthetic classes (default 10)"),
    {.name = "batchnorm",
     .arg = "on|off",
     .kind = OPT_ON_OFF,
     .offset = AT(batchnorm),
     .values = "on off",
     .help = "batch normalisation layers (default on)"},
    FLAG("no-augment", augment, 0, "no random crop / flip"),
    WHOLE("max-samples", "N", OPT_LONG, max_samples, 1, 100000000, "use only the first N samples of each split"),
    HEADING("length and optimiser:"),
    WHOLE("epochs", "N", OPT_LONG, epochs, 1, 100000, "train N epochs (default 1)"),
    WHOLE("steps", "N", OPT_LONG, steps, 1, STEPS_MAX, "stop after N steps in all"),
    WHOLE("batch", "N", OPT_LONG, batch, 1, 65536, "samples per rank and step (default 64)"),
    NUMBER("lr", "F", lr, 0, 100, "base learning rate per rank (default 0.1), scaled by ranks"),
    NUMBER("momentum", "F", momentum, 0, 1, "(default 0.9)      --weight-decay F (default 5e-4)"),
    NUMBER("weight-decay", "F", weight_decay, 0, 1, NULL),
    CHOICE("schedule", "S", schedule, "step cosine exponential", "step, cosine or exponential (default step)"),
    NUMBER("warmup-epochs", "F", warmup_epochs, 0, 1000, "linear warm-up from lr to lr*ranks (default 0)"),
    NUMBER("label-smoothing", "F", smoothing, 0, 0.999, "(default 0)"),
    WHOLE("seed", "N", OPT_SEED, seed, 0, 0x7fffffffL, "(default 1)"),
    HEADING("execution:"),
    CHOICE("backend", "B", backend, "onednn ref", "onednn or ref (default onednn)"),
    CHOICE("allreduce", "A", allreduce, "mpi ring", "mpi (MPI_Allreduce) or ring (own ring) (default mpi)"),
    NUMBER("fusion-mb", "F", fusion_mb, 0, 4096, "gradient fusion buffer in MiB, 0: per tensor (default 64)"),
    WHOLE("threads", "N", OPT_LONG, threads, 1, 4096, "compute threads (default: the CPUs it is bound to)"),
    TEXT("cpus", "LIST", cpus, "bind to CPUs, e.g. 0-3,8      --mems LIST  bind memory to NUMA nodes"),
    TEXT("mems", "LIST", mems, NULL),
    HEADING("output and state:"),
    WHOLE("log-every", "N", OPT_LONG, log_every, 1, STEPS_MAX, "one step line every N steps (default 1)"),
    TEXT("trace", "FILE", trace, "Chrome trace events (pid = rank, one lane per phase)"),
    TEXT("checkpoint", "FILE", checkpoint,
         "write a checkpoint atomically every --checkpoint-every STEPS\nand at the end"),
    WHOLE("checkpoint-every", "STEPS", OPT_LONG, checkpoint_every, 1, STEPS_MAX, NULL),
    TEXT("resume", "FILE", resume, "continue from a checkpoint"),
    WHOLE("stop-after", "N", OPT_LONG, stop_after, 1, STEPS_MAX,
          "leave after N steps of this run, as if interrupted (the\nschedule still spans --epochs/--steps)"),
    FLAG("help", help, 1, "this text"),
    FLAG("version", version, 1, "print the version"),
};
enum { NOPTIONS = sizeof options / sizeof options[0] };

#undef FILLS
#define FILLS train_gen_data_options
/* gen-data's; --help shows them in its usage lines, so they need no help text of their own. */
static const struct train_option gen_data_options[] = {
    CHOICE("format", "FORMAT", format, TRAIN_DATA_FORMATS, NULL),
    WHOLE("samples", "N", OPT_LONG, samples, 1, 1000000, NULL),
    WHOLE("test-samples", "N", OPT_LONG, test_samples, 1, 1000000, NULL),
    WHOLE("seed", "N", OPT_SEED, seed, 0, 0x7fffffffL, NULL),
    FLAG("help", help, 1, NULL),
};
enum { NGEN_DATA_OPTIONS = sizeof gen_data_options / sizeof gen_data_options[0] };

/* The most rows a table may have: getopt_long's list is built on the stack. */
#define MAX_ROWS 64
_Static_assert(NOPTIONS < MAX_ROWS && NGEN_DATA_OPTIONS < MAX_ROWS, "a table outgrew MAX_ROWS");

/* The column where every help text starts, after "  --name ARG". */
#define HELP_COLUMN 24

void train_usage(FILE *f)
{
    fputs("usage: cosched-train [options]\n"
          "       cosched-train gen-data --format cifar10|cifar100|fashion-mnist [--samples N]\n"
          "                              [--test-samples N] [--seed N] OUT_DIR\n"
          "Data-parallel CNN training; JSON lines on stdout (see docs/trainer-output.md).\n"
          "Run under mpirun -np N or srun for N ranks.\n\n",
          f);
    for (const struct train_option *k = options; k < options + NOPTIONS; k++) {
        if (!k->name)
            fprintf(f, "%s\n", k->heading);
        if (!k->name || !k->help)
            continue;
        char flag[64];
        snprintf(flag, sizeof flag, "--%s%s%s", k->name, k->arg ? " " : "", k->arg ? k->arg : "");
        fprintf(f, "  %-*s", HELP_COLUMN - 2, flag);
        if (k->lead)
            fprintf(f, "%s ", k->lead());
        for (const char *c = k->help; *c; c++)
            if (*c == '\n')
                fprintf(f, "\n%*s", HELP_COLUMN, "");
            else
                fputc(*c, f);
        fputc('\n', f);
    }
}

static void set_defaults(train_options *o)
{
    memset(o, 0, sizeof(*o));
    o->model = "resnet20", o->data = "synthetic:10000", o->backend = "onednn";
    o->schedule = "step", o->allreduce = "mpi";
    o->image_size = 32, o->classes = 10, o->batchnorm = 1, o->augment = 1;
    o->epochs = 1, o->batch = 64, o->log_every = 1;
    o->lr = 0.1, o->momentum = 0.9, o->weight_decay = 5e-4, o->fusion_mb = 64;
    o->seed = 1;
}

/* The place of text among the space-separated words, or -1. */
static int word_index(const char *words, const char *text)
{
    size_t len = strlen(text);
    int i = 0;
    for (const char *w = words; *w; i++) {
        size_t wlen = strcspn(w, " ");
        if (len > 0 && wlen == len && strncmp(w, text, len) == 0)
            return i;
        w += wlen + (w[wlen] == ' ');
    }
    return -1;
}

/* "--backend cuda: expected onednn or ref": the words of an OPT_CHOICE, as its error names them. */
static int expected_words(const struct train_option *k, const char *text, char *err, size_t errlen)
{
    int count = 1;
    for (const char *w = k->values; *w; w++)
        count += *w == ' ';
    int n = snprintf(err, errlen, "--%s %s: expected ", k->name, text);
    const char *w = k->values;
    for (int i = 0; i < count && n >= 0 && (size_t)n < errlen; i++) {
        int wlen = (int)strcspn(w, " ");
        n += snprintf(err + n, errlen - (size_t)n, "%s%.*s", i == 0 ? "" : i == count - 1 ? " or " : ", ", wlen, w);
        w += wlen + (w[wlen] == ' ');
    }
    return -1;
}

/* A number as people write it, v; -1 when it is none. Whole numbers are digits after an optional
 * minus, nothing else ("1e3", "0x10" and " 5" are not); beyond a long they are out of range. */
static int parse_number(const char *text, bool whole, double *v, long *l)
{
    char *end;
    errno = 0;
    if (whole) {
        const char *digits = text + (*text == '-');
        if (*digits < '0' || *digits > '9')
            return -1;
        *l = strtol(text, &end, 10);
        *v = errno == ERANGE ? (*l < 0 ? -INFINITY : INFINITY) : (double)*l;
    } else {
        *v = strtod(text, &end); /* an overflow is infinite, out of every range */
    }
    return end == text || *end || isnan(*v) ? -1 : 0;
}

static int set_number(void *o, const struct train_option *k, const char *text, char *err, size_t errlen)
{
    bool whole = k->kind != OPT_DOUBLE;
    double v = 0;
    long l = 0;
    char range[64];
    if (whole)
        snprintf(range, sizeof range, "%ld..%ld", (long)k->min, (long)k->max);
    else
        snprintf(range, sizeof range, "%g..%g", k->min, k->max);
    if (parse_number(text, whole, &v, &l) < 0) {
        snprintf(err, errlen, "--%s: %s is not a %snumber (range %s)", k->name, text, whole ? "whole " : "", range);
        return -1;
    }
    if (v < k->min || v > k->max) {
        snprintf(err, errlen, "--%s: %s is out of range %s", k->name, text, range);
        return -1;
    }
    char *field = (char *)o + k->offset;
    if (k->kind == OPT_INT)
        *(int *)field = (int)l;
    else if (k->kind == OPT_LONG)
        *(long *)field = l;
    else if (k->kind == OPT_SEED)
        *(uint64_t *)field = (uint64_t)l;
    else
        *(double *)field = v;
    return 0;
}

static int set_option(void *o, const struct train_option *k, const char *text, char *err, size_t errlen)
{
    char *field = (char *)o + k->offset;
    switch (k->kind) {
    case OPT_STRING: *(const char **)field = text; return 0;
    case OPT_CHOICE:
    case OPT_ON_OFF: {
        int i = word_index(k->values, text);
        if (i < 0)
            return expected_words(k, text, err, errlen);
        if (k->kind == OPT_ON_OFF)
            *(int *)field = i == 0;
        else
            *(const char **)field = text;
        return 0;
    }
    case OPT_FLAG: *(int *)field = k->set; return 0;
    default: return set_number(o, k, text, err, errlen);
    }
}

/* Fill o (its defaults set) from argv by the n rows of table; -h is the table's --help. operand:
 * NULL where the command takes none, else where its one argument goes. */
static int parse_table(const struct train_option *table, int n, void *o, const char **operand, int argc, char **argv,
                       char *err, size_t errlen)
{
    /* getopt_long's list, from the table: an option's value is 256 + its index there */
    struct option longopts[MAX_ROWS + 1];
    int nlong = 0, help = -1;
    for (int i = 0; i < n; i++) {
        if (table[i].name)
            longopts[nlong++] = (struct option){table[i].name, table[i].arg ? required_argument : no_argument, NULL,
                                                256 + i};
        if (table[i].name && strcmp(table[i].name, "help") == 0)
            help = 256 + i;
    }
    longopts[nlong] = (struct option){NULL, 0, NULL, 0};
    opterr = 0;
    optind = 1;
    int c, li = -1;
    char name[64];
    while ((c = getopt_long(argc, argv, ":h", longopts, &li)) != -1) {
        /* the flag as the user typed it, for messages; getopt has moved past its value */
        if (li >= 0)
            snprintf(name, sizeof(name), "--%s", longopts[li].name);
        else
            snprintf(name, sizeof(name), "%s", optind > 1 && optind <= argc ? argv[optind - 1] : "?");
        li = -1;
        if (c == 'h')
            c = help;
        if (c >= 256 && c < 256 + n) {
            if (set_option(o, &table[c - 256], optarg, err, errlen) != 0)
                return -1;
        } else if (c == ':') {
            snprintf(err, errlen, "%s needs a value", name);
            return -1;
        } else {
            if (optopt && optopt < 256)
                snprintf(err, errlen, "unknown option -%c (see --help)", optopt);
            else
                snprintf(err, errlen, "unknown option or missing value: %s (see --help)", name);
            return -1;
        }
    }
    if (operand && optind < argc)
        *operand = argv[optind++];
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
        return -1;
    }
    return 0;
}

int train_options_parse(train_options *o, int argc, char **argv, char *err, size_t errlen)
{
    set_defaults(o);
    if (parse_table(options, NOPTIONS, o, NULL, argc, argv, err, errlen) != 0)
        return -1;
    if (o->checkpoint_every && !o->checkpoint) {
        snprintf(err, errlen, "--checkpoint-every needs --checkpoint FILE");
        return -1;
    }
    return 0;
}

int train_gen_data_parse(train_gen_data_options *o, int argc, char **argv, char *err, size_t errlen)
{
    *o = (train_gen_data_options){.samples = 200, .test_samples = 100, .seed = 1};
    if (parse_table(gen_data_options, NGEN_DATA_OPTIONS, o, &o->out_dir, argc, argv, err, errlen) != 0)
        return -1;
    if (!o->help && (!o->format || !o->out_dir)) {
        snprintf(err, errlen, "needs --format FORMAT and OUT_DIR");
        return -1;
    }
    return 0;
}
