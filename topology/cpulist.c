/* cpulist: parse and format CPU / NUMA lists and Slurm hex masks.
 * hwloc's own parsers accept anything; these reject what a user would not mean. */
#include "cpulist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Items separated by commas, each N or N-M with N <= M, in decimal, added to set; 0, or -1
 * with a message. Parsed here, not by hwloc_bitmap_list_sscanf: that one is lenient ("1-" or
 * "x" become odd sets) and reads numbers in any base, so "010" would be CPU 8 and "09" a
 * set other than the one checked (found by fuzzing, issue 14). */
static int parse_list(const char *text, hwloc_bitmap_t set, char *err, size_t errlen)
{
    const char *p = text;
    if (*p == '\0') {
        snprintf(err, errlen, "empty list");
        return -1;
    }
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p))
            goto bad;
        errno = 0;
        unsigned long first = strtoul(p, &end, 10);
        if (errno || first > 1u << 20)
            goto bad;
        unsigned long last = first;
        p = end;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                goto bad;
            last = strtoul(p, &end, 10);
            if (errno || last > 1u << 20 || last < first)
                goto bad;
            p = end;
        }
        if (*p == ',') {
            p++;
            if (*p == '\0')
                goto bad;
        } else if (*p != '\0') {
            goto bad;
        }
        if (hwloc_bitmap_set_range(set, (unsigned)first, (int)last) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
bad:
    snprintf(err, errlen, "'%s' is not a list like 0-3,8 (bad at '%s')", text, p);
    return -1;
}

hwloc_bitmap_t cpulist_parse(const char *text, int allow_all, char *err, size_t errlen)
{
    if (!text) {
        snprintf(err, errlen, "missing list");
        return NULL;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (allow_all && strcmp(text, "all") == 0) {
        hwloc_bitmap_fill(set);
        return set;
    }
    if (parse_list(text, set, err, errlen) < 0) {
        hwloc_bitmap_free(set);
        return NULL;
    }
    return set;
}

char *cpulist_format(hwloc_const_bitmap_t set)
{
    char *s = NULL;
    if (hwloc_bitmap_iszero(set))
        return strdup("");
    if (hwloc_bitmap_list_asprintf(&s, set) < 0)
        return NULL;
    return s;
}

char *cpulist_format_mask(hwloc_const_bitmap_t set)
{
    char *s = NULL;
    if (hwloc_bitmap_taskset_asprintf(&s, set) < 0)
        return NULL;
    return s;
}

int cpulist_parse_int(const char *text, long min, long max, long *out)
{
    char *end;
    if (!text || !isdigit((unsigned char)*text))
        return -1;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}
