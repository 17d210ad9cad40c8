#!/usr/bin/env python3
"""make-hybrid-xml.py - write hwloc 2.x XML topologies of hybrid-CPU GPU nodes (hwloc cpukinds).

What it is for: test inputs for how cosched reads CPU kinds (performance and efficiency cores)
and places trainer ranks and noise on them.  Debian's hwloc cannot export cpukinds of a machine
it does not run on, so this script writes them: one <cpukind> element per kind after the object
tree, with the infos a Linux export of an Intel hybrid CPU carries (CoreType IntelCore /
IntelAtom, FrequencyMaxMHz, FrequencyBaseMHz, LinuxCapacity) and forced_efficiency="0", as
lstopo writes them: hwloc 2.9 ranks the kinds itself from CoreType and frequency on import.

Usage:
    make-hybrid-xml.py MACHINE > FILE.xml     (MACHINE: a key of MACHINES below)

Tree: Machine > Package > (NUMANode as memory child, one per package) > L3 > L2 > L1d > L1i >
Core > PU.  Efficiency cores sit four to an L2, as on Alder Lake.  The PCI devices hang off the
package, so a GPU's first non-I/O ancestor is its package's NUMA domain.  The object helpers
and PCI devices are make-node-xml.py's.
"""

import importlib.util
import os
import sys

_spec = importlib.util.spec_from_file_location(
    "make_node_xml", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-node-xml.py"))
mnx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mnx)

KiB, MiB, GiB = mnx.KiB, mnx.MiB, mnx.GiB

# Per package, in PU order: ("P", n) n performance cores with SMT2, PUs of a core adjacent
# (Linux numbering on Alder Lake); ("E", n) n efficiency cores, one PU each.
MACHINES = {
    # An Alder-Lake-like workstation (Core i9-12900K: 8 P-cores with SMT, 8 E-cores, one L3),
    # one NUMA domain, one GPU. Linux numbers the P-cores' PUs first: 0-15, E-cores 16-23.
    "alderlake-gpu": {
        "hostname": "adl-ws",
        "cpu_model": "12th Gen Intel(R) Core(TM) i9-12900K",
        "cpu_family": 6, "cpu_model_number": 151, "cpu_stepping": 2,
        "packages": 1,
        "layout": [("P", 8), ("E", 8)],
        "l3_size": 30 * MiB,
        "mem_per_numa": 64 * GiB,
        "pci": [("0000:01:00.0", "a100", 0)],
    },
    # A made-up two-socket GPU node whose packages each hold both kinds: 16 E-cores numbered
    # first (as Arm big.LITTLE numbers its LITTLE cores), then 8 P-cores with SMT, one NUMA
    # domain and one GPU per package. Whoever takes the first PUs gets efficiency cores here.
    "hybrid-2gpu": {
        "hostname": "hyb-gpu",
        "cpu_model": "Intel(R) Hybrid Test CPU",
        "cpu_family": 6, "cpu_model_number": 151, "cpu_stepping": 2,
        "packages": 2,
        "layout": [("E", 16), ("P", 8)],
        "l3_size": 36 * MiB,
        "mem_per_numa": 128 * GiB,
        "pci": [("0000:17:00.0", "a100", 0), ("0000:98:00.0", "a100", 1)],
    },
}

KINDS = {  # what a Linux export of an Alder Lake says about each kind
    "P": {"FrequencyMaxMHz": 5200, "FrequencyBaseMHz": 3200, "LinuxCapacity": 1024, "CoreType": "IntelCore"},
    "E": {"FrequencyMaxMHz": 3900, "FrequencyBaseMHz": 2400, "LinuxCapacity": 1024, "CoreType": "IntelAtom"},
}
L2 = {"P": 1280 * KiB, "E": 2 * MiB}
L1D = {"P": 48 * KiB, "E": 32 * KiB}
L1I = {"P": 32 * KiB, "E": 64 * KiB}


