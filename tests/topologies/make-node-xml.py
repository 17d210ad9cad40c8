#!/usr/bin/env python3
"""make-node-xml.py - write hwloc 2.x XML topologies of GPU nodes for cosched's tests.

What it is for: test inputs for topology discovery and CPU/GPU placement in
topology/ and client/.  No public hwloc XML exists for a JUWELS Booster node or
a DGX A100, so this script describes them from their public documentation and
writes the XML that `lstopo --of xml` on such a node would roughly produce
(same object tree, attribute forms and info keys as the real files in
/work/shared/topologies/).  The files it wrote are committed next to it; see
README.md there for provenance and the regeneration commands.

Usage:
    make-node-xml.py MACHINE [--disallow CPULIST] [--disallow-numa LIST] > FILE.xml

    MACHINE      one of the keys of MACHINES below
    --disallow   PU os indexes (e.g. 0-2,48-50) removed from the Machine's
                 allowed_cpuset, as a Slurm task/cgroup cpuset would; the PUs
                 stay in the tree (as `lstopo --disallowed` exports them).
    --disallow-numa  NUMA os indexes (e.g. 1,3) removed from the Machine's
                 allowed_nodeset, as a cgroup's cpuset.mems would; the nodes
                 stay in the tree.

Memory-only nodes (hbm_per_numa, cxl in the machine table) get hwloc's
subtype (HBM, DRAM) and the CPUs of the Group or Package they hang under, as
hwloc's Linux backend attaches them; their os indexes follow the plain ones.

Tree: Machine > Package > Group (one per NUMA domain; NUMANode as its memory
child) > L3 > L2 > L1d > L1i > Core > PU.  Every PCI device hangs, behind a
host bridge (bridge_type 0-1) and an AMD root port (1-1), off the Group of
its NUMA domain, so hwloc's first non-I/O ancestor of a GPU or HCA is that
single domain's Group.  OSDev names follow PCI bus order per kind: GPUs get
cudaN + nvmlN, InfiniBand HCAs mlx5_N + ibN, Ethernet NICs enpBUSsDEV.

Standard library only; output is deterministic (serials, GUIDs and MACs are
made up from the machine name and are not real).
"""

