/* throttle_mounts: where a filesystem is mounted, from a mountinfo file (proc(5)): cgroup2,
 * resctrl, and cgroup v1 by controller ("cpu" mounted alone or as "cpu,cpuacct"). */
#include "throttle_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mount points escape space, tab, newline and backslash as \ooo. */
static void unescape(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = in; *p && o + 1 < len; o++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
            out[o] = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 4;
        } else {
            out[o] = *p++;
        }
    }
    out[o] = '\0';
}

static bool has_option(const char *options, const char *option)
{
    size_t n = strlen(option);
    for (const char *p = options; p && *p;) {
        if (strncmp(p, option, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    return false;
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
 * Writes the mount point (and the mount's root, when asked) and returns true when fstype (and
 * option among the super options) match. */
static bool line_matches(char *line, const char *fstype, const char *option, char *out, size_t len, char *root,
                         size_t rootlen)
{
    char *save = NULL, *mountpoint = NULL, *mroot = NULL;
    char *tok = strtok_r(line, " ", &save);
    for (int field = 0; tok && field < 4; field++) {
        tok = strtok_r(NULL, " ", &save);
        if (field == 2)
            mroot = tok;
        if (field == 3)
            mountpoint = tok;
    }
    while (tok && strcmp(tok, "-") != 0)
        tok = strtok_r(NULL, " ", &save);
    char *type = strtok_r(NULL, " ", &save);
    (void)strtok_r(NULL, " ", &save); /* source */
    char *super = strtok_r(NULL, " \n", &save);
    if (!mountpoint || !type || strcmp(type, fstype) != 0)
        return false;
    if (option && !has_option(super, option))
        return false;
    unescape(mountpoint, out, len);
    if (root && mroot)
        unescape(mroot, root, rootlen);
    return true;
}

int throttle_mount_find(const char *mountinfo, const char *fstype, const char *option, char *out, size_t len)
{
    return throttle_mount_find_root(mountinfo, fstype, option, out, len, NULL, 0);
}

int throttle_mount_find_root(const char *mountinfo, const char *fstype, const char *option, char *out, size_t len,
                             char *root, size_t rootlen)
{
    FILE *f = fopen(mountinfo, "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int rc = -1;
    while (rc < 0 && getline(&line, &cap, f) > 0)
        if (line_matches(line, fstype, option, out, len, root, rootlen))
            rc = 0;
    free(line);
    fclose(f);
    return rc;
}
