/* load_mix: many clients, each on its own connection, sending a fixed number of mixed requests
 * to coschedd — reads (status, stats, job.list, job.get, run.list, now and then metrics), step
 * reports for a trainer, and for the first 32 clients, as an operator, a job registered and
 * released again every 20 requests. Prints requests, errors (replies that are not ok, and
 * connections lost) and latency percentiles over all requests.
 *   load_mix SOCKET CLIENTS REQUESTS_PER_CLIENT TRAINER_JOB KEEPER_JOB */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

enum { OPERATOR_CLIENTS = 32 };

typedef struct {
    const char *socket, *trainer, *keeper;
    int index, requests;
    double *lat; /* microseconds, one per request */
    int n, errors;
    char first_error[256];
} client_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The k-th request of client c. */
static json_t *request_for(const client_t *c, int k)
{
    char job[32];
    snprintf(job, sizeof job, "load-%d", c->index);
    if (c->index < OPERATOR_CLIENTS && k % 20 == 0)
        return proto_request("job.register", json_pack("{s:s, s:i, s:s, s:s, s:i}", "job", job, "uid", 0, "role",
                                                       "cotenant", "policy", "cores", "cores", 1));
    if (c->index < OPERATOR_CLIENTS && k % 20 == 10)
        return proto_request("job.release", json_pack("{s:s}", "job", job));
    switch (k % 8) {
    case 0: return proto_request("status", NULL);
    case 1: return proto_request("stats", NULL);
    case 2: return proto_request("job.list", NULL);
    case 3: return proto_request("job.get", json_pack("{s:s}", "job", c->keeper));
    case 4: return proto_request("run.list", NULL);
    case 5: return proto_request("report", json_pack("{s:s, s:f}", "job", c->trainer, "step_time", 0.1));
    case 6: return k % 64 == 6 ? proto_request("metrics", NULL) : proto_request("stats", NULL);
    default: return proto_request("job.get", json_pack("{s:s}", "job", c->trainer));
    }
}

static int connect_to(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

static void note_error(client_t *c, const char *what)
{
    if (c->errors++ == 0)
        snprintf(c->first_error, sizeof c->first_error, "%s", what);
}

static void *run_client(void *arg)
{
    client_t *c = arg;
    int fd = connect_to(c->socket);
    char err[256];
    for (int k = 0; k < c->requests; k++) {
        if (fd < 0 && (fd = connect_to(c->socket)) < 0) {
            note_error(c, "cannot connect");
            continue;
        }
        json_t *req = request_for(c, k);
        double t0 = now();
        json_t *reply = proto_send(fd, req, 10000, err, sizeof err) == 0 ? proto_recv(fd, 10000, err, sizeof err)
                                                                         : NULL;
        c->lat[c->n++] = (now() - t0) * 1e6;
        json_decref(req);
        if (!reply) {
            note_error(c, err);
            close(fd);
            fd = -1;
            continue;
        }
        if (!json_is_true(json_object_get(reply, "ok"))) {
            char *text = json_dumps(reply, JSON_COMPACT);
            note_error(c, text ? text : "not ok");
            free(text);
        }
        json_decref(reply);
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: load_mix SOCKET CLIENTS REQUESTS_PER_CLIENT TRAINER_JOB KEEPER_JOB\n");
        return 2;
    }
    int clients = atoi(argv[2]), requests = atoi(argv[3]);
    if (clients < 1 || clients > 4096 || requests < 1) {
        fprintf(stderr, "load_mix: CLIENTS 1..4096, REQUESTS_PER_CLIENT >= 1\n");
        return 2;
    }
    client_t *c = calloc((size_t)clients, sizeof *c);
    pthread_t *threads = calloc((size_t)clients, sizeof *threads);
    double t0 = now();
    for (int i = 0; i < clients; i++) {
        c[i] = (client_t){.socket = argv[1], .trainer = argv[4], .keeper = argv[5], .index = i, .requests = requests};
        c[i].lat = malloc(sizeof(double) * (size_t)requests);
        if (pthread_create(&threads[i], NULL, run_client, &c[i]) != 0) {
            fprintf(stderr, "load_mix: cannot start client thread %d\n", i);
            return 1;
        }
    }
    size_t total = 0;
    int errors = 0;
    const char *first = NULL;
    for (int i = 0; i < clients; i++) {
        pthread_join(threads[i], NULL);
        total += (size_t)c[i].n;
        errors += c[i].errors;
        if (c[i].errors && !first)
            first = c[i].first_error;
    }
    double elapsed = now() - t0;
    double *all = malloc(sizeof(double) * (total ? total : 1));
    size_t k = 0;
    for (int i = 0; i < clients; i++) {
        memcpy(all + k, c[i].lat, sizeof(double) * (size_t)c[i].n);
        k += (size_t)c[i].n;
    }
    qsort(all, total, sizeof *all, by_value);
    printf("clients=%d requests=%zu errors=%d p50_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f req_per_s=%.0f\n",
           clients, total, errors, all[total / 2], all[(size_t)(total * 0.99)], all[(size_t)(total * 0.999)],
           all[total - 1], total / elapsed);
    if (first)
        printf("first error: %.200s\n", first);
    for (int i = 0; i < clients; i++)
        free(c[i].lat);
    free(all);
    free(c);
    free(threads);
    return errors ? 1 : 0;
}
