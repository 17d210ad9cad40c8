/* cmd_job: `cosched job register | release | list` — what Slurm's prolog and epilog call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_parse.h"
#include "client.h"
#include "wire.h"
#include "cpulist.h"
#include "plan.h"

static const char job_help[] =
    "register reserves cores for a job (trainer: ranks on its GPUs' domains; cotenant: --cores\n"
    "one-core ranks where the policy allows) and prints each rank's CPUs and the srun --cpu-bind\n"
    "spec. release frees them (releasing an unknown job is not an error). Root and the configured\n"
    "operators may register; a job's owner may release it. --budget is a trainer's slowdown budget\n"
    "(0.05 = 5 %; default: slowdown_budget in coschedd.yaml) that the guard holds it to. get and list\n"
    "show each job's ranks, a trainer's budget and a co-tenant's allowed share and knob.\n"
    "--cpus LIST plans the job inside these CPUs only (OS indexes: the cpuset Slurm gave the job);\n"
    "trainer ranks take GPU-local CPUs of the list first; a co-tenant gets one rank per core of it\n"
    "unless --cores says fewer; a list that cannot hold the request is refused. --external says the\n"
    "job's processes are started outside coschedd (a Slurm job's tasks): a co-tenant then counts as\n"
    "at work for the slowdown statistics from registration to release, not only while a daemon run\n"
    "of it is alive. A co-tenant's exposure lists its CPUs that share a NUMA domain, an L3 or a core\n"
    "with a registered trainer's: how apart the placement it was given keeps it. confine, called\n"
    "from inside a job's task (the TaskProlog does), plans the job again within the cpuset cgroup\n"
    "Slurm made for it (job_ID above the caller's cgroup), which a prolog cannot see yet, and keeps\n"
    "where Slurm put the job's processes: a co-tenant is held there by the guard from then on.\n"
    "--progress says where a trainer's progress comes from: auto (default: the steps it reports, else\n"
    "its GPUs' busy time, else for a CPU trainer the instructions it retires), or that one source only;\n"
    "--partition NAME (the prolog passes $SLURM_JOB_PARTITION) takes the default from progress.partitions\n"
    "in coschedd.yaml. --autoreport on|off puts a trainer's injected PyTorch step reporter on its\n"
    "tasks' and runs' PYTHONPATH, or not, over the default of autoreport in coschedd.yaml (which\n"
    "autoreport.enabled: false turns off for every job; docs/autoreport.md). --share-cores lets a\n"
    "co-tenant take cores other co-tenants hold (as Slurm's OverSubscribe does), never a trainer's;\n"
    "the guard tells such co-tenants apart by probing.\n"
    "See docs/guard.md.\n";

void cmd_job_help(FILE *out)
{
    fputs(job_help, out);
}

/* A co-tenant's CPUs next to trainers, by level: empty lists are the good news. */
static void print_exposure(json_t *e, bool active)
{
    const char *levels[] = {"numa", "l3", "core"}, *words[] = {"NUMA domain", "L3", "core"};
    printf("co-tenant %s; isolation from trainers where it is: %s", active ? "at work" : "idle",
           json_string_value(json_object_get(e, WIRE_R_ISOLATION)));
    for (int l = 0; l < 3; l++) {
        const char *list = json_string_value(json_object_get(e, levels[l]));
        if (list && *list)
            printf("; cpus %s share a %s with a trainer", list, words[l]);
    }
    printf("\n");
}

