"""Host fingerprint: what a benchmark result depends on, gathered by small ``collect_*``
functions into one flat dict with documented dotted keys.

Each key has a class used when comparing against a baseline:

- ``must_match``: a different value means a different machine; results are incomparable.
- ``tolerance``: compared, a difference is noted (memory size, frequency, THP, governor).
- ``informational``: recorded only (model string, kernel, software versions...).

Frequency and other jittery readings are never ``must_match``: two runs of one machine must
always be comparable. The key list and classes are in ``FIELD_CLASSES``; ``SCHEMA`` versions it.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import sys
from pathlib import Path

from perfsuite.host.microarch import microarchitecture
from perfsuite.host.topology import Reader, Topology, format_cpulist, read_topology
from perfsuite.kernels import FINGERPRINT_FLAGS
from perfsuite.records import Fingerprint

SCHEMA = "perfsuite.fingerprint/1"

MUST, TOL, INFO = "must_match", "tolerance", "informational"

FIELD_CLASSES: dict[str, str] = {
    "cpu.vendor": MUST,
    "cpu.family": MUST,
    "cpu.model": MUST,
    "cpu.microarchitecture": MUST,
    "cpu.microarchitecture_by_flags": INFO,
    "cpu.model_name": INFO,
    "cpu.stepping": INFO,
    "cpu.mhz_reported": TOL,
    "cpu.sockets": MUST,
    "cpu.physical_cores": MUST,
    "cpu.threads_per_core": MUST,
    "cpu.smt": MUST,
    "cpu.smt_control": INFO,
    "cpu.online": INFO,
    "cpu.online_count": MUST,
    "cpu.offline": INFO,
    "cache.l1d_bytes": MUST,
    "cache.l1i_bytes": INFO,
    "cache.l2_bytes": MUST,
    "cache.l3_bytes": MUST,
    "cache.l3_domain_count": MUST,
    "cache.l3_domains": INFO,
    "numa.node_count": MUST,
    "numa.nodes": INFO,
    "memory.total_bytes": TOL,
    "os.hostname": INFO,  # the history store tells hosts of one class apart by it
    "os.kernel": INFO,
    "os.hypervisor": INFO,
    "os.thp_enabled": TOL,
    "os.numa_balancing": TOL,
    "freq.driver": TOL,
    "freq.governor": TOL,
    "freq.boost": TOL,
    "freq.max_mhz": TOL,
    "kernels.isa": MUST,
    # The flags kernels/cpu_features.h marks as recorded (PS_CPU_FLAGS, the one list of CPU
    # flags), looked up in /proc/cpuinfo of the host tree.
    **{f"isa.{flag}": MUST for flag in FINGERPRINT_FLAGS},
    "software.python": INFO,
    "software.perfsuite": INFO,
    "software.numpy": INFO,
    "software.numpy_blas": INFO,
}


def field_class(key: str) -> str:
    """A field's class; software.* versions (one per framework distribution) are informational."""
    return FIELD_CLASSES.get(key, INFO) if key.startswith("software.") else FIELD_CLASSES[key]


def collect_cpu(topo: Topology) -> dict:
    cpu = topo.cpu
    uarch, by_flags = microarchitecture(cpu.vendor, cpu.family, cpu.model, cpu.flags)
    return {
        "cpu.vendor": cpu.vendor,
        "cpu.family": cpu.family,
        "cpu.model": cpu.model,
        "cpu.stepping": cpu.stepping,
        "cpu.model_name": cpu.model_name,
        "cpu.microarchitecture": uarch,
        "cpu.microarchitecture_by_flags": by_flags,
        "cpu.mhz_reported": cpu.mhz,
        "cpu.sockets": topo.sockets,
        "cpu.physical_cores": topo.physical_cores,
        "cpu.threads_per_core": topo.threads_per_core,
        "cpu.smt": None if topo.threads_per_core is None else topo.threads_per_core > 1,
        "cpu.smt_control": topo.smt_control,
        "cpu.online": format_cpulist(topo.online) if topo.online is not None else None,
        "cpu.online_count": len(topo.online) if topo.online is not None else None,
        "cpu.offline": format_cpulist(topo.offline),
        **{f"isa.{f}": (f in cpu.flags) if cpu.flags else None for f in FINGERPRINT_FLAGS},
    }


