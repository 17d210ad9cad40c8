/* phase_line: the "phase" output line every mode ends with, so all modes report start,
 * duration, bytes and rates under the same keys, and the settings they ran with. */
#include "phase_line.h"

#include "run_output.h"
#include "stream.h"

json_t *noise_opts_json(const struct noise_opts *o)
{
    json_t *c = json_object();
    json_object_set_new(c, "duration", json_real(o->duration));
    json_object_set_new(c, "intensity", json_real(o->intensity));
    json_object_set_new(c, "period", json_real(o->period));
    json_object_set_new(c, "threads", json_integer(o->threads));
    /* Effective: a measured benchmark prints no progress lines whatever was asked. */
    json_object_set_new(c, "report_every", json_real(o->duration > 0 ? o->report_every : 0));
    switch (o->mode) {
    case NOISE_MODE_STREAM:
        json_object_set_new(c, "array_bytes", json_integer((json_int_t)o->array_bytes));
        json_object_set_new(c, "ntimes", json_integer(o->ntimes));
        json_object_set_new(c, "streaming_stores", json_boolean(o->nt_stores && noise_stream_has_nt()));
        break;
    case NOISE_MODE_IOR:
        json_object_set_new(c, "dir", json_string(o->dir));
        json_object_set_new(c, "block", json_integer((json_int_t)o->block));
        json_object_set_new(c, "transfer", json_integer((json_int_t)o->transfer));
        json_object_set_new(c, "segments", json_integer(o->segments));
        json_object_set_new(c, "file_per_proc", json_boolean(o->file_per_proc));
        json_object_set_new(c, "write", json_boolean(o->do_write));
        json_object_set_new(c, "read", json_boolean(o->do_read));
        json_object_set_new(c, "direct", json_boolean(o->direct));
        json_object_set_new(c, "fsync", json_boolean(o->fsync));
        json_object_set_new(c, "reorder", json_boolean(o->reorder));
        json_object_set_new(c, "invalidate", json_boolean(o->invalidate));
        json_object_set_new(c, "preallocate", json_boolean(o->preallocate));
        json_object_set_new(c, "max_bytes", json_integer((json_int_t)o->max_bytes));
        break;
    case NOISE_MODE_PINGPONG:
        json_object_set_new(c, "min_size", json_integer((json_int_t)o->min_size));
        json_object_set_new(c, "max_size", json_integer((json_int_t)o->max_size));
        json_object_set_new(c, "size", json_integer((json_int_t)o->msg_size));
        json_object_set_new(c, "iterations", json_integer(o->iterations));
        json_object_set_new(c, "warmup", json_integer(o->warmup));
        json_object_set_new(c, "window", json_integer(o->window));
        json_object_set_new(c, "allpairs", json_boolean(o->allpairs));
        break;
    default: break;
    }
    return c;
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