/* One job as text: who, where, and what the guard gives or takes. */
static void print_job(json_t *j)
{
    json_t *uid = json_object_get(j, WIRE_R_UID); /* absent: another user's job under private_jobs */
    char owner[32] = "private";
    if (json_is_integer(uid))
        snprintf(owner, sizeof owner, "%lld", (long long)json_integer_value(uid));
    printf("job %s: %s, uid %s, policy %s", json_string_value(json_object_get(j, WIRE_R_JOB)),
           json_string_value(json_object_get(j, WIRE_R_ROLE)), owner,
           json_string_value(json_object_get(j, WIRE_R_POLICY)));
    json_t *budget = json_object_get(j, WIRE_R_BUDGET), *share = json_object_get(j, WIRE_R_ALLOWED_SHARE);
    json_t *knob = json_object_get(j, WIRE_R_KNOB);
    if (json_is_number(budget))
        printf(", slowdown budget %.1f %%", 100 * json_number_value(budget));
    if (json_is_number(share))
        printf(", allowed share %.2f%s%s", json_number_value(share), json_is_string(knob) ? " through " : "",
               json_is_string(knob) ? json_string_value(knob) : "");
    printf("\n");
    plan_isolation_t level;
    if (plan_isolation_parse(json_string_value(json_object_get(j, WIRE_R_ISOLATION)), &level) == 0)
        printf("isolation: %s — %s\n", plan_isolation_name(level), plan_isolation_description(level));
    json_t *allowed = json_object_get(j, WIRE_R_ALLOWED_CPUS);
    if (json_is_string(allowed) || json_is_true(json_object_get(j, WIRE_R_EXTERNAL)))
        printf("allocation: cpus %s%s\n", json_is_string(allowed) ? json_string_value(allowed) : "any",
               json_is_true(json_object_get(j, WIRE_R_EXTERNAL)) ? ", processes started outside coschedd" : "");
    json_t *exposure = json_object_get(j, WIRE_R_EXPOSURE);
    if (json_is_object(exposure))
        print_exposure(exposure, json_is_true(json_object_get(j, WIRE_R_ACTIVE)));
    print_progress(json_object_get(j, WIRE_R_PROGRESS), "");
    json_t *autoreport = json_object_get(j, WIRE_R_AUTOREPORT);
    if (autoreport)
        printf("autoreport: %s\n", json_is_string(autoreport) ? json_string_value(autoreport) : "off");
    print_hold(json_object_get(j, WIRE_R_HOLD), "");
    print_escalation(json_object_get(j, WIRE_R_ESCALATION), "");
    print_time_credit(json_object_get(j, WIRE_R_TIME_CREDIT), "");
    cmd_daemon_print_ranks(json_object_get(j, WIRE_R_RANKS));
    size_t w;
    json_t *warning;
    json_array_foreach(json_object_get(j, WIRE_R_WARNINGS), w, warning)
        printf("warning: %s\n", json_string_value(warning));
    printf("srun %s\n",
           json_is_string(json_object_get(j, WIRE_R_SRUN)) ? json_string_value(json_object_get(j, WIRE_R_SRUN)) : "-");
}

/* A list option's value (--gpus, --cpus): a cpulist; --cpus not empty. */
static int set_register_list(json_t *params, const char *option, const char *key, bool may_be_empty, const char *value)
{
    char err[256] = "";
    hwloc_bitmap_t set = cpulist_parse(value, 0, err, sizeof err);
    bool empty = set && hwloc_bitmap_iszero(set);
    hwloc_bitmap_free(set);
    if (!set || (empty && !may_be_empty))
        return output_usage_error("job register", "--%s: %s", option, set ? "the list is empty" : err);
    json_object_set_new(params, key, json_string(value));
    return 0;
}

static int set_register_progress(json_t *params, const char *value)
{
    if (strcmp(value, WIRE_PROGRESS_AUTO) && strcmp(value, WIRE_PROGRESS_STEPS) && strcmp(value, WIRE_PROGRESS_GPU) &&
        strcmp(value, WIRE_PROGRESS_PMU) && strcmp(value, WIRE_PROGRESS_NONE))
        return output_usage_error("job register", "--progress is auto, steps, gpu, pmu or none, not '%s'", value);
    json_object_set_new(params, WIRE_P_PROGRESS, json_string(value));
    return 0;
}

/* --uid, --ranks-per-gpu, --cores-per-rank, --cores: whole numbers in their ranges (cli_table.c). */
static int set_register_count(json_t *params, cli_option_id_t option, const char *value)
{
    const cli_option_t *spec = &cli_options[option];
    long n, min = option == CLI_O_CORES_PER_RANK ? 0 : (long)spec->min; /* 0: the daemon's default */
    if (cpulist_parse_int(value, min, (long)spec->max, &n) < 0)
        return output_usage_error("job register", "--%s needs a whole number, not '%s'", spec->name, value);
    json_object_set_new(params,
                        option == CLI_O_UID              ? WIRE_P_UID
                        : option == CLI_O_RANKS_PER_GPU  ? WIRE_P_RANKS_PER_GPU
                        : option == CLI_O_CORES_PER_RANK ? WIRE_P_CORES_PER_RANK
                                                         : WIRE_P_CORES,
                        json_integer(n));
    return 0;
}