def collect_caches(topo: Topology) -> dict:
    size = {key: level.size_bytes for key, level in topo.caches.items()}
    domains = topo.l3_domains
    return {
        "cache.l1d_bytes": size.get("L1d"),
        "cache.l1i_bytes": size.get("L1i"),
        "cache.l2_bytes": size.get("L2"),
        "cache.l3_bytes": topo.l3_bytes,
        "cache.l3_domain_count": len(domains) if domains else None,
        "cache.l3_domains": [format_cpulist(d) for d in domains] if domains else None,
    }


def collect_numa(topo: Topology) -> dict:
    nodes = topo.numa_nodes
    if nodes is None:
        return {"numa.node_count": None, "numa.nodes": None}
    return {
        "numa.node_count": len(nodes),
        "numa.nodes": [
            {"node": n.node, "cpus": format_cpulist(n.cpus), "mem_total_bytes": n.mem_total_bytes}
            for n in nodes
        ],
    }


def _hypervisor(reader: Reader, flags: frozenset[str], host: bool) -> str | None:
    if host:
        try:
            from perfsuite import _kernels  # the compiled extension: absent in an unbuilt checkout

            vendor = _kernels.hypervisor_vendor()
            if vendor:
                return {
                    "KVMKVMKVM": "KVM",
                    "Microsoft Hv": "Hyper-V",
                    "VMwareVMware": "VMware",
                    "XenVMMXenVMM": "Xen",
                    "TCGTCGTCGTCG": "QEMU-TCG",
                }.get(vendor, vendor)
        except ImportError:
            pass
    xen = reader.text("sys/hypervisor/type")
    if xen:
        return xen
    if "hypervisor" in flags:
        return reader.text("sys/class/dmi/id/sys_vendor") or "yes (vendor unknown)"
    return "none" if flags else None


def collect_os(reader: Reader, topo: Topology, host: bool) -> dict:
    thp = reader.text("sys/kernel/mm/transparent_hugepage/enabled", note="THP")
    if thp:
        m = re.search(r"\[(\w+)\]", thp)
        thp = m.group(1) if m else thp
    balancing = reader.text("proc/sys/kernel/numa_balancing")
    kernel = reader.text("proc/sys/kernel/osrelease") or (platform.release() if host else None)
    hostname = reader.text("proc/sys/kernel/hostname") or (platform.node() if host else None)
    return {
        "os.hostname": hostname,
        "os.kernel": kernel,
        "os.hypervisor": _hypervisor(reader, topo.cpu.flags, host),
        "os.thp_enabled": thp,
        "os.numa_balancing": None if balancing is None else balancing != "0",
    }


def collect_frequency(reader: Reader, topo: Topology) -> dict:
    first = topo.online[0] if topo.online else 0
    policy = f"sys/devices/system/cpu/cpu{first}/cpufreq"
    driver = reader.text(f"{policy}/scaling_driver")
    if driver is None:
        reader.notes.append(
            "frequency: no cpufreq interface (common in VMs); driver/governor unknown"
        )
    boost = reader.text("sys/devices/system/cpu/cpufreq/boost")
    max_khz = reader.text(f"{policy}/cpuinfo_max_freq")
    return {
        "freq.driver": driver,
        "freq.governor": reader.text(f"{policy}/scaling_governor"),
        "freq.boost": None if boost is None else boost == "1",
        "freq.max_mhz": int(max_khz) / 1000 if max_khz and max_khz.isdigit() else None,
    }


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect_software() -> dict:
    """Versions of what runs the benchmarks (always of this process, whatever the root)."""
    blas = None
    try:
        from threadpoolctl import threadpool_info

        libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        # scipy may load its own OpenBLAS too; numpy's is the one matmul uses.
        lib = min(libs, key=lambda i: "numpy" not in (i.get("filepath") or ""), default=None)
        if lib:
            blas = f"{lib.get('internal_api')} {lib.get('version')} ({lib.get('architecture')})"
    except Exception as exc:  # threadpoolctl inspects loaded libraries; never fatal here
        blas = f"unknown ({exc.__class__.__name__})"
    return {
        "software.python": platform.python_version(),
        "software.perfsuite": _dist_version("perfsuite"),
        "software.numpy": _dist_version("numpy"),
        "software.numpy_blas": blas,
    }


