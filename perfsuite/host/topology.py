"""CPU, cache and NUMA topology read from sysfs/procfs under a root path.

Every reader degrades to ``None`` ("unknown") with a note when files are missing: containers
hide parts of sysfs, CPUs go offline (CPU 0 included), nodes can be empty or absent. A root
other than ``/`` lets tests point the reader at fixture trees of other machines.
"""

from __future__ import annotations

import re
from contextlib import suppress
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

CPU_DIR = "sys/devices/system/cpu"
NODE_DIR = "sys/devices/system/node"


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11] (kernel cpulist format)."""
    out: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "-" in part:
            lo, _, hi = part.partition("-")
            stride = 1
            if ":" in hi:  # kernel allows 'a-b:stride/group'; stride form only is seen in practice
                hi, _, rest = hi.partition(":")
                stride = int(rest.split("/")[0])
            start, end = int(lo), int(hi)
            if end < start:
                raise ValueError(f"bad cpulist range {part!r}")
            out.extend(range(start, end + 1, stride))
        else:
            out.append(int(part))
    return sorted(set(out))


def format_cpulist(cpus) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8'."""
    runs: list[str] = []
    # consecutive CPUs share cpu - position, so each group is one run
    for _, group in groupby(enumerate(sorted(set(cpus))), lambda ic: ic[1] - ic[0]):
        run = [c for _, c in group]
        runs.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(runs)


def parse_size(text: str) -> int:
    """Cache size as sysfs writes it ('32K', '32768K', '1M') -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"unrecognised size {text!r}")
    scale = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2).upper()]
    return int(m.group(1)) * scale


class Reader:
    """Reads files below a root; collects a note for each thing it could not read."""

    def __init__(self, root: str | Path = "/"):
        self.root = Path(root)
        self.notes: list[str] = []

    def path(self, rel: str) -> Path:
        return self.root / rel.lstrip("/")

    def text(self, rel: str, *, note: str | None = None) -> str | None:
        try:
            return self.path(rel).read_text().strip()
        except (OSError, UnicodeDecodeError) as exc:
            if note:
                self.notes.append(
                    f"{note}: cannot read /{rel.lstrip('/')} ({exc.__class__.__name__})"
                )
            return None

    def cpulist(self, rel: str, *, note: str | None = None) -> list[int] | None:
        raw = self.text(rel, note=note)
        if raw is None:
            return None
        try:
            return parse_cpulist(raw)
        except ValueError:
            self.notes.append(f"{note or rel}: malformed cpulist {raw!r}")
            return None

    def mem_total(self, rel: str, *, note: str) -> int | None:
        """MemTotal of a meminfo file, in bytes."""
        m = re.search(r"MemTotal:\s+(\d+)\s*kB", self.text(rel, note=note) or "")
        return int(m.group(1)) * 1024 if m else None


@dataclass(frozen=True)
class CacheLevel:
    size_bytes: int
    domains: tuple[tuple[int, ...], ...]  # distinct shared_cpu_list sets among online CPUs


@dataclass(frozen=True)
class NumaNode:
    node: int
    cpus: tuple[int, ...]
    mem_total_bytes: int | None


@dataclass(frozen=True)
class CpuInfo:
    vendor: str | None
    model_name: str | None
    family: int | None
    model: int | None
    stepping: int | None
    flags: frozenset[str]
    mhz: float | None


@dataclass(frozen=True)
class Topology:
    online: tuple[int, ...] | None
    offline: tuple[int, ...]
    sockets: int | None
    physical_cores: int | None
    threads_per_core: int | None
    smt_control: str | None
    caches: dict[str, CacheLevel]  # keys 'L1d', 'L1i', 'L2', 'L3'
    numa_nodes: tuple[NumaNode, ...] | None
    cpu: CpuInfo
    notes: tuple[str, ...] = field(default=())

    @property
    def l3_bytes(self) -> int | None:
        """The L3's size (the one lookup: the roofline, the thread formula), or None."""
        l3 = self.caches.get("L3")
        return l3.size_bytes if l3 else None

    @property
    def l3_domains(self) -> tuple[tuple[int, ...], ...] | None:
        l3 = self.caches.get("L3")
        return l3.domains if l3 else None