import hashlib
import sys

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# ---------------------------------------------------------------------------
# Machine table.
#   cpu:  per-package description; PU os index of core c, thread t is
#         c + t * total_cores (Linux numbering on both machines).
#         core_slots_per_l3: physical core slots of a CCX (4 on Zen 2), used
#         for Linux-like core ids (a 3-core CCX leaves gaps: 0,1,2,4,5,6,..).
#   numa_distances: (local, same package, other package) SLIT values.
#   pci:  (bus id, device kind, NUMA os index); kinds are in PCI_KINDS.
# ---------------------------------------------------------------------------
MACHINES = {
    # JUWELS Booster (JSC): 2x EPYC 7402, NPS4, 4x A100 + 4x HDR200 HCA.
    "juwels-booster": {
        "hostname": "jwb0001",
        "packages": 2,
        "numa_per_package": 4,
        "l3_per_numa": 2,
        "cores_per_l3": 3,
        "core_slots_per_l3": 4,
        "smt": 2,
        "cpu_model": "AMD EPYC 7402 24-Core Processor",
        "cpu_family": 23, "cpu_model_number": 49, "cpu_stepping": 0,
        "l3_size": 16 * MiB, "l2_size": 512 * KiB,
        "l1d_size": 32 * KiB, "l1i_size": 32 * KiB,
        "mem_per_numa": 64 * GiB,
        "numa_distances": (10, 12, 32),
        "pci": [
            ("0000:01:00.0", "cx6", 3),
            ("0000:03:00.0", "a100", 3),
            ("0000:44:00.0", "a100", 1),
            ("0000:45:00.0", "cx6", 1),
            ("0000:84:00.0", "a100", 7),
            ("0000:85:00.0", "cx6", 7),
            ("0000:c4:00.0", "a100", 5),
            ("0000:c5:00.0", "cx6", 5),
        ],
    },
    # NVIDIA DGX A100: 2x EPYC 7742, NPS4, 8x A100 + 8x ConnectX-6, I350, BMC.
    "dgx-a100": {
        "hostname": "dgx-a100-01",
        "packages": 2,
        "numa_per_package": 4,
        "l3_per_numa": 4,
        "cores_per_l3": 4,
        "core_slots_per_l3": 4,
        "smt": 2,
        "cpu_model": "AMD EPYC 7742 64-Core Processor",
        "cpu_family": 23, "cpu_model_number": 49, "cpu_stepping": 0,
        "l3_size": 16 * MiB, "l2_size": 512 * KiB,
        "l1d_size": 32 * KiB, "l1i_size": 32 * KiB,
        "mem_per_numa": 128 * GiB,
        "numa_distances": (10, 12, 32),
        "pci": [
            ("0000:07:00.0", "a100", 3),
            ("0000:0c:00.0", "cx6", 3),
            ("0000:0f:00.0", "a100", 3),
            ("0000:12:00.0", "cx6", 3),
            ("0000:47:00.0", "a100", 1),
            ("0000:4b:00.0", "cx6", 1),
            ("0000:4e:00.0", "a100", 1),
            ("0000:54:00.0", "cx6", 1),
            ("0000:87:00.0", "a100", 7),
            ("0000:8d:00.0", "cx6", 7),
            ("0000:90:00.0", "a100", 7),
            ("0000:94:00.0", "cx6", 7),
            ("0000:b7:00.0", "a100", 5),
            ("0000:ba:00.0", "cx6", 5),
            ("0000:bd:00.0", "a100", 5),
            ("0000:be:00.0", "cx6", 5),
            ("0000:e2:00.0", "i350", 0),
            ("0000:e4:00.0", "ast2500", 0),   # behind an AST1150 bridge at e3
        ],
    },
    # A two-core, one-GPU node shaped like the CI machines (CPUs 0-1, one NUMA domain), so the
    # daemon's tests can bind runs to CPUs that exist: one core per L3 lets the l3 policy put a
    # trainer rank and a co-tenant side by side.
    # The GPU node of the guard issue: one Xeon socket, 16 cores, one NUMA domain, one L3, one
    # H100 (the shape of most cloud GPU nodes): nothing for placement to keep apart.
    "h100-1numa": {
        "hostname": "gpu-h100",
        "packages": 1,
        "numa_per_package": 1,
        "l3_per_numa": 1,
        "cores_per_l3": 16,
        "core_slots_per_l3": 16,
        "smt": 1,
        "cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
        "cpu_family": 6, "cpu_model_number": 143, "cpu_stepping": 8,
        "l3_size": 105 * MiB, "l2_size": 2 * MiB,
        "l1d_size": 48 * KiB, "l1i_size": 32 * KiB,
        "mem_per_numa": 128 * GiB,
        "numa_distances": (10, 12, 32),
        "pci": [
            ("0000:18:00.0", "h100", 0),
        ],
    },
    # Two Xeon sockets, one NUMA domain and one L3 each, four H100 split 3 + 1 between them (a
    # board with three GPUs behind socket 0's PCIe switches): the shape where the shared policy
    # used to spill ranks of the crowded socket onto the other one.
    "2socket-3plus1": {
        "hostname": "gpu-3p1",
        "packages": 2,
        "numa_per_package": 1,
        "l3_per_numa": 1,
        "cores_per_l3": 16,
        "core_slots_per_l3": 16,
        "smt": 2,
        "cpu_model": "Intel(R) Xeon(R) Gold 6430",
        "cpu_family": 6, "cpu_model_number": 143, "cpu_stepping": 8,
        "l3_size": 60 * MiB, "l2_size": 2 * MiB,
        "l1d_size": 48 * KiB, "l1i_size": 32 * KiB,
        "mem_per_numa": 256 * GiB,
        "numa_distances": (10, 12, 21),
        "pci": [
            ("0000:18:00.0", "h100", 0),
            ("0000:2a:00.0", "h100", 0),
            ("0000:3d:00.0", "h100", 0),
            ("0000:9a:00.0", "h100", 1),
        ],
    },
    # A Sapphire-Rapids-Max-like node, made smaller: 2 sockets in SNC2 (NUMA 0-3 of 4 cores, SMT2),
    # each domain's HBM as a memory-only node beside it (NUMA 4-7, subtype HBM, the same CPUs), a
    # CXL memory expander on socket 0 (NUMA 8, subtype DRAM, the socket's CPUs), an H100 on NUMA 0
    # and one on NUMA 2: HBM and CXL memory are nobody's home but local to CPUs all the same.
    "spr-hbm-cxl": {
        "hostname": "spr-hbm",
        "packages": 2,
        "numa_per_package": 2,
        "l3_per_numa": 2,
        "cores_per_l3": 2,
        "core_slots_per_l3": 2,
        "smt": 2,
        "cpu_vendor": "GenuineIntel",
        "cpu_model": "Intel(R) Xeon(R) CPU Max 9480",
        "cpu_family": 6, "cpu_model_number": 143, "cpu_stepping": 8,
        "l3_size": 56 * MiB, "l2_size": 2 * MiB,
        "l1d_size": 48 * KiB, "l1i_size": 32 * KiB,
        "mem_per_numa": 64 * GiB,
        "hbm_per_numa": 16 * GiB,      # memory-only, same CPUs as its domain, NUMA n + 4
        "cxl": [(0, 128 * GiB)],       # (package, bytes): memory-only under the package, NUMA 8
        "numa_distances": (10, 12, 21),
        "pci": [
            ("0000:18:00.0", "h100", 0),
            ("0000:98:00.0", "h100", 2),
        ],
    },
    "ci-2core-gpu": {
        "hostname": "ci-node",
        "packages": 1,
        "numa_per_package": 1,
        "l3_per_numa": 2,
        "cores_per_l3": 1,
        "core_slots_per_l3": 1,
        "smt": 1,
        "cpu_model": "Test CPU 2-Core Processor",
        "cpu_family": 23, "cpu_model_number": 49, "cpu_stepping": 0,
        "l3_size": 16 * MiB, "l2_size": 512 * KiB,
        "l1d_size": 32 * KiB, "l1i_size": 32 * KiB,
        "mem_per_numa": 4 * GiB,
        "numa_distances": (10, 12, 32),
        "pci": [
            ("0000:03:00.0", "a100", 0),
            ("0000:04:00.0", "cx6", 0),
        ],
    },
}

