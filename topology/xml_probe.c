/* xml_probe: load a topology XML file once in a child process before loading it for real, and
 * say why hwloc refused a file whose format is newer than this hwloc reads.
 * hwloc 2.9 (Debian 12) crashes on some malformed files instead of refusing them: an object
 * without its complete nodeset (found by tests/fuzz), a Bridge as the root, a memory tier
 * without a nodeset (hwloc pull requests 783, 800 and 816, fixed in 2026). A crash would take
 * the CLI or the daemon down with it; in a child it only names the file. */
#include "topo_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child's verdicts; any other end (a signal, a sanitizer's exit code) is a crash. */
enum { PROBE_LOADS = 0, PROBE_REFUSED = 42 };

static _Noreturn void probe_in_child(hwloc_topology_t hw)
{
    /* A crash must end the child: a handler of the caller's (a test framework, a sanitizer)
     * would otherwise go on running the caller's code here. */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        signal(fatal[i], SIG_DFL);
    int loads = hwloc_topology_load(hw) == 0;
    hwloc_topology_destroy(hw);
    _exit(loads ? PROBE_LOADS : PROBE_REFUSED);
}

int topo_xml_probe(hwloc_topology_t hw, const char *path, char *err, size_t errlen)
{
    pid_t pid = fork();
    if (pid < 0)
        return 0; /* no process to spare: the file is read without the safety net */
    if (pid == 0)
        probe_in_child(hw);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return 0;
    }
    if (WIFEXITED(status) && (WEXITSTATUS(status) == PROBE_LOADS || WEXITSTATUS(status) == PROBE_REFUSED))
        return 0; /* hwloc's own refusal, if any, comes from the real load with its reason */
    if (WIFSIGNALED(status))
        snprintf(err, errlen,
                 "%s: hwloc crashes reading this file (%s): it is malformed (lstopo --input %s shows the same)", path,
                 strsignal(WTERMSIG(status)), path);
    else
        snprintf(err, errlen, "%s: hwloc crashes reading this file (exit %d): it is malformed", path,
                 WEXITSTATUS(status));
    return -1;
}

/* The format version in a file's <topology version="X.Y"> tag; 0 when there is none (hwloc 1.x
 * wrote none) or the head cannot be read. */
static int xml_format_version(const char *path, unsigned *major, unsigned *minor)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char head[4096] = {0};
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    const char *tag = strstr(head, "<topology");
    const char *end = tag ? strchr(tag, '>') : NULL;
    const char *v = tag ? strstr(tag, "version=\"") : NULL;
    if (!v || (end && v > end))
        return 0;
    char *rest;
    unsigned long maj = strtoul(v + 9, &rest, 10);
    if (rest == v + 9)
        return 0;
    *major = (unsigned)maj;
    *minor = *rest == '.' ? (unsigned)strtoul(rest + 1, NULL, 10) : 0;
    return 1;
}

int topo_xml_explain_refusal(const char *path, char *err, size_t errlen)
{
    unsigned major, minor, reads = hwloc_get_api_version() >> 16; /* hwloc N imports formats 1.x to N.x */
    if (!xml_format_version(path, &major, &minor) || major <= reads)
        return 0;
    snprintf(err, errlen,
             "%s is hwloc XML format %u.%u (written by hwloc %u or later); this hwloc (%s) reads formats 1.x to %u.x: "
             "export the topology again with `lstopo --export-xml-flags v2 FILE.xml` (hwloc 3's "
             "HWLOC_TOPOLOGY_EXPORT_XML_FLAG_V2, which writes a file hwloc 2 reads)",
             path, major, minor, major, HWLOC_VERSION, reads);
    return -1;
}
