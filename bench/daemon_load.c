/* daemon_load: request latency and throughput of coschedd's socket — N client threads, each on
 * its own connection, sending one method back to back for a while; prints p50/p99 and req/s. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

typedef struct {
    const char *socket, *method;
    double seconds;
    double *lat; /* microseconds */
    size_t n, cap;
    int failed;
} worker_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", w->socket);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        w->failed = 1;
        return NULL;
    }
    json_t *req = proto_request(w->method, NULL);
    char err[256];
    double end = now() + w->seconds;
    while (now() < end) {
        double t0 = now();
        json_t *reply = proto_send(fd, req, 5000, err, sizeof err) == 0 ? proto_recv(fd, 5000, err, sizeof err) : NULL;
        double t1 = now();
        if (!reply || !json_is_true(json_object_get(reply, "ok"))) {
            json_decref(reply);
            w->failed = 1;
            break;
        }
        json_decref(reply);
        if (w->n == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 4096;
            w->lat = realloc(w->lat, w->cap * sizeof *w->lat);
        }
        w->lat[w->n++] = (t1 - t0) * 1e6;
    }
    json_decref(req);
    close(fd);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: daemon_load SOCKET METHOD CLIENTS SECONDS\n");
        return 2;
    }
    int clients = atoi(argv[3]);
    double seconds = atof(argv[4]);
    if (clients < 1 || clients > 1024 || !(seconds > 0)) {
        fprintf(stderr, "daemon_load: CLIENTS 1..1024 and SECONDS > 0\n");
        return 2;
    }
    worker_t *w = calloc((size_t)clients, sizeof *w);
    pthread_t *t = calloc((size_t)clients, sizeof *t);
    double t0 = now();
    for (int i = 0; i < clients; i++) {
        w[i] = (worker_t){.socket = argv[1], .method = argv[2], .seconds = seconds};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    size_t total = 0;
    int failed = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(t[i], NULL);
        total += w[i].n;
        failed |= w[i].failed;
    }
    double elapsed = now() - t0;
    double *all = malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < clients; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
        k += w[i].n;
        free(w[i].lat);
    }
    qsort(all, total, sizeof *all, cmp);
    if (total == 0 || failed) {
        fprintf(stderr, "daemon_load: requests failed\n");
        return 1;
    }
    printf("%s clients=%d requests=%zu p50_us=%.1f p99_us=%.1f req_per_s=%.0f\n", argv[2], clients, total,
           all[total / 2], all[(size_t)(total * 0.99)], total / elapsed);
    free(all);
    free(w);
    free(t);
    return 0;
}
