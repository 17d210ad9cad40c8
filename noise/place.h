/* place: where a worker runs. Applies --cpus/--mems through topology/bind.h, or keeps the
 * binding it was started with (srun, taskset, the daemon), and collects where threads really ran. */
#ifndef COSCHED_NOISE_PLACE_H
#define COSCHED_NOISE_PLACE_H

#include <pthread.h>
#include <stddef.h>
#include <hwloc.h>
#include <jansson.h>

struct noise_place {
    hwloc_bitmap_t cpus;     /* threads are pinned one per CPU of this set */
    hwloc_bitmap_t mems;     /* NUMA domains memory may come from */
    hwloc_bitmap_t ran_cpus; /* CPUs threads were seen on */
    hwloc_bitmap_t mem_numa; /* NUMA domains sampled pages were found on */
    pthread_mutex_t lock;
};

/* cpus/mems NULL or "" keep the current binding. */
int noise_place_init(struct noise_place *p, const char *cpus, const char *mems, char *err, size_t errlen);

/* Merge what a thread saw; thread-safe. */
void noise_place_note(struct noise_place *p, hwloc_const_bitmap_t cpus_seen, int numa_of_page);

/* Note the CPU the calling thread runs on now (modes that run on the main thread). */
void noise_place_note_self(struct noise_place *p);

/* {"cpus":"0-1","mems":"0","cpus_used":"0-1","numa_used":"0","memory_numa":"0"} */
json_t *noise_place_json(struct noise_place *p);

void noise_place_free(struct noise_place *p);

/* The NUMA domain holding the page at addr, or -1 when it is not known. */
int noise_numa_of_address(const void *addr);

#endif