def build(name):
    m = MACHINES[name]
    per_pkg = sum(n * (2 if k == "P" else 1) for k, n in m["layout"])
    npkg = m["packages"]
    all_pus = set(range(npkg * per_pkg))
    all_nodes = set(range(npkg))
    kind_pus = {"P": set(), "E": set()}

    machine = mnx.Obj("Machine", os_index=0, cpuset=mnx.bitmap(all_pus), complete_cpuset=mnx.bitmap(all_pus),
                      allowed_cpuset=mnx.bitmap(all_pus), nodeset=mnx.bitmap(all_nodes),
                      complete_nodeset=mnx.bitmap(all_nodes), allowed_nodeset=mnx.bitmap(all_nodes))
    (machine.info("Backend", "Linux").info("LinuxCgroup", "/").info("OSName", "Linux")
            .info("Architecture", "x86_64").info("HostName", m["hostname"])
            .info("GeneratedBy", "cosched tests/topologies/make-hybrid-xml.py " + name))

    osdev_index, seen = {}, 0
    for busid, kind, _ in sorted(m["pci"]):
        osdev_index[busid] = seen
        seen += 1

    for p in range(npkg):
        base = p * per_pkg
        pus = set(range(base, base + per_pkg))
        pkg = mnx.Obj("Package", **mnx.cpu_attrs(pus, {p}, os_index=p))
        (pkg.info("CPUVendor", "GenuineIntel").info("CPUFamilyNumber", m["cpu_family"])
            .info("CPUModelNumber", m["cpu_model_number"]).info("CPUModel", m["cpu_model"])
            .info("CPUStepping", m["cpu_stepping"]))
        machine.children.append(pkg)
        node = mnx.Obj("NUMANode", **mnx.cpu_attrs(pus, {p}, os_index=p), local_memory=m["mem_per_numa"])
        node.extra = ['<page_type size="4096" count="%d"/>' % (m["mem_per_numa"] // 4096),
                      '<page_type size="2097152" count="0"/>', '<page_type size="1073741824" count="0"/>']
        pkg.memory.append(node)
        l3 = mnx.cache("L3Cache", pus, {p}, m["l3_size"], 3, 12, 0, 0)
        pkg.children.append(l3)
        pu, core_id = base, 0
        for kind, n in m["layout"]:
            per_l2 = 1 if kind == "P" else 4
            for first in range(0, n, per_l2):
                cores = []
                for _ in range(per_l2):
                    cp = {pu, pu + 1} if kind == "P" else {pu}
                    pu += len(cp)
                    cores.append(cp)
                l2 = mnx.cache("L2Cache", set().union(*cores), {p}, L2[kind], 2, 16 if kind == "E" else 10, 0, 0)
                l3.children.append(l2)
                for cp in cores:
                    kind_pus[kind] |= cp
                    l1 = mnx.cache("L1Cache", cp, {p}, L1D[kind], 1, 12 if kind == "P" else 8, 1, 0)
                    l1i = mnx.cache("L1iCache", cp, {p}, L1I[kind], 1, 8, 2, 0)
                    core = mnx.Obj("Core", **mnx.cpu_attrs(cp, {p}, os_index=core_id))
                    core_id += 4 if kind == "P" else 1
                    for x in sorted(cp):
                        core.children.append(mnx.Obj("PU", **mnx.cpu_attrs({x}, {p}, os_index=x)))
                    l2.children.append(l1)
                    l1.children.append(l1i)
                    l1i.children.append(core)
        devs = [(b, k) for b, k, numa in m["pci"] if numa == p]
        if devs:
            pkg.io.append(mnx.build_io(name, devs, osdev_index))

    mnx.number(machine)
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
           '<topology version="2.0">']
    mnx.emit(machine, out, 1)
    if npkg > 1:
        n = npkg
        idx = "".join("%d " % i for i in range(n))
        vals = "".join("%d " % (10 if i == j else 21) for i in range(n) for j in range(n))
        out.append('  <distances2 type="NUMANode" nbobjs="%d" kind="5" name="NUMALatency" indexing="os">' % n)
        out.append('    <indexes length="%d">%s</indexes>' % (len(idx), idx))
        out.append('    <u64values length="%d">%s</u64values>' % (len(vals), vals))
        out.append("  </distances2>")
    for kind in ("E", "P"):  # lstopo writes the least efficient kind first
        out.append('  <cpukind cpuset="%s" forced_efficiency="0">' % mnx.bitmap(kind_pus[kind]))
        for key, value in KINDS[kind].items():
            out.append('    <info name="%s" value="%s"/>' % (key, value))
        out.append("  </cpukind>")
    out.append("</topology>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 1 or argv[0] not in MACHINES:
        print("usage: make-hybrid-xml.py {%s}" % ",".join(MACHINES), file=sys.stderr)
        return 2
    sys.stdout.write(build(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
