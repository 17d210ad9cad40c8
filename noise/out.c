/* out: JSON lines through jansson. Keys keep their insertion order (JSON_PRESERVE_ORDER)
 * so a line reads event, mode, ... in the order docs/noise-output.md lists them. */
#include "out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run_output.h"
#include "stop.h"

int noise_out_open(struct noise_out *out, const char *path, int rank, char *err, size_t errlen)
{
    out->rank = rank;
    out->owned = 0;
    out->fp = stdout;
    if (path && *path) {
        out->fp = fopen(path, "w");
        if (!out->fp) {
            snprintf(err, errlen, "cannot open output file %s: %s", path, strerror(errno));
            return -1;
        }
        out->owned = 1;
    }
    return 0;
}

void noise_out_emit(struct noise_out *out, json_t *obj)
{
    if (!obj)
        return;
    if (out->rank >= 0)
        json_object_set_new(obj, RUNOUT_RANK, json_integer(out->rank));
    char *line = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(obj);
    if (!line)
        return;
    /* One fputs of the whole line: ranks sharing a pipe under mpirun never interleave inside a line. */
    size_t n = strlen(line);
    line = realloc(line, n + 2);
    if (line) {
        line[n] = '\n';
        line[n + 1] = '\0';
        if (fputs(line, out->fp) == EOF || fflush(out->fp) == EOF) {
            /* Nobody reads us any more: stop, clean up and exit rather than run blind. */
            if (errno == EPIPE)
                noise_stop_request();
        }
    }
    free(line);
}

void noise_out_close(struct noise_out *out)
{
    if (out->owned && out->fp)
        fclose(out->fp);
    out->fp = NULL;
    out->owned = 0;
}
