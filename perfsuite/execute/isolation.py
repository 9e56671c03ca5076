"""Run a function in a fresh worker process with a deadline, so that a crash (segfault, abort)
or a hang (e.g. OpenVINO's teardown deadlock after an AsyncInferQueue with a Python callback)
becomes an error for one benchmark point instead of the end of the run.

The function must be importable (module level): workers are started with 'spawn', so nothing
(threads, framework state, memory bindings) leaks in from the parent.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any


class WorkerError(RuntimeError):
    """The worker raised: the message carries its traceback."""


class WorkerCrashed(WorkerError):
    """The worker died without answering (signal or non-zero exit)."""


class WorkerTimeout(WorkerError):
    """The worker did not answer before the deadline and was killed."""


@dataclass(frozen=True)
class WorkerResult:
    value: Any
    seconds: float
    teardown_hung: bool  # answered, then did not exit within the grace period (killed)


def _child(conn, fn, args, kwargs):
    try:
        conn.send(("ok", fn(*args, **kwargs)))
    except BaseException as exc:  # report everything, even SystemExit, to the parent
        conn.send(("error", f"{exc.__class__.__name__}: {exc}\n{traceback.format_exc()}"))
    finally:
        conn.close()


def last_line(text: str, default: str = "no output") -> str:
    """The last line a failed process wrote: its one-line reason."""
    return (text.strip().splitlines() or [default])[-1]


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def run_isolated(
    fn, *args, timeout: float = 300.0, exit_grace: float = 10.0, **kwargs
) -> WorkerResult:
    """fn(*args, **kwargs) in a spawned process; raises WorkerTimeout/WorkerCrashed/WorkerError."""
    name = getattr(fn, "__name__", fn)
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args, kwargs), daemon=True)
    t0 = time.perf_counter()
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            proc.kill()
            proc.join()
            raise WorkerTimeout(f"{name} gave no answer within {timeout:g} s; worker killed")
        try:
            status, payload = parent.recv()
        except EOFError:
            proc.join(exit_grace)
            raise WorkerCrashed(
                f"{name} worker died without answering ({describe_exit(proc.exitcode)})"
            ) from None
    finally:
        parent.close()
    seconds = time.perf_counter() - t0
    proc.join(exit_grace)
    hung = proc.is_alive()
    if hung:
        proc.kill()
        proc.join()
    if status == "error":
        raise WorkerError(payload)
    return WorkerResult(value=payload, seconds=seconds, teardown_hung=hung)
