/* experiment_window: a noise's throughput over a window from its reports; see experiment_window.h. */
#include "experiment_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_output.h"

int exp_window_init(exp_window_t *w, int runs, int per_run)
{
    *w = (exp_window_t){.runs = runs, .per_run = per_run};
    w->process = calloc((size_t)(runs > 0 ? 2 * runs : 1), sizeof *w->process);
    return w->process ? 0 : -1;
}

void exp_window_free(exp_window_t *w)
{
    free(w->process);
    w->process = NULL;
}

void exp_window_line(json_t *line, void *arg)
{
    exp_window_t *w = arg;
    const char *event = json_string_value(json_object_get(line, RUNOUT_EVENT));
    exp_window_process_t *p =
        &w->process[2 * w->current + (json_integer_value(json_object_get(line, RUNOUT_RANK)) & 1)];
    double elapsed, when, bytes = json_number_value(json_object_get(line, RUNOUT_BYTES));
    if (!event || p->ended)
        return;
    if (strcmp(event, RUNOUT_EVENT_PROGRESS) == 0) {
        elapsed = json_number_value(json_object_get(line, RUNOUT_ELAPSED));
        when = json_number_value(json_object_get(line, RUNOUT_TIME));
        p->reported_bytes += bytes;
    } else if (strcmp(event, RUNOUT_EVENT_PHASE) == 0) { /* the total: what no progress line had yet */
        elapsed = json_number_value(json_object_get(line, RUNOUT_DURATION));
        when = json_number_value(json_object_get(line, RUNOUT_START)) + elapsed;
        bytes = fmax(0, bytes - p->reported_bytes);
        p->ended = true;
    } else {
        return;
    }
    if (when - (elapsed - p->last_elapsed) >= w->from) {
        w->bytes += bytes;
        w->seconds += elapsed - p->last_elapsed;
        p->in_window = true;
    }
    p->last_elapsed = elapsed;
}

double exp_window_mbs(const exp_window_t *w)
{
    double seconds = w->seconds;
    for (int k = 0; k < w->runs; k++)
        for (int rank = 0; rank < w->per_run; rank++)
            if (!w->process[2 * k + rank].in_window && w->to > w->from)
                seconds += w->to - w->from;
    return seconds > 0 ? w->bytes / (seconds / (w->runs * w->per_run)) / 1e6 : -1;
}
