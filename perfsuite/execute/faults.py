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
    """``call`` (any arguments), taking the ``slow:<fraction>`` fault's share longer, spinning:
    a slower kernel, not an idle one (sleep's granularity is coarse and it frees the core)."""
    extra = _matching("slow", point_id)
    if extra is None or not float(extra):
        return call
    extra = float(extra)

    def slow_call(*args):
        t0 = time.perf_counter()
        out = call(*args)
        end = time.perf_counter() + (time.perf_counter() - t0) * extra
        while time.perf_counter() < end:
            pass
        return out

    return slow_call


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
