/* experiment_round: a round's blocks from its noise's lines; see experiment_round.h. */
#include "experiment_round.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_output.h"

int exp_round_init(exp_round_t *rd, exp_block_t *blocks, int n, int runs, int producers)
{
    size_t blocks_n = (size_t)(n > 0 ? n : 1), processes = (size_t)(runs > 0 ? 2 * runs : 1);
    *rd = (exp_round_t){.blocks = blocks, .n = n, .producers = producers};
    rd->seen = calloc(blocks_n, sizeof *rd->seen);
    rd->last_end = calloc(blocks_n, sizeof *rd->last_end);
    rd->steady_bytes = calloc(blocks_n, sizeof *rd->steady_bytes);
    rd->steady_seconds = calloc(blocks_n, sizeof *rd->steady_seconds);
    rd->last_step = malloc(processes * sizeof *rd->last_step);
    rd->last_elapsed = calloc(processes, sizeof *rd->last_elapsed);
    if (!rd->seen || !rd->last_end || !rd->steady_bytes || !rd->steady_seconds || !rd->last_step || !rd->last_elapsed) {
        exp_round_free(rd);
        return -1;
    }
    for (size_t p = 0; p < processes; p++)
        rd->last_step[p] = -1;
    return 0;
}

void exp_round_free(exp_round_t *rd)
{
    free(rd->seen);
    free(rd->last_end);
    free(rd->steady_bytes);
    free(rd->steady_seconds);
    free(rd->last_step);
    free(rd->last_elapsed);
    rd->seen = NULL;
    rd->last_end = rd->steady_bytes = rd->steady_seconds = rd->last_elapsed = NULL;
    rd->last_step = NULL;
}

/* A progress line after the first of its block adds to the block's steady throughput. */
static void add_progress(exp_round_t *rd, json_t *line, json_int_t step)
{
    int process = 2 * rd->current + (json_integer_value(json_object_get(line, RUNOUT_RANK)) & 1);
    double elapsed = json_number_value(json_object_get(line, RUNOUT_ELAPSED));
    if (rd->last_step[process] == step && step >= 1 && step <= rd->n) {
        rd->steady_bytes[step - 1] += json_number_value(json_object_get(line, RUNOUT_BYTES));
        rd->steady_seconds[step - 1] += elapsed - rd->last_elapsed[process];
    }
    rd->last_step[process] = step;
    rd->last_elapsed[process] = elapsed;
}

void exp_round_line(json_t *line, void *arg)
{
    exp_round_t *rd = arg;
    const char *event = json_string_value(json_object_get(line, RUNOUT_EVENT));
    json_int_t step = json_integer_value(json_object_get(line, RUNOUT_STEP));
    if (event && strcmp(event, RUNOUT_EVENT_PROGRESS) == 0)
        add_progress(rd, line, step);
    if (!event || strcmp(event, RUNOUT_EVENT_PHASE) != 0 || step < 1 || step > rd->n)
        return;
    exp_block_t *b = &rd->blocks[step - 1];
    double start = json_number_value(json_object_get(line, RUNOUT_START));
    double end = start + json_number_value(json_object_get(line, RUNOUT_DURATION));
    double mbs = json_number_value(json_object_get(line, RUNOUT_RATE_MBS));
    if (rd->seen[step - 1]++ == 0) {
        b->start = start;
        b->end = end;
        b->noise_mbs = 0;
        rd->last_end[step - 1] = end;
    }
    b->start = fmax(b->start, start);
    b->end = fmin(b->end, end);
    b->noise_mbs += mbs;
    rd->last_end[step - 1] = fmax(rd->last_end[step - 1], end);
}

void exp_round_measure(exp_round_t *rd, const exp_step_t *steps, int nsteps, double drop)
{
    double stepped_to = nsteps ? steps[nsteps - 1].end : 0;
    for (int b = 0; b < rd->n; b++) {
        if (rd->seen[b] != rd->producers || rd->blocks[b].end > stepped_to)
            continue;
        exp_block_measure(&rd->blocks[b], steps, nsteps, drop);
        if (rd->steady_seconds[b] > 0) /* else the phase lines' rate, start-up included */
            rd->blocks[b].noise_mbs = rd->steady_bytes[b] / (rd->steady_seconds[b] / rd->producers) / 1e6;
    }
}

double exp_round_played_to(const exp_round_t *rd)
{
    double last_end = 0;
    for (int b = 0; b < rd->n; b++)
        if (rd->seen[b] == rd->producers)
            last_end = fmax(last_end, rd->blocks[b].end);
    return last_end;
}

void exp_round_close(exp_round_t *rd, double stopped_at)
{
    for (int b = 0; b < rd->n; b++)
        if (rd->seen[b] != rd->producers || rd->last_end[b] >= stopped_at)
            rd->blocks[b].nsteps = 0;
}
