"""Fault injection, for testing isolation and the gate, set by ``PERFSUITE_FAULT``:

- ``crash`` | ``hang`` | ``raise``: the point's worker process dies, hangs or raises
  (worker points only: in-process it would take the whole run down);
- ``slow:<fraction>[@<glob of point ids>]``: every timed call (of the matching points only,
  if a glob is given), and every query a LoadGen point serves, takes that much longer,
  spinning: a known slowdown;
- ``sleep:<ms>[@<glob>]``: every query sample a LoadGen point serves sleeps that long, as a
  slower SUT would (a server point's rate must fall and the gate flag it).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from fnmatch import fnmatchcase

FAULT_ENV = "PERFSUITE_FAULT"


def _matching(kind: str, point_id: str) -> str | None:
    """The fault's value when it is ``kind`` and matches ``point_id``, else None."""
    fault = os.environ.get(FAULT_ENV, "")
    if not fault.startswith(f"{kind}:"):
        return None
    value, _, glob = fault.removeprefix(f"{kind}:").partition("@")
    return None if glob and not fnmatchcase(point_id, glob) else value


def slowed(call, point_id: str):
    extra = slowdown(point_id)
    if not extra:
        return call

    def slow_call():
        t0 = time.perf_counter()
        out = call()
        busy_wait((time.perf_counter() - t0) * extra)
        return out

    return slow_call


def slowdown(point_id: str) -> float:
    """The ``slow:<fraction>`` fault's fraction for this point, 0 without it."""
    extra = _matching("slow", point_id)
    return 0.0 if extra is None else float(extra)


def busy_wait(seconds: float) -> None:
    """Spin for ``seconds``: a slower kernel, not an idle one (sleep's granularity is coarse
    and it frees the core)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def query_delay_s(point_id: str) -> float:
    """Seconds each served query sample sleeps (``sleep:<ms>``), 0 without the fault."""
    ms = _matching("sleep", point_id)
    return 0.0 if ms is None else float(ms) / 1e3


def inject_fault() -> None:
    """Only in worker processes: an in-process fault would take the whole run down."""
    if multiprocessing.parent_process() is None:
        return
    fault = os.environ.get(FAULT_ENV, "")
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif fault == "hang":
        time.sleep(3600)
    elif fault == "raise":
        raise RuntimeError("injected failure")