def collect_kernels() -> dict:
    try:
        from perfsuite import kernels  # loads the compiled extension: absent when unbuilt

        return {"kernels.isa": kernels.isa()}
    except (ImportError, ValueError) as exc:
        return {"kernels.isa": f"unavailable: {exc}"}


def hardware_class(fields: dict) -> str:
    """Short readable class from must-match fields, e.g. 'amd-zen3-2c-1n'."""
    vendor = fields.get("cpu.vendor") or "unknown"
    vendor = {"AuthenticAMD": "amd", "GenuineIntel": "intel"}.get(vendor, vendor.lower())
    uarch = fields.get("cpu.microarchitecture") or "unknown"
    cores = fields.get("cpu.physical_cores")
    nodes = fields.get("numa.node_count")
    parts = [vendor, uarch, f"{cores if cores else 'x'}c", f"{nodes if nodes else 'x'}n"]
    tpc = fields.get("cpu.threads_per_core")
    if tpc and tpc > 1:
        parts.append(f"smt{tpc}")
    return re.sub(r"[^a-z0-9_-]+", "_", "-".join(str(p) for p in parts).lower())


def fingerprint(
    root: str | Path = "/", *, software: bool = True, frameworks: dict | None = None
) -> Fingerprint:
    """The host's fingerprint (see module docstring and ``FIELD_CLASSES``). ``frameworks``:
    software.<distribution> versions of the frameworks under test
    (``perfsuite.prepare.backends.software_versions()``, which the faces pass)."""
    host = Path(root).resolve() == Path("/")
    topo = read_topology(root)
    reader = Reader(root)
    fields: dict = {}
    fields.update(collect_cpu(topo))
    fields.update(collect_caches(topo))
    fields.update(collect_numa(topo))
    fields["memory.total_bytes"] = reader.mem_total("proc/meminfo", note="memory")
    fields.update(collect_os(reader, topo, host))
    fields.update(collect_frequency(reader, topo))
    if software:
        fields.update(collect_kernels() if host else {"kernels.isa": None})
        fields.update(collect_software())
        fields.update(frameworks or {})
    notes = list(topo.notes) + reader.notes
    node_mem = [n.mem_total_bytes for n in topo.numa_nodes or []]
    total = fields.get("memory.total_bytes")
    if total and node_mem and None not in node_mem and abs(sum(node_mem) - total) > 0.1 * total:
        notes.append(
            f"NUMA nodes report {sum(node_mem) / 2**30:.1f} GiB but MemTotal is "
            f"{total / 2**30:.1f} GiB (hot-plugged or ballooned memory?)"
        )
    unknown = [k for k, v in fields.items() if v is None and FIELD_CLASSES.get(k) == MUST]
    if unknown:
        notes.append(f"unknown must-match fields: {', '.join(unknown)}")
    return Fingerprint.model_validate({
        "schema": SCHEMA,
        "hardware_class": hardware_class(fields),
        "fields": fields,
        "classes": {k: field_class(k) for k in fields},
        "notes": notes,
        "python_executable": sys.executable if host else None,
    })  # fmt: skip
