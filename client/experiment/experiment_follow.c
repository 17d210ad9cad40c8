/* experiment_follow: whole new lines of a growing file, parsed as JSON. */
#include "experiment_follow.h"

#include <stdlib.h>
#include <string.h>

int exp_follow(exp_follow_t *f, void (*each)(json_t *line, void *arg), void *arg)
{
    FILE *in = fopen(f->path, "r");
    if (!in)
        return -1;
    if (fseek(in, f->offset, SEEK_SET) != 0) {
        fclose(in);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int n = 0;
    while ((len = getline(&line, &cap, in)) > 0) {
        if (line[len - 1] != '\n')
            break; /* the writer is mid-line: read it whole next time */
        f->offset += len;
        json_t *j = json_loadb(line, (size_t)len, 0, NULL);
        if (json_is_object(j)) {
            each(j, arg);
            n++;
        }
        json_decref(j);
    }
    free(line);
    fclose(in);
    return n;
}