# PCI device kinds: class, [vendor:device], [subsystem], revision, link GB/s.
# 31.507692 GB/s is PCIe 4.0 x16 as hwloc reports it.
PCI_KINDS = {
    "h100": {"class": "0302", "id": "10de:2330", "subsys": "10de:16c1", "rev": "a1",
             "link": 63.015384, "vendor": "NVIDIA Corporation",
             "device": "GH100 [H100 SXM5 80GB]", "role": "gpu"},
    "a100": {"class": "0302", "id": "10de:20b0", "subsys": "10de:134f", "rev": "a1",
             "link": 31.507692, "vendor": "NVIDIA Corporation",
             "device": "GA100 [A100 SXM4 40GB]", "role": "gpu"},
    "cx6": {"class": "0207", "id": "15b3:101b", "subsys": "15b3:0006", "rev": "00",
            "link": 31.507692, "vendor": "Mellanox Technologies",
            "device": "MT28908 Family [ConnectX-6]", "role": "hca"},
    "i350": {"class": "0200", "id": "8086:1521", "subsys": "8086:00a1", "rev": "01",
             "link": 2.0, "vendor": "Intel Corporation",
             "device": "I350 Gigabit Network Connection", "role": "eth"},
    "ast2500": {"class": "0300", "id": "1a03:2000", "subsys": "1a03:2000", "rev": "41",
                "link": 0.0, "vendor": "ASPEED Technology, Inc.",
                "device": "ASPEED Graphics Family", "role": "bmc-vga"},
}

GPU_INFO = {  # A100-SXM4-40GB as the CUDA and NVML backends describe it
    "model": "NVIDIA A100-SXM4-40GB",
    "mem_kib": 40536 * KiB, "l2_kib": 40960, "sms": 108, "cores_per_sm": 64,
    "smem_per_sm_kib": 164,
}

ROOT_PORT = ("0604 [1022:1483] [1022:1453] 00", "Advanced Micro Devices, Inc. [AMD]",
             "Starship/Matisse GPP Bridge")
AST_BRIDGE = ("0604 [1a03:1150] [1a03:1150] 04", "ASPEED Technology, Inc.",
              "AST1150 PCI-to-PCI Bridge")


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------
def bitmap(bits):
    """Format a set of indexes the way hwloc_bitmap_snprintf() does:
    32-bit words, most significant first, inner zero words empty, a zero
    lowest word as 0x0."""
    bits = set(bits)
    if not bits:
        return "0x0"
    nwords = max(bits) // 32 + 1
    parts = []
    for w in range(nwords - 1, -1, -1):
        val = 0
        for b in range(32):
            if w * 32 + b in bits:
                val |= 1 << b
        if val:
            parts.append("0x%08x" % val)
        elif w == 0:
            parts.append("0x0")
        else:
            parts.append("")
    return ",".join(parts)


