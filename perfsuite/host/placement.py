"""Placement plans from the host topology: where a benchmark's threads and memory go (one
NUMA node, a CPU list, shards per node or L3 domain, n threads compact or spread, and the
local-remote matrix)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

from perfsuite.host.topology import Topology, format_cpulist


class PlacementError(ValueError):
    """A placement this host cannot provide: unknown or empty node, CPUs outside the set."""


@dataclass(frozen=True)
class Placement:
    label: str
    cpus: tuple[int, ...]
    mem_nodes: tuple[int, ...] | None  # None: memory not bound

    def numactl_args(self, interleave: bool = False) -> list[str]:
        mem = "--interleave=" if interleave else "--membind="
        args = [f"--physcpubind={format_cpulist(self.cpus)}"]
        if self.mem_nodes is not None:
            args.append(mem + format_cpulist(self.mem_nodes))
        return args


def _nodes(topo: Topology) -> dict:
    if not topo.numa_nodes:
        raise PlacementError("this host reports no NUMA nodes (no /sys/devices/system/node)")
    return {n.node: n for n in topo.numa_nodes}


def node(topo: Topology, n: int) -> Placement:
    """The CPUs and memory of NUMA node ``n`` (numactl --cpunodebind=N --membind=N)."""
    nodes = _nodes(topo)
    if n not in nodes:
        raise PlacementError(f"NUMA node {n} does not exist (nodes: {format_cpulist(nodes)})")
    if not nodes[n].cpus:
        raise PlacementError(f"NUMA node {n} has no online CPUs (memory-only node)")
    return Placement(f"node{n}", tuple(nodes[n].cpus), (n,))


def cpus(topo: Topology, wanted: list[int], mem_nodes: tuple[int, ...] | None = None) -> Placement:
    """An explicit list of online CPUs."""
    online = set(topo.online or ())
    outside = sorted(set(wanted) - online)
    if not wanted:
        raise PlacementError("empty CPU list")
    if outside:
        raise PlacementError(
            f"CPU(s) {format_cpulist(outside)} are not online (online: {format_cpulist(online)})"
        )
    return Placement(f"cpus{format_cpulist(wanted)}", tuple(sorted(set(wanted))), mem_nodes)


def node_of_cpu(topo: Topology) -> dict[int, int]:
    return {c: n.node for n in topo.numa_nodes or () for c in n.cpus}


def shards(topo: Topology, by: str = "node") -> list[Placement]:
    """One placement per NUMA node with CPUs ('node') or per L3 domain ('l3', a CCX/CCD): the
    article's multi-socket recipe."""
    if by == "node":
        return [node(topo, n) for n, info in sorted(_nodes(topo).items()) if info.cpus]
    if by == "l3":
        domains = topo.l3_domains
        if not domains:
            raise PlacementError("L3 sharing domains are unknown on this host")
        where = node_of_cpu(topo)
        out = []
        for i, dom in enumerate(domains):
            mem = sorted({where[c] for c in dom if c in where})
            out.append(Placement(f"l3dom{i}", tuple(dom), tuple(mem) if mem else None))
        return out
    raise PlacementError(f"shards by {by!r}: use 'node' or 'l3'")


def _cores(topo: Topology, allowed: list[int]) -> list[tuple[int, ...]]:
    """Allowed CPUs grouped by physical core, in CPU order (SMT siblings together)."""
    l2 = topo.caches.get("L2")
    # Zen: L2 is per core, so its sharing list = SMT siblings
    siblings = {c: dom for dom in (l2.domains if l2 else ()) for c in dom}
    groups = (tuple(x for x in siblings.get(c, (c,)) if x in allowed) for c in sorted(allowed))
    return list(dict.fromkeys(groups))


def choose_cpus(topo: Topology, allowed: list[int], n: int, policy: str = "compact") -> list[int]:
    """n CPUs out of ``allowed``: first threads of cores before SMT siblings; 'compact' fills
    one L3 domain's physical cores before the next, 'spread' alternates between L3 domains."""
    if n < 1 or n > len(allowed):
        raise PlacementError(f"cannot place {n} threads on {len(allowed)} CPU(s)")
    if policy not in ("compact", "spread"):
        raise PlacementError(f"placement policy {policy!r}: use 'compact' or 'spread'")
    domains = [list(d) for d in (topo.l3_domains or (tuple(allowed),))]
    per_dom = [_cores(topo, [c for c in d if c in allowed]) for d in domains]
    per_dom = [cores for cores in per_dom if cores]
    order: list[int] = []
    for smt_level in range(max(len(c) for dom in per_dom for c in dom)):
        level = [[c[smt_level] for c in dom if len(c) > smt_level] for dom in per_dom]
        by_turn = level if policy == "compact" else zip_longest(*level)
        order += [c for group in by_turn for c in group if c is not None]
    return sorted(order[:n])


def matrix(topo: Topology) -> list[tuple[int, int]]:
    """(CPU node, memory node) pairs: the diagonal is local, the rest remote."""
    nodes = _nodes(topo)
    return [(c, m) for c in sorted(n for n, i in nodes.items() if i.cpus) for m in sorted(nodes)]