/* Each option of job register into the request's parameters, in the order given. */
static int set_register_option(void *ctx, cli_option_id_t option, const char *value)
{
    json_t *params = ctx;
    double budget;
    int rc;
    switch (option) {
    case CLI_O_JOB: json_object_set_new(params, WIRE_P_JOB, json_string(value)); break;
    case CLI_O_ROLE: json_object_set_new(params, WIRE_P_ROLE, json_string(value)); break;
    case CLI_O_POLICY: json_object_set_new(params, WIRE_P_POLICY, json_string(value)); break;
    case CLI_O_BUDGET:
        if ((rc = cli_parse_budget("job register", value, &budget)) != 0)
            return rc;
        json_object_set_new(params, WIRE_P_BUDGET, json_real(budget));
        break;
    case CLI_O_GPUS: return set_register_list(params, "gpus", WIRE_P_GPUS, true, value);
    case CLI_O_CPUS: return set_register_list(params, "cpus", WIRE_P_CPUS, false, value);
    case CLI_O_EXTERNAL: json_object_set_new(params, WIRE_P_EXTERNAL, json_true()); break;
    case CLI_O_SHARE_CORES: json_object_set_new(params, WIRE_P_SHARE_CORES, json_true()); break;
    case CLI_O_PROGRESS: return set_register_progress(params, value);
    case CLI_O_PARTITION: json_object_set_new(params, WIRE_P_PARTITION, json_string(value)); break;
    case CLI_O_AUTOREPORT:
        if (strcmp(value, "on") && strcmp(value, "off"))
            return output_usage_error("job register", "--autoreport is on or off, not '%s'", value);
        json_object_set_new(params, WIRE_P_AUTOREPORT, json_boolean(strcmp(value, "on") == 0));
        break;
    default: return set_register_count(params, option, value);
    }
    return 0;
}

int cmd_job_register(const client_opts_t *o, int argc, char **argv)
{
    json_t *params = json_object();
    int rest, rc = cli_parse("job register", argc, argv, set_register_option, params, &rest);
    if (rc >= 0) {
        json_decref(params);
        return rc;
    }
    if (rest < argc || !json_object_get(params, WIRE_P_JOB) || !json_object_get(params, WIRE_P_UID) ||
        !json_object_get(params, WIRE_P_ROLE)) {
        json_decref(params);
        return output_usage_error("job register",
                                  rest < argc ? "unexpected argument" : "--job, --uid and --role are required");
    }
    json_t *r = rpc_call(o, WIRE_JOB_REGISTER, params, &rc);
    if (!r)
        return rc;
    if (o->json)
        return output_print_json(r);
    print_job(r);
    json_decref(r);
    return EXIT_OK;
}

static void print_released(json_t *r)
{
    printf("job %s %s\n", json_string_value(json_object_get(r, WIRE_R_JOB)),
           json_is_true(json_object_get(r, WIRE_R_RELEASED)) ? "released" : "was not registered");
}

/* The subcommands whose only option is --job: ask, then print the answer (or its JSON). */
static int job_call(const client_opts_t *o, int argc, char **argv, const char *command, const char *method,
                    void (*print)(json_t *))
{
    const char *job = NULL;
    int rc = cli_parse_only(command, argc, argv, cli_set_job, &job);
    if (rc >= 0)
        return rc;
    if (!job)
        return output_usage_error(command, "--job ID is required");
    json_t *r = rpc_call(o, method, json_pack("{s:s}", WIRE_P_JOB, job), &rc);
    if (!r)
        return rc;
    if (o->json)
        return output_print_json(r);
    print(r);
    json_decref(r);
    return EXIT_OK;
}

int cmd_job_get(const client_opts_t *o, int argc, char **argv)
{
    return job_call(o, argc, argv, "job get", WIRE_JOB_GET, print_job);
}

int cmd_job_confine(const client_opts_t *o, int argc, char **argv)
{
    return job_call(o, argc, argv, "job confine", WIRE_JOB_CONFINE, print_job);
}

int cmd_job_release(const client_opts_t *o, int argc, char **argv)
{
    return job_call(o, argc, argv, "job release", WIRE_JOB_RELEASE, print_released);
}

int cmd_job_list(const client_opts_t *o, int argc, char **argv)
{
    int rc = cli_no_options("job list", argc, argv);
    if (rc >= 0)
        return rc;
    json_t *r = rpc_call(o, WIRE_JOB_LIST, NULL, &rc);
    if (!r)
        return rc;
    if (o->json)
        return output_print_json(r);
    json_t *jobs = json_object_get(r, WIRE_R_JOBS);
    if (json_array_size(jobs) == 0)
        printf("no jobs\n");
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        if (i)
            printf("\n");
        print_job(j);
    }
    json_decref(r);
    return EXIT_OK;
}

int cmd_job(const client_opts_t *o, int argc, char **argv)
{
    return cli_run_subcommand("job", o, argc, argv);
}