def parse_cpulist(text):
    out = set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if "-" in item:
            lo, hi = item.split("-", 1)
            lo, hi = int(lo), int(hi)
            if hi < lo:
                raise ValueError("bad range %r" % item)
            out.update(range(lo, hi + 1))
        else:
            out.add(int(item))
    return out


def fake_hex(*parts, n=8):
    h = hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()
    return h[:n]


def esc(s):
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


class Obj:
    """One <object>: ordered attributes, infos, then memory / normal / I/O
    children (hwloc's export order)."""

    def __init__(self, otype, **attrs):
        self.type = otype
        self.attrs = list(attrs.items())
        self.infos = []
        self.extra = []          # raw child lines (page_type)
        self.memory = []
        self.children = []
        self.io = []

    def info(self, name, value):
        self.infos.append((name, value))
        return self


def number(root):
    """Assign gp_index in depth-first order (unique, 1 = Machine)."""
    counter = [0]

    def walk(o):
        counter[0] += 1
        o.gp_index = counter[0]
        for c in o.memory + o.children + o.io:
            walk(c)
    walk(root)


def emit(o, out, indent):
    pad = "  " * indent
    attrs = [("type", o.type)]
    attrs += [(k, str(v)) for k, v in o.attrs]
    # gp_index goes after the index and sets, as hwloc writes it
    pos = 1 + max(i for i, (k, _) in enumerate(attrs)
                  if k in ("type", "os_index", "cpuset", "complete_cpuset", "allowed_cpuset",
                           "nodeset", "complete_nodeset", "allowed_nodeset"))
    attrs.insert(pos, ("gp_index", str(o.gp_index)))
    head = pad + "<object " + " ".join('%s="%s"' % (k, esc(v)) for k, v in attrs)
    body = o.infos or o.extra or o.memory or o.children or o.io
    if not body:
        out.append(head + "/>")
        return
    out.append(head + ">")
    for name, value in o.infos:
        out.append('%s  <info name="%s" value="%s"/>' % (pad, esc(name), esc(str(value))))
    for line in o.extra:
        out.append(pad + "  " + line)
    for c in o.memory + o.children + o.io:
        emit(c, out, indent + 1)
    out.append(pad + "</object>")


def cpu_attrs(pus, nodes, os_index=None):
    a = {}
    if os_index is not None:
        a["os_index"] = os_index
    a["cpuset"] = bitmap(pus)
    a["complete_cpuset"] = bitmap(pus)
    a["nodeset"] = bitmap(nodes)
    a["complete_nodeset"] = bitmap(nodes)
    return a


def cache(otype, pus, nodes, size, depth, assoc, ctype, inclusive):
    o = Obj(otype, **cpu_attrs(pus, nodes), cache_size=size, depth=depth,
            cache_linesize=64, cache_associativity=assoc, cache_type=ctype)
    o.info("Inclusive", inclusive)
    return o


# ---------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------
def busnum(busid):
    return int(busid.split(":")[1], 16)


