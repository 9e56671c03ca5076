"""What else the machine did during a measurement window: CPU time of other processes
(system-wide busy time from /proc/stat minus this process's own), steal time, this
process's involuntary context switches and CPU migrations (all threads), and the load
average. A window is *contaminated* when other processes took more than
``FOREIGN_SHARE_MAX`` of the CPUs or the hypervisor stole more than ``STEAL_SHARE_MAX``
(why those: docs/measurements/interference.md).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import psutil

from perfsuite.records import InterferenceWindow

FOREIGN_SHARE_MAX = 0.10  # of all online CPUs, over the window
STEAL_SHARE_MAX = 0.05
_TICK = os.sysconf("SC_CLK_TCK")


def _proc_stat(root: Path) -> tuple[float, float, float]:
    """(busy, steal, total) CPU-seconds since boot, all CPUs."""
    fields = (root / "proc" / "stat").read_text().splitlines()[0].split()[1:]
    v = [int(x) for x in fields] + [0] * 10
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    busy = user + nice + system + irq + softirq
    total = busy + idle + iowait + steal
    return busy / _TICK, steal / _TICK, total / _TICK


def _migrations(root: Path) -> int:
    total = 0
    for sched in (root / "proc" / "self" / "task").glob("*/sched"):
        try:
            for line in sched.read_text().splitlines():
                if line.startswith("se.nr_migrations"):
                    total += int(line.split(":")[1])
        except (OSError, ValueError):
            continue
    return total


class Sampler:
    """``with Sampler() as s: ...measure...``; then ``s.result``."""

    def __init__(self, root: str | Path = "/", *, tree: bool = False):
        self.root = Path(root)
        self.tree = tree  # own = this process and its descendants (Spark's JVM and workers)
        self.result: InterferenceWindow | None = None

    def _own_cpu(self) -> float:
        procs = [self._proc] + (self._proc.children(recursive=True) if self.tree else [])
        total = 0.0
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                t = p.cpu_times()
                total += t.user + t.system
        return total

    def __enter__(self):
        self._proc = psutil.Process()
        self._stat0 = _proc_stat(self.root)
        self._own0 = self._own_cpu()
        self._invol0 = self._proc.num_ctx_switches().involuntary
        self._mig0 = _migrations(self.root)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        wall = time.perf_counter() - self._t0
        busy1, steal1, total1 = _proc_stat(self.root)
        busy0, steal0, total0 = self._stat0
        own = self._own_cpu() - self._own0
        total = max(total1 - total0, 1e-9)
        foreign = max(0.0, (busy1 - busy0) - own)
        steal_share = (steal1 - steal0) / total
        self.result = InterferenceWindow(
            window_s=wall,
            foreign_cpu_s=foreign,
            foreign_share=foreign / total,
            steal_share=steal_share,
            involuntary_switches=self._proc.num_ctx_switches().involuntary - self._invol0,
            migrations=_migrations(self.root) - self._mig0,
            load_avg_1m=os.getloadavg()[0],
            contaminated=foreign / total > FOREIGN_SHARE_MAX or steal_share > STEAL_SHARE_MAX,
        )
        return False


def busiest_processes(seconds: float = 0.5, top: int = 3, min_share: float = 0.2) -> list[str]:
    """Other processes that used more than ``min_share`` of a CPU over ``seconds``: the
    pre-flight warning before a sweep starts."""
    me = os.getpid()
    procs = [p for p in psutil.process_iter(["pid", "name"]) if p.pid != me]
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            p.cpu_percent(None)
    time.sleep(seconds)
    busy = []
    for p in procs:
        try:
            share = p.cpu_percent(None) / 100
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if share > min_share:
            busy.append((share, f"{p.info['name']} (pid {p.pid}) {share:.0%} of a CPU"))
    return [text for _, text in sorted(busy, reverse=True)[:top]]
