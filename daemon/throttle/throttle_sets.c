/* throttle_sets: the small sets an attached group keeps — pids, and paths — with add, has and free. */
#include "throttle_internal.h"

#include <stdlib.h>
#include <string.h>

int throttle_pids_add(throttle_pids_t *p, pid_t pid)
{
    if (throttle_pids_has(p, pid))
        return 0;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        pid_t *v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return -1;
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = pid;
    return 0;
}

bool throttle_pids_has(const throttle_pids_t *p, pid_t pid)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i] == pid)
            return true;
    return false;
}

void throttle_pids_free(throttle_pids_t *p)
{
    free(p->v);
    *p = (throttle_pids_t){0};
}

int throttle_list_add(throttle_list_t *l, const char *text)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], text) == 0)
            return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return -1;
        l->items = items;
        l->cap = cap;
    }
    if (!(l->items[l->n] = strdup(text)))
        return -1;
    l->n++;
    return 0;
}

void throttle_list_free(throttle_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    *l = (throttle_list_t){0};
}

bool throttle_list_has(const throttle_list_t *l, const char *text)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], text) == 0)
            return true;
    return false;
}