def build_io(name, devices, osdev_index):
    """Host bridge for one NUMA domain, one root port per device."""
    devices = sorted(devices, key=lambda d: d[0])
    first_bus = min(busnum(b) for b, _ in devices) & ~0x1f
    domain = devices[0][0].split(":")[0]
    ports = []
    max_bus = first_bus
    for n, (busid, kind) in enumerate(devices):
        k = PCI_KINDS[kind]
        bus = busnum(busid)
        rp_dev, rp_fn = 1 + 2 * (n // 7), 1 + n % 7   # AMD GPP ports 01.1-01.7, 03.1..
        # the BMC VGA sits behind an AST1150 bridge on the bus just before it
        secondary = bus - 1 if kind == "ast2500" else bus
        max_bus = max(max_bus, bus)
        rp = Obj("Bridge", bridge_type="1-1", depth=1,
                 bridge_pci="%s:[%02x-%02x]" % (domain, secondary, bus),
                 pci_busid="%s:%02x:%02x.%d" % (domain, first_bus, rp_dev, rp_fn),
                 pci_type=ROOT_PORT[0],
                 pci_link_speed="%f" % (k["link"] if k["link"] else 0.25))
        rp.info("PCIVendor", ROOT_PORT[1]).info("PCIDevice", ROOT_PORT[2])
        parent = rp
        if kind == "ast2500":
            br = Obj("Bridge", bridge_type="1-1", depth=2,
                     bridge_pci="%s:[%02x-%02x]" % (domain, bus, bus),
                     pci_busid="%s:%02x:00.0" % (domain, secondary),
                     pci_type=AST_BRIDGE[0], pci_link_speed="%f" % 0.25)
            br.info("PCIVendor", AST_BRIDGE[1]).info("PCIDevice", AST_BRIDGE[2])
            rp.io.append(br)
            parent = br
        dev = Obj("PCIDev", pci_busid=busid,
                  pci_type="%s [%s] [%s] %s" % (k["class"], k["id"], k["subsys"], k["rev"]),
                  pci_link_speed="%f" % k["link"])
        dev.info("PCIVendor", k["vendor"]).info("PCIDevice", k["device"])
        parent.io.append(dev)
        role = k["role"]
        i = osdev_index[busid]
        if role == "gpu":
            g = GPU_INFO
            cuda = Obj("OSDev", name="cuda%d" % i, subtype="CUDA", osdev_type=5)
            (cuda.info("Backend", "CUDA").info("GPUVendor", "NVIDIA Corporation")
                 .info("GPUModel", g["model"]).info("CUDAGlobalMemorySize", g["mem_kib"])
                 .info("CUDAL2CacheSize", g["l2_kib"]).info("CUDAMultiProcessors", g["sms"])
                 .info("CUDACoresPerMP", g["cores_per_sm"])
                 .info("CUDASharedMemorySizePerMP", g["smem_per_sm_kib"]))
            nvml = Obj("OSDev", name="nvml%d" % i, subtype="NVML", osdev_type=1)
            h = fake_hex(name, "gpu", busid, n=32)
            uuid = "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:32])
            (nvml.info("Backend", "NVML").info("GPUVendor", "NVIDIA Corporation")
                 .info("GPUModel", g["model"])
                 .info("NVIDIASerial", str(int(fake_hex(name, "serial", busid, n=10), 16)))
                 .info("NVIDIAUUID", uuid))
            dev.io += [cuda, nvml]
        elif role == "hca":
            h = fake_hex(name, "hca", busid, n=6)
            guid = ["b8", "59", "9f", "03", "00", h[0:2], h[2:4], h[4:6]]
            guid_s = "%s%s:%s%s:%s%s:%s%s" % tuple(guid)
            ib = Obj("OSDev", name="ib%d" % i, osdev_type=2)
            ib.info("Address", "00:00:10:29:fe:80:00:00:00:00:00:00:" + ":".join(guid))
            ib.info("Port", 1)
            ofed = Obj("OSDev", name="mlx5_%d" % i, osdev_type=3)
            (ofed.info("NodeGUID", guid_s).info("SysImageGUID", guid_s)
                 .info("Port1State", 4).info("Port1LID", "0x%x" % (0x100 + int(h[:2], 16)))
                 .info("Port1LMC", 0)
                 .info("Port1GID0", "fe80:0000:0000:0000:" + guid_s))
            dev.io += [ib, ofed]
        elif role == "eth":
            slot = int(busid.split(":")[2].split(".")[0], 16)
            eth = Obj("OSDev", name="enp%ds%d" % (bus, slot), osdev_type=2)
            h = fake_hex(name, "eth", busid, n=6)
            eth.info("Address", "3c:ec:ef:%s:%s:%s" % (h[0:2], h[2:4], h[4:6]))
            dev.io.append(eth)
        ports.append(rp)
    hb = Obj("Bridge", bridge_type="0-1", depth=0,
             bridge_pci="%s:[%02x-%02x]" % (domain, first_bus, max_bus))
    hb.io = ports
    return hb


def memory_node(os_index, pus, size, subtype=None, dax=None):
    attrs = cpu_attrs(pus, {os_index}, os_index=os_index)
    if subtype:
        attrs["subtype"] = subtype
    node = Obj("NUMANode", **attrs, local_memory=size)
    node.extra = ['<page_type size="4096" count="%d"/>' % (size // 4096),
                  '<page_type size="2097152" count="0"/>',
                  '<page_type size="1073741824" count="0"/>']
    if dax:  # hwloc writes a NUMA node's infos after its page types
        node.extra.append('<info name="DAXDevice" value="%s"/>' % dax)
    return node


def build(name, disallow, disallow_numa=frozenset()):
    m = MACHINES[name]
    npkg, nnuma_pkg = m["packages"], m["numa_per_package"]
    nl3, ncl3, smt = m["l3_per_numa"], m["cores_per_l3"], m["smt"]
    cores_per_numa = nl3 * ncl3
    total_cores = npkg * nnuma_pkg * cores_per_numa
    all_pus = set(range(total_cores * smt))
    plain = npkg * nnuma_pkg
    hbm = m.get("hbm_per_numa")
    cxl = m.get("cxl", [])
    hbm_of = {n: plain + n for n in range(plain)} if hbm else {}
    cxl_of = {}
    for k, (p, size) in enumerate(cxl):
        cxl_of.setdefault(p, []).append((plain + len(hbm_of) + k, size))
    all_nodes = set(range(plain + len(hbm_of) + len(cxl)))
    bad = set(disallow_numa) - all_nodes
    if bad:
        raise SystemExit("make-node-xml: --disallow-numa names nodes %s that %s lacks" % (sorted(bad), name))

    bad = disallow - all_pus
    if bad:
        raise SystemExit("make-node-xml: --disallow names PUs %s that %s lacks"
                         % (sorted(bad), name))
    allowed = all_pus - disallow
    if not allowed:
        raise SystemExit("make-node-xml: --disallow leaves no PU allowed")

    def pus_of_core(c):
        return {c + t * total_cores for t in range(smt)}

    def pus_of_cores(cores):
        return set().union(*(pus_of_core(c) for c in cores))

    io_by_numa = {}
    for busid, kind, numa in m["pci"]:
        if numa >= plain:
            raise SystemExit("make-node-xml: %s on missing NUMA %d" % (busid, numa))
        io_by_numa.setdefault(numa, []).append((busid, kind))

    machine = Obj("Machine", os_index=0, cpuset=bitmap(all_pus),
                  complete_cpuset=bitmap(all_pus), allowed_cpuset=bitmap(allowed),
                  nodeset=bitmap(all_nodes), complete_nodeset=bitmap(all_nodes),
                  allowed_nodeset=bitmap(all_nodes - set(disallow_numa)))
    (machine.info("Backend", "Linux")
            .info("LinuxCgroup", "/slurm/uid_10000/job_1/step_0" if disallow or disallow_numa else "/")
            .info("OSName", "Linux").info("Architecture", "x86_64")
            .info("HostName", m["hostname"])
            .info("GeneratedBy", "cosched tests/topologies/make-node-xml.py " + name))

    # OSDev numbers (cudaN, mlx5_N, ...) follow PCI bus order per role
    osdev_index, seen = {}, {}
    for busid, kind, _ in sorted(m["pci"]):
        role = PCI_KINDS[kind]["role"]
        osdev_index[busid] = seen.get(role, 0)
        seen[role] = osdev_index[busid] + 1
    io_trees = {numa: build_io(name, devs, osdev_index) for numa, devs in io_by_numa.items()}

    for p in range(npkg):
        pkg_numas = list(range(p * nnuma_pkg, (p + 1) * nnuma_pkg))
        pkg_cores = range(p * nnuma_pkg * cores_per_numa, (p + 1) * nnuma_pkg * cores_per_numa)
        pkg_nodes = pkg_numas + [hbm_of[n] for n in pkg_numas if n in hbm_of] + [c for c, _ in cxl_of.get(p, [])]
        pkg = Obj("Package", **cpu_attrs(pus_of_cores(pkg_cores), pkg_nodes, os_index=p))
        for c, size in cxl_of.get(p, []):
            pkg.memory.append(memory_node(c, pus_of_cores(pkg_cores), size, "DRAM", "dax%d.0" % c))
        (pkg.info("CPUVendor", m.get("cpu_vendor", "AuthenticAMD")).info("CPUFamilyNumber", m["cpu_family"])
            .info("CPUModelNumber", m["cpu_model_number"]).info("CPUModel", m["cpu_model"])
            .info("CPUStepping", m["cpu_stepping"]))
        machine.children.append(pkg)
        for numa in pkg_numas:
            ncores = range(numa * cores_per_numa, (numa + 1) * cores_per_numa)
            npus = pus_of_cores(ncores)
            # hwloc's nodeset of a CPU object: the memory attached to it, above it and below it
            near = {numa} | ({hbm_of[numa]} if numa in hbm_of else set()) | {c for c, _ in cxl_of.get(p, [])}
            group = Obj("Group", **cpu_attrs(npus, near), kind=1001, subkind=0)
            group.memory.append(memory_node(numa, npus, m["mem_per_numa"]))
            if numa in hbm_of:
                group.memory.append(memory_node(hbm_of[numa], npus, hbm, "HBM"))
            pkg.children.append(group)
            for l3i in range(nl3):
                l3cores = [ncores[0] + l3i * ncl3 + k for k in range(ncl3)]
                l3 = cache("L3Cache", pus_of_cores(l3cores), near, m["l3_size"], 3, 16, 0, 0)
                group.children.append(l3)
                for c in l3cores:
                    cp = pus_of_core(c)
                    l2 = cache("L2Cache", cp, near, m["l2_size"], 2, 8, 0, 1)
                    l1 = cache("L1Cache", cp, near, m["l1d_size"], 1, 8, 1, 0)
                    l1i = cache("L1iCache", cp, near, m["l1i_size"], 1, 8, 2, 0)
                    # Linux core id: per package, CCX slots of core_slots_per_l3
                    local = c - pkg_cores[0]
                    core_id = (local // ncl3) * m["core_slots_per_l3"] + local % ncl3
                    core = Obj("Core", **cpu_attrs(cp, near, os_index=core_id))
                    for pu in sorted(cp):
                        core.children.append(Obj("PU", **cpu_attrs({pu}, near, os_index=pu)))
                    l3.children.append(l2)
                    l2.children.append(l1)
                    l1.children.append(l1i)
                    l1i.children.append(core)
            if numa in io_trees:
                group.io.append(io_trees[numa])

    number(machine)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
           '<topology version="2.0">']
    emit(machine, out, 1)

    # NUMA latency matrix (os indexing), hwloc's export format: 10 values a line,
    # length = characters of the text.
    # Memory-only nodes: as far as the domain they hang beside (HBM: its own, CXL: its package's
    # first) plus 3 (HBM) or 11 (CXL) on the way to them, 10 to themselves.
    local, same, other = m["numa_distances"]
    n = len(all_nodes)
    anchor, extra = {d: d for d in range(plain)}, {d: 0 for d in range(plain)}
    for d, h in hbm_of.items():
        anchor[h], extra[h] = d, 3
    for p, nodes in cxl_of.items():
        for c, _ in nodes:
            anchor[c], extra[c] = p * nnuma_pkg, 11
    vals = []
    for i in range(n):
        for j in range(n):
            a, b = anchor[i], anchor[j]
            base = local if a == b else same if a // nnuma_pkg == b // nnuma_pkg else other
            vals.append(local if i == j else base + extra[i] + extra[j])
    if n > 1:  # hwloc ignores (and warns about) a matrix of one node
        out.append('  <distances2 type="NUMANode" nbobjs="%d" kind="5" name="NUMALatency" '
                   'indexing="os">' % n)
        idx = "".join("%d " % i for i in range(n))
        out.append('    <indexes length="%d">%s</indexes>' % (len(idx), idx))
        for s in range(0, len(vals), 10):
            text = "".join("%d " % v for v in vals[s:s + 10])
            out.append('    <u64values length="%d">%s</u64values>' % (len(text), text))
        out.append("  </distances2>")
    out.append("</topology>")
    return "\n".join(out) + "\n"


def main(argv):
    usage = "usage: make-node-xml.py {%s} [--disallow CPULIST] [--disallow-numa LIST]" % ",".join(MACHINES)
    args = list(argv)
    disallow, disallow_numa = set(), set()
    name = None
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(usage)
            return 0
        if a in ("--disallow", "--disallow-numa") or a.startswith(("--disallow=", "--disallow-numa=")):
            opt = a.split("=", 1)[0]
            val = a.split("=", 1)[1] if "=" in a else (args.pop(0) if args else None)
            if val is None:
                print(usage, file=sys.stderr)
                return 2
            try:
                (disallow if opt == "--disallow" else disallow_numa).update(parse_cpulist(val))
            except ValueError as e:
                print("make-node-xml: bad CPULIST %r: %s" % (val, e), file=sys.stderr)
                return 2
        elif name is None and not a.startswith("-"):
            name = a
        else:
            print(usage, file=sys.stderr)
            return 2
    if name not in MACHINES:
        print(usage, file=sys.stderr)
        return 2
    sys.stdout.write(build(name, disallow, disallow_numa))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
