"""Hardware counters around a command with ``perf stat`` (the article's cache-miss advice).

Events the PMU cannot count are recorded as ``unsupported`` with perf's reason, never as
zeros: in many VMs (this development VM included) every hardware event reads
``<not supported>``. Derived figures (IPC, misses per 1k instructions) exist only when their
inputs were counted.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile

from perfsuite.records import Counters

EVENTS = ("cycles", "instructions", "cache-references", "cache-misses", "LLC-load-misses")


def _none_counted(events, reason: str) -> Counters:
    return Counters(
        counts={}, unsupported=dict.fromkeys(events, reason), derived={}, returncode=None
    )


NO_PERF = "perf is not installed (Debian: linux-perf)"


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
    for event in events:
        if event not in counts and event not in unsupported:
            unsupported[event] = "not reported by perf"
    c = counts
    if c.get("cycles") and "instructions" in c:
        derived["ipc"] = c["instructions"] / c["cycles"]
    if c.get("instructions"):
        for miss in ("cache-misses", "LLC-load-misses"):
            if miss in c:
                derived[f"{miss}_per_1k_instructions"] = 1000 * c[miss] / c["instructions"]
    return Counters(counts=counts, unsupported=unsupported, derived=derived, returncode=returncode)


def perf_stat(cmd: list[str], events=EVENTS, timeout: float = 600) -> Counters:
    """Run ``cmd`` under ``perf stat``; every event is either counted or unsupported."""
    perf = shutil.which("perf")
    if perf is None:
        return _none_counted(events, NO_PERF)
    proc = subprocess.run(
        [perf, "stat", "-x,", "-e", ",".join(events), "--", *cmd],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    res = parse_perf_csv(proc.stderr, events, proc.returncode)
    if proc.returncode != 0 and not res.counts:
        reason = (proc.stderr.strip().splitlines() or ["perf failed"])[-1]
        return _none_counted(events, f"perf stat failed: {reason}").model_copy(
            update={"returncode": proc.returncode}
        )
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
        perf = shutil.which("perf")
        if perf is None:
            self.result = _none_counted(self.events, NO_PERF)
            return self
        self._proc = subprocess.Popen(
            [perf, "stat", "-x,", "-e", ",".join(self.events), "-p", str(self.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
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


def simulated_cache_misses(m: int = 64, k: int = 64, n: int = 64, timeout: float = 600) -> dict:
    """Cache misses of one ``gemm_f32`` call simulated by valgrind (callgrind's cache
    simulator, collecting only inside the kernel). About 2000x slower than native, so meant
    for small shapes and only when asked: it stands in for hardware counters where the PMU is
    unavailable. Returns the event totals (Ir, Dr, Dw, I1mr, D1mr, D1mw, ILmr, DLmr, DLmw) and
    miss rates, or {'unsupported': reason}."""

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return {"unsupported": "valgrind is not installed (Debian: valgrind)"}
    if max(m, k, n) > 512:
        raise ValueError(f"shape {m}x{k}x{n} is too large for simulation (<= 512 per dimension)")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(
            [
                valgrind,
                "--tool=callgrind",
                "--cache-sim=yes",
                "--collect-atstart=no",
                "--toggle-collect=*gemm_f32_into*",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                _CACHEGRIND_SNIPPET.format(m=m, k=k, n=n),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if proc.returncode != 0 or not os.path.exists(out):
            return {"unsupported": f"valgrind failed: {proc.stderr.strip()[-200:]}"}
        events, totals = None, None
        with open(out) as f:
            lines = f.read().splitlines()
        for line in lines:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("totals:"):
                totals = [int(x) for x in line.split()[1:]]
    if not events or not totals:
        return {"unsupported": "callgrind wrote no totals"}
    ev = dict(zip(events, totals, strict=False))
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
