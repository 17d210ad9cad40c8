/* phase_line: the "phase" output line every mode ends with, so all modes report start,
 * duration, bytes and rates under the same keys, and the settings they ran with. */
#include "phase_line.h"

#include "run_output.h"
#include "stream.h"

json_t *noise_opts_json(const struct noise_opts *o)
{
    /* What took effect where it differs from what was asked: a measured benchmark prints no
     * progress lines, and streaming stores need the CPU to have them. */
    struct noise_opts in_effect = *o;
    if (in_effect.duration <= 0)
        in_effect.report_every = 0;
    in_effect.nt_stores = in_effect.nt_stores && noise_stream_has_nt();
    return noise_opts_to_json(&in_effect);
}

void noise_emit_phase(struct noise_ctx *ctx, const struct noise_opts *o, const char *phase, double start_wall,
                      double duration, double bytes, double ops, double cpu_seconds, json_t *extra)
{
    json_t *l = json_object();
    json_object_set_new(l, RUNOUT_EVENT, json_string(RUNOUT_EVENT_PHASE));
    json_object_set_new(l, RUNOUT_MODE, json_string(noise_mode_name(o->mode)));
    json_object_set_new(l, RUNOUT_PHASE, json_string(phase));
    if (ctx->step >= 0)
        json_object_set_new(l, RUNOUT_STEP, json_integer(ctx->step));
    json_object_set_new(l, "config_name", ctx->config_name ? json_string(ctx->config_name) : json_null());
    json_object_set_new(l, "config", noise_opts_json(o));
    json_object_set_new(l, RUNOUT_START, json_real(start_wall));
    json_object_set_new(l, RUNOUT_DURATION, json_real(duration));
    json_object_set_new(l, RUNOUT_BYTES, json_real(bytes));
    json_object_set_new(l, "ops", json_real(ops));
    double mbs = duration > 0 ? bytes / duration / 1e6 : 0;
    json_object_set_new(l, RUNOUT_RATE_MBS, json_real(mbs));
    json_object_set_new(l, "rate_mibs", json_real(duration > 0 ? bytes / duration / 1048576.0 : 0));
    json_object_set_new(l, "ops_per_s", json_real(duration > 0 ? ops / duration : 0));
    json_object_set_new(l, "cpu_seconds", json_real(cpu_seconds));
    if (extra) {
        json_object_update(l, extra);
        json_decref(extra);
    }
    noise_out_emit(ctx->out, l);
    ctx->bytes += bytes;
    ctx->ops += ops;
    ctx->phases++;
}
