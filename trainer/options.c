/* options: the command-line parser of cosched-train (getopt_long) with range checks, so a bad
 * flag is refused with its name before anything is loaded or allocated. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "model.h"
#include "optim.h"
#include "options.h"

void train_usage(FILE *f)
{
    fprintf(f,
            "usage: cosched-train [options]\n"
            "       cosched-train gen-data --format cifar10|cifar100|fashion-mnist [--samples N]\n"
            "                              [--test-samples N] [--seed N] OUT_DIR\n"
            "Data-parallel CNN training; JSON lines on stdout (see docs/trainer-output.md).\n"
            "Run under mpirun -np N or srun for N ranks.\n\n"
            "model and data:\n"
            "  --model NAME          %s (default resnet20)\n"
            "  --data SPEC           cifar10:DIR, cifar100:DIR, fashion-mnist:DIR, synthetic[:N]\n"
            "                        (default synthetic:10000)\n"
            "  --image-size N        synthetic images are N x N (default 32)\n"
            "  --classes N           synthetic classes (default 10)\n"
            "  --batchnorm on|off    batch normalisation layers (default on)\n"
            "  --no-augment          no random crop / flip\n"
            "  --max-samples N       use only the first N samples of each split\n"
            "length and optimiser:\n"
            "  --epochs N            train N epochs (default 1)\n"
            "  --steps N             stop after N steps in all\n"
            "  --batch N             samples per rank and step (default 64)\n"
            "  --lr F                base learning rate per rank (default 0.1), scaled by ranks\n"
            "  --momentum F          (default 0.9)      --weight-decay F (default 5e-4)\n"
            "  --schedule S          step, cosine or exponential (default step)\n"
            "  --warmup-epochs F     linear warm-up from lr to lr*ranks (default 0)\n"
            "  --label-smoothing F   (default 0)\n"
            "  --seed N              (default 1)\n"
            "execution:\n"
            "  --backend B           onednn or ref (default onednn)\n"
            "  --allreduce A         mpi (MPI_Allreduce) or ring (own ring) (default mpi)\n"
            "  --fusion-mb F         gradient fusion buffer in MiB, 0: per tensor (default 64)\n"
            "  --threads N           compute threads (default: the CPUs it is bound to)\n"
            "  --cpus LIST           bind to CPUs, e.g. 0-3,8      --mems LIST  bind memory to NUMA nodes\n"
            "output and state:\n"
            "  --log-every N         one step line every N steps (default 1)\n"
            "  --trace FILE          Chrome trace events (pid = rank, one lane per phase)\n"
            "  --checkpoint FILE     write a checkpoint atomically every --checkpoint-every STEPS\n"
            "                        and at the end\n"
            "  --resume FILE         continue from a checkpoint\n"
            "  --stop-after N        leave after N steps of this run, as if interrupted (the\n"
            "                        schedule still spans --epochs/--steps)\n"
            "  --help                this text\n"
            "  --version             print the version\n",
            train_model_names());
}

static int to_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

enum {
    O_MODEL = 256,
    O_DATA,
    O_IMAGE,
    O_CLASSES,
    O_BN,
    O_NOAUG,
    O_EPOCHS,
    O_STEPS,
    O_BATCH,
    O_LR,
    O_MOM,
    O_WD,
    O_SCHED,
    O_WARM,
    O_SMOOTH,
    O_SEED,
    O_BACKEND,
    O_ALLRED,
    O_FUSION,
    O_THREADS,
    O_CPUS,
    O_MEMS,
    O_LOG,
    O_TRACE,
    O_CKPT,
    O_CKPT_EVERY,
    O_RESUME,
    O_MAXS,
    O_STOP,
    O_HELP,
    O_VERSION
};

int train_options_parse(train_options *o, int argc, char **argv, char *err, size_t errlen)
{
    static const struct option longopts[] = {{"model", 1, 0, O_MODEL},
                                             {"data", 1, 0, O_DATA},
                                             {"image-size", 1, 0, O_IMAGE},
                                             {"classes", 1, 0, O_CLASSES},
                                             {"batchnorm", 1, 0, O_BN},
                                             {"no-augment", 0, 0, O_NOAUG},
                                             {"epochs", 1, 0, O_EPOCHS},
                                             {"steps", 1, 0, O_STEPS},
                                             {"batch", 1, 0, O_BATCH},
                                             {"lr", 1, 0, O_LR},
                                             {"momentum", 1, 0, O_MOM},
                                             {"weight-decay", 1, 0, O_WD},
                                             {"schedule", 1, 0, O_SCHED},
                                             {"warmup-epochs", 1, 0, O_WARM},
                                             {"label-smoothing", 1, 0, O_SMOOTH},
                                             {"seed", 1, 0, O_SEED},
                                             {"backend", 1, 0, O_BACKEND},
                                             {"allreduce", 1, 0, O_ALLRED},
                                             {"fusion-mb", 1, 0, O_FUSION},
                                             {"threads", 1, 0, O_THREADS},
                                             {"cpus", 1, 0, O_CPUS},
                                             {"mems", 1, 0, O_MEMS},
                                             {"log-every", 1, 0, O_LOG},
                                             {"trace", 1, 0, O_TRACE},
                                             {"checkpoint", 1, 0, O_CKPT},
                                             {"checkpoint-every", 1, 0, O_CKPT_EVERY},
                                             {"resume", 1, 0, O_RESUME},
                                             {"max-samples", 1, 0, O_MAXS},
                                             {"stop-after", 1, 0, O_STOP},
                                             {"help", 0, 0, O_HELP},
                                             {"version", 0, 0, O_VERSION},
                                             {0, 0, 0, 0}};
    memset(o, 0, sizeof(*o));
    o->model = "resnet20", o->data = "synthetic:10000", o->backend = "onednn";
    o->schedule = "step", o->allreduce = "mpi";
    o->image_size = 32, o->classes = 10, o->batchnorm = 1, o->augment = 1;
    o->epochs = 1, o->batch = 64, o->log_every = 1;
    o->lr = 0.1, o->momentum = 0.9, o->weight_decay = 5e-4, o->fusion_mb = 64;
    o->seed = 1;
    opterr = 0;
    optind = 1;
    int c, li = -1;
    long v;
    char name[64];
    while ((c = getopt_long(argc, argv, ":h", longopts, &li)) != -1) {
        /* the flag as the user typed it, for messages; getopt has moved past its value */
        if (li >= 0)
            snprintf(name, sizeof(name), "--%s", longopts[li].name);
        else
            snprintf(name, sizeof(name), "%s", optind > 1 && optind <= argc ? argv[optind - 1] : "?");
        li = -1;
        switch (c) {
        case O_MODEL: o->model = optarg; break;
        case O_DATA: o->data = optarg; break;
        case O_IMAGE:
            if (cpulist_parse_int(optarg, 8, 1024, &v) != 0)
                goto bad_range;
            o->image_size = (int)v;
            break;
        case O_CLASSES:
            if (cpulist_parse_int(optarg, 2, 255, &v) != 0)
                goto bad_range;
            o->classes = (int)v;
            break;
        case O_BN:
            if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
                snprintf(err, errlen, "--batchnorm %s: expected on or off", optarg);
                return -1;
            }
            o->batchnorm = strcmp(optarg, "on") == 0;
            break;
        case O_NOAUG: o->augment = 0; break;
        case O_EPOCHS:
            if (cpulist_parse_int(optarg, 1, 100000, &o->epochs) != 0)
                goto bad_range;
            break;
        case O_STEPS:
            if (cpulist_parse_int(optarg, 1, 1000000000, &o->steps) != 0)
                goto bad_range;
            break;
        case O_BATCH:
            if (cpulist_parse_int(optarg, 1, 65536, &o->batch) != 0)
                goto bad_range;
            break;
        case O_LR:
            if (to_double(optarg, 0, 100, &o->lr) != 0)
                goto bad_range;
            break;
        case O_MOM:
            if (to_double(optarg, 0, 1, &o->momentum) != 0)
                goto bad_range;
            break;
        case O_WD:
            if (to_double(optarg, 0, 1, &o->weight_decay) != 0)
                goto bad_range;
            break;
        case O_SCHED:
            if (train_sched_parse(optarg) < 0) {
                snprintf(err, errlen, "--schedule %s: expected step, cosine or exponential", optarg);
                return -1;
            }
            o->schedule = optarg;
            break;
        case O_WARM:
            if (to_double(optarg, 0, 1000, &o->warmup_epochs) != 0)
                goto bad_range;
            break;
        case O_SMOOTH:
            if (to_double(optarg, 0, 0.999, &o->smoothing) != 0)
                goto bad_range;
            break;
        case O_SEED:
            if (cpulist_parse_int(optarg, 0, 0x7fffffffL, &v) != 0)
                goto bad_range;
            o->seed = (uint64_t)v;
            break;
        case O_BACKEND:
            if (strcmp(optarg, "onednn") != 0 && strcmp(optarg, "ref") != 0) {
                snprintf(err, errlen, "--backend %s: expected onednn or ref", optarg);
                return -1;
            }
            o->backend = optarg;
            break;
        case O_ALLRED:
            if (strcmp(optarg, "mpi") != 0 && strcmp(optarg, "ring") != 0) {
                snprintf(err, errlen, "--allreduce %s: expected mpi or ring", optarg);
                return -1;
            }
            o->allreduce = optarg;
            break;
        case O_FUSION:
            if (to_double(optarg, 0, 4096, &o->fusion_mb) != 0)
                goto bad_range;
            break;
        case O_THREADS:
            if (cpulist_parse_int(optarg, 1, 4096, &o->threads) != 0)
                goto bad_range;
            break;
        case O_CPUS: o->cpus = optarg; break;
        case O_MEMS: o->mems = optarg; break;
        case O_LOG:
            if (cpulist_parse_int(optarg, 1, 1000000000, &o->log_every) != 0)
                goto bad_range;
            break;
        case O_TRACE: o->trace = optarg; break;
        case O_CKPT: o->checkpoint = optarg; break;
        case O_CKPT_EVERY:
            if (cpulist_parse_int(optarg, 1, 1000000000, &o->checkpoint_every) != 0)
                goto bad_range;
            break;
        case O_RESUME: o->resume = optarg; break;
        case O_STOP:
            if (cpulist_parse_int(optarg, 1, 1000000000, &o->stop_after) != 0)
                goto bad_range;
            break;
        case O_MAXS:
            if (cpulist_parse_int(optarg, 1, 100000000, &o->max_samples) != 0)
                goto bad_range;
            break;
        case 'h':
        case O_HELP: o->help = 1; break;
        case O_VERSION: o->version = 1; break;
        case ':': snprintf(err, errlen, "%s needs a value", name); return -1;
        default:
            if (optopt && optopt < 256)
                snprintf(err, errlen, "unknown option -%c (see --help)", optopt);
            else
                snprintf(err, errlen, "unknown option or missing value: %s (see --help)", name);
            return -1;
        }
        continue;
    bad_range:
        snprintf(err, errlen, "%s %s: not a valid value (see --help for the range)", name, optarg);
        return -1;
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
        return -1;
    }
    if (o->checkpoint_every && !o->checkpoint) {
        snprintf(err, errlen, "--checkpoint-every needs --checkpoint FILE");
        return -1;
    }
    return 0;
}