def read_cpuinfo(reader: Reader) -> CpuInfo:
    raw = reader.text("proc/cpuinfo", note="cpu identity")
    first: dict[str, str] = {}
    # the first processor's block: up to the first blank line (raw is stripped)
    for line in re.split(r"\n\s*\n", raw or "")[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            first.setdefault(key.strip(), value.strip())

    def number(key: str, parse=lambda text: int(text, 0)):
        try:
            return parse(first[key])
        except (KeyError, ValueError):
            return None

    return CpuInfo(
        vendor=first.get("vendor_id"),
        model_name=first.get("model name"),
        family=number("cpu family"),
        model=number("model"),
        stepping=number("stepping"),
        flags=frozenset(first.get("flags", "").split()),
        mhz=number("cpu MHz", float),
    )


def _read_caches(reader: Reader, cpus: list[int]) -> dict[str, CacheLevel]:
    sizes: dict[str, int] = {}
    domains: dict[str, set[tuple[int, ...]]] = {}
    missing = []
    online = set(cpus)
    for cpu in cpus:
        base = reader.path(f"{CPU_DIR}/cpu{cpu}/cache")
        try:
            indexes = sorted(p.name for p in base.iterdir() if p.name.startswith("index"))
        except OSError:
            missing.append(cpu)
            continue
        for idx in indexes:
            rel = f"{CPU_DIR}/cpu{cpu}/cache/{idx}"
            level, ctype = reader.text(f"{rel}/level"), reader.text(f"{rel}/type")
            size, shared = reader.text(f"{rel}/size"), reader.text(f"{rel}/shared_cpu_list")
            if level is None or ctype is None:
                continue
            n = int(level)
            key = f"L{n}" if n != 1 else ("L1d" if ctype == "Data" else "L1i")
            if size is not None:
                try:
                    sizes.setdefault(key, parse_size(size))
                except ValueError:
                    reader.notes.append(f"{key} size: unrecognised {size!r} in /{rel}/size")
            if shared is not None:
                try:
                    dom = tuple(c for c in parse_cpulist(shared) if c in online)
                    domains.setdefault(key, set()).add(dom)
                except ValueError:
                    reader.notes.append(f"{key} sharing: malformed cpulist in /{rel}")
    if missing:
        reader.notes.append(
            f"caches: no cache directory for CPU(s) {format_cpulist(missing)}; "
            "sizes and sharing come from the other CPUs"
        )
    out = {}
    for key in ("L1d", "L1i", "L2", "L3"):
        if key not in sizes:
            reader.notes.append(f"{key}: unknown (no readable cache info)")
            continue
        out[key] = CacheLevel(sizes[key], tuple(sorted(domains.get(key, ()))))
    return out


def _read_numa(reader: Reader) -> tuple[NumaNode, ...] | None:
    base = reader.path(NODE_DIR)
    if not base.is_dir():
        reader.notes.append(f"NUMA: /{NODE_DIR} is absent (kernel without NUMA or hidden sysfs)")
        return None
    ids = reader.cpulist(f"{NODE_DIR}/online")
    if ids is None:
        ids = sorted(int(p.name[4:]) for p in base.iterdir() if re.fullmatch(r"node\d+", p.name))
    nodes = []
    for n in ids:
        cpus = reader.cpulist(f"{NODE_DIR}/node{n}/cpulist", note=f"NUMA node {n} CPUs") or []
        mem = reader.mem_total(f"{NODE_DIR}/node{n}/meminfo", note=f"NUMA node {n} memory")
        if not cpus:
            reader.notes.append(f"NUMA node {n} has no CPUs (memory-only or all CPUs offline)")
        nodes.append(NumaNode(node=n, cpus=tuple(cpus), mem_total_bytes=mem))
    return tuple(nodes)


def read_topology(root: str | Path = "/") -> Topology:
    """Read the host topology below ``root``; unknown fields are None with a note."""
    reader = Reader(root)
    online = reader.cpulist(f"{CPU_DIR}/online", note="online CPUs")
    offline = reader.cpulist(f"{CPU_DIR}/offline") or []
    if online is None:
        # Fall back to the cpuN directories; without 'online' we cannot tell offline ones.
        with suppress(OSError):
            online = sorted(
                int(p.name[3:])
                for p in reader.path(CPU_DIR).iterdir()
                if re.fullmatch(r"cpu\d+", p.name)
            )
    cpu = read_cpuinfo(reader)

    packages: dict[int, set[tuple[int, int]]] = {}
    siblings: set[tuple[int, ...]] = set()
    unread = []
    for c in online or []:
        rel = f"{CPU_DIR}/cpu{c}/topology"
        pkg, core = reader.text(f"{rel}/physical_package_id"), reader.text(f"{rel}/core_id")
        sib = reader.cpulist(f"{rel}/thread_siblings_list")
        if pkg is None or core is None:
            unread.append(c)
            continue
        # core_id repeats across packages (and dies), so a core is (package, die, core).
        die = reader.text(f"{rel}/die_id") or "0"
        packages.setdefault(int(pkg), set()).add((int(die), int(core)))
        if sib:
            siblings.add(tuple(sib))
    if unread:
        reader.notes.append(f"topology: no topology files for CPU(s) {format_cpulist(unread)}")

    physical = sum(len(c) for c in packages.values()) or None
    tpc = None
    if siblings:
        widths = {len(s) for s in siblings}
        tpc = max(widths)
        if len(widths) > 1:
            reader.notes.append(
                f"SMT: cores differ in online threads ({sorted(widths)}); reporting the maximum"
            )
    elif online and physical:
        tpc = max(1, round(len(online) / physical))

    return Topology(  # notes last: reading the caches and the nodes adds to them
        online=tuple(online) if online is not None else None,
        offline=tuple(offline),
        sockets=len(packages) or None,
        physical_cores=physical,
        threads_per_core=tpc,
        smt_control=reader.text(f"{CPU_DIR}/smt/control"),
        caches=_read_caches(reader, online or []),
        numa_nodes=_read_numa(reader),
        cpu=cpu,
        notes=tuple(reader.notes),
    )
