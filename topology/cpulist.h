/* cpulist: the hwloc/taskset "list" vocabulary (0-3,8,10-11) for CPU and NUMA sets.
 * Thin, checked wrappers around hwloc bitmaps so every tool parses LIST arguments the same way. */
#ifndef COSCHED_CPULIST_H
#define COSCHED_CPULIST_H

#include <stddef.h>
#include <hwloc.h>

/* Parse "0-3,8" (or "all" when allow_all is set, which yields an infinite set)
 * into a new bitmap. Returns NULL and writes a message naming the bad text on error. */
hwloc_bitmap_t cpulist_parse(const char *text, int allow_all, char *err, size_t errlen);

/* Format a set as "0-3,8" into a new malloc'd string ("" for the empty set). */
char *cpulist_format(hwloc_const_bitmap_t set);

/* Format a set as a Slurm/taskset hex mask "0x3f000" of any width (no commas). */
char *cpulist_format_mask(hwloc_const_bitmap_t set);

/* Parse a non-negative decimal integer in [min, max]; returns 0 on success. */
int cpulist_parse_int(const char *text, long min, long max, long *out);

#endif
