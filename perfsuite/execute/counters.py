"""Hardware counters around a command with ``perf stat`` (the article's cache-miss advice).

Events the PMU cannot count are recorded as ``unsupported`` with perf's reason, never as
zeros: in many VMs (this development VM included) every hardware event reads
``<not supported>``. Derived figures (IPC, misses per 1k instructions) exist only when their
inputs were counted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from perfsuite.execute.isolation import last_line
from perfsuite.records import Counters

EVENTS = ("cycles", "instructions", "cache-references", "cache-misses", "LLC-load-misses")


def _none_counted(events, reason: str, returncode: int | None = None) -> Counters:
    return Counters(
        counts={}, unsupported=dict.fromkeys(events, reason), derived={}, returncode=returncode
    )


NO_PERF = "perf is not installed (Debian: linux-perf)"


def valgrind_missing() -> str | None:
    return None if shutil.which("valgrind") else "valgrind is not installed (Debian: valgrind)"


def parse_perf_csv(text: str, events=EVENTS, returncode: int | None = None) -> Counters:
    """Parse ``perf stat -x,`` output (value,unit,event,run time,percent,...)."""
    counts: dict[str, int] = {}
    unsupported: dict[str, str] = {}  # event -> reason
    derived: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or parts[2] not in events:
            continue
        value, event = parts[0].strip(), parts[2]
        if value.startswith("<"):
            unsupported[event] = value.strip("<>")  # "not supported" / "not counted"
            continue
        try:
            counts[event] = int(float(value))
        except ValueError:
            unsupported[event] = f"unparsable value {value!r}"
    for event in (e for e in events if e not in counts):
        unsupported.setdefault(event, "not reported by perf")
    if counts.get("cycles") and "instructions" in counts:
        derived["ipc"] = counts["instructions"] / counts["cycles"]
    for miss in ("cache-misses", "LLC-load-misses"):
        if counts.get("instructions") and miss in counts:
            derived[f"{miss}_per_1k_instructions"] = 1000 * counts[miss] / counts["instructions"]
    return Counters(counts=counts, unsupported=unsupported, derived=derived, returncode=returncode)


def _perf_stat_cmd(events, *target: str) -> list[str] | None:
    """``perf stat`` of ``events`` in CSV on ``target``, or None when perf is not installed."""
    perf = shutil.which("perf")
    return None if perf is None else [perf, "stat", "-x,", "-e", ",".join(events), *target]


def perf_stat(cmd: list[str], events=EVENTS, timeout: float = 600) -> Counters:
    """Run ``cmd`` under ``perf stat``; every event is either counted or unsupported."""
    perf_cmd = _perf_stat_cmd(events, "--", *cmd)
    if perf_cmd is None:
        return _none_counted(events, NO_PERF)
    proc = subprocess.run(perf_cmd, capture_output=True, text=True, timeout=timeout)
    res = parse_perf_csv(proc.stderr, events, proc.returncode)
    if proc.returncode != 0 and not res.counts:
        reason = f"perf stat failed: {last_line(proc.stderr, 'perf failed')}"
        return _none_counted(events, reason, proc.returncode)
    return res


def pmu_available() -> tuple[bool, str]:
    """(True, "") when perf counts instructions here, else (False, the reason)."""
    res = perf_stat(["true"], events=("instructions",), timeout=60)
    if "instructions" in res.counts:
        return True, ""
    return False, res.unsupported.get("instructions", "unknown")


class PerfAttach:
    """``with PerfAttach(pid) as c: ...`` counts events of a running process (all its threads)
    for the duration of the block: ``perf stat -p PID``, stopped with SIGINT. ``c.result``
    holds counts or the reasons events are unsupported."""

    def __init__(self, pid: int, events=EVENTS):
        self.pid, self.events = pid, tuple(events)
        self.result: Counters | None = None
        self._proc = None

    def __enter__(self):
        cmd = _perf_stat_cmd(self.events, "-p", str(self.pid))
        if cmd is None:
            self.result = _none_counted(self.events, NO_PERF)
            return self
        self._proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        return self

    def __exit__(self, *exc):
        if self._proc is None:
            return False
        self._proc.send_signal(signal.SIGINT)
        try:
            _, err = self._proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            _, err = self._proc.communicate()
        self.result = parse_perf_csv(err or "", self.events, self._proc.returncode)
        return False


_CACHEGRIND_SNIPPET = """
import numpy as np
from perfsuite import kernels
rng = np.random.default_rng(0)
a = rng.standard_normal(({m}, {k}), dtype=np.float32)
b = rng.standard_normal(({k}, {n}), dtype=np.float32)
kernels.gemm_f32(a, b, threads=1)
"""


@contextlib.contextmanager
def callgrind(script: str, collect: str, *options: str, timeout: float, **run):
    """Run Python ``script`` under callgrind, collecting only inside functions matching
    ``collect``; yields (the process, its output file or None when valgrind failed)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = [shutil.which("valgrind") or "valgrind", "--tool=callgrind", *options]
        cmd += ["--collect-atstart=no", f"--toggle-collect={collect}"]
        cmd += [f"--callgrind-out-file={out}", sys.executable, "-c", script]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **run)
        yield proc, out if proc.returncode == 0 and os.path.exists(out) else None


def callgrind_totals(out: str) -> dict[str, int]:
    """Event -> total over the collection, from a callgrind output file ({} without totals)."""
    events, totals = [], []
    with open(out) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith(("totals:", "summary:")):
                totals = [int(x) for x in line.split()[1:]]
    return dict(zip(events, totals, strict=False))


def simulated_cache_misses(m: int = 64, k: int = 64, n: int = 64, timeout: float = 600) -> dict:
    """Cache misses of one ``gemm_f32`` call simulated by valgrind (callgrind's cache
    simulator, collecting only inside the kernel). About 2000x slower than native, so meant
    for small shapes and only when asked: it stands in for hardware counters where the PMU is
    unavailable. Returns the event totals (Ir, Dr, Dw, I1mr, D1mr, D1mw, ILmr, DLmr, DLmw) and
    miss rates, or {'unsupported': reason}."""
    if why := valgrind_missing():
        return {"unsupported": why}
    if max(m, k, n) > 512:
        raise ValueError(f"shape {m}x{k}x{n} is too large for simulation (<= 512 per dimension)")
    script = _CACHEGRIND_SNIPPET.format(m=m, k=k, n=n)
    with callgrind(script, "*gemm_f32_into*", "--cache-sim=yes", timeout=timeout) as (proc, out):
        if out is None:
            return {"unsupported": f"valgrind failed: {proc.stderr.strip()[-200:]}"}
        ev = callgrind_totals(out)
    if not ev:
        return {"unsupported": "callgrind wrote no totals"}
    d_refs = ev.get("Dr", 0) + ev.get("Dw", 0)
    d1 = ev.get("D1mr", 0) + ev.get("D1mw", 0)
    ll = ev.get("DLmr", 0) + ev.get("DLmw", 0)
    return {
        "shape": [m, k, n],
        "events": ev,
        "d1_miss_rate": d1 / d_refs if d_refs else None,
        "ll_miss_rate": ll / d_refs if d_refs else None,
        "ll_misses_per_1k_instructions": 1000 * ll / ev["Ir"] if ev.get("Ir") else None,
    }
