"""Fan-out to hosts, with Spark as the engine: one task per executor host, each task taking
all of its executor's cores (``spark.task.cpus`` = ``spark.executor.cores``), so N hosts run N
tasks at once and no two share a machine. ``run_on_hosts`` waits for the executors, runs a
module-level function on each and brings its JSON-able result back with the host's name. The
SparkSession is stopped whatever happens.

Each host is its own Spark job (a thread per host, its own job group and deadline) and a
failed task is not retried elsewhere (``spark.task.maxFailures`` = 1): a Python worker
killed, an executor lost, a host whose Python lacks perfsuite or a task over its deadline
costs that host's result only, with one line saying why, never the other hosts'. A host
that never registers is one such line too.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from perfsuite.execute.isolation import WorkerError
from perfsuite.execute.spark import Deadline, start

CLOCK_TOLERANCE_S = 2.0  # a host clock further off the driver's is reported


class FleetUsageError(ValueError):
    """The master or host count cannot give one task per host (a usage error)."""


@dataclass
class HostResult:
    host: str  # hostname, plus the executor id where two executors share a hostname
    executor: str
    value: object | None
    error: str | None
    clock: float | None = None  # the host's time.time() when its task ended
    clock_offset_s: float = 0.0  # host clock minus driver's when past CLOCK_TOLERANCE_S, else 0


def executor_id() -> str:
    """This Python worker's executor id: standalone puts it in the log URLs it hands the
    worker, other managers give at least a distinct executor directory."""
    url = os.environ.get("SPARK_LOG_URL_STDOUT", "")
    query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    if query.get("executorId"):
        return query["executorId"][0]
    dirs = os.environ.get("SPARK_EXECUTOR_DIRS", "")
    return os.path.basename(dirs) or f"pid{os.getppid()}"


def _on_host(fn, payload, _index: int) -> HostResult:
    try:
        value, error = fn(payload), None
    except Exception as exc:  # reported per host; one bad host must not hide the others
        value, error = None, f"{exc.__class__.__name__}: {exc}"
    return HostResult(socket.gethostname(), executor_id(), value, error, clock=time.time())


def task_failure(exc: BaseException) -> tuple[str, str, str]:
    """(host, executor, why) from a failed Spark job's message: Spark names where the task
    ran ("Lost task 0.0 in stage 1.0 (TID 1) (10.0.0.7 executor 3): ...") and the Python
    error, if any, is the last "SomethingError: ..." line of the worker's traceback."""
    text = str(exc)
    where = re.search(r"\(([^\s()]+) executor (\w+)\)", text)
    errors = re.findall(r"^\s*(\w+(?:Error|Exception|Exit): .+)$", text, re.M)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    lost = re.search(r"(ExecutorLostFailure \(.*?\))", text)
    why = errors[-1] if errors else lost.group(1) if lost else first
    if "Python worker exited unexpectedly" in text and not errors:
        why = "its Python worker exited unexpectedly (killed or crashed)"
    host, executor = (where.group(1), where.group(2)) if where else ("?", "?")
    return host, executor, why


def clock_line(offset_s: float) -> str:
    side = "ahead of" if offset_s > 0 else "behind"
    return f"clock {abs(offset_s):.0f} s {side} the driver's"


def _clock_offset(host_clock: float, received: float) -> float:
    """How far the host's clock is off the driver's: the host read it as its task ended,
    moments before the driver got the result; 0 within the tolerance."""
    off = host_clock - received
    return off if abs(off) > CLOCK_TOLERANCE_S else 0.0


def _wait_for_executors(sc, hosts: int, seconds: float) -> int:
    deadline = time.monotonic() + seconds
    while True:
        n = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
        if n >= hosts or time.monotonic() > deadline:
            return n
        time.sleep(0.5)


def run_on_hosts(
    master: str,
    hosts: int,
    fn,
    payload,
    *,
    host_cores: int = 1,
    timeout: float = 3600.0,
    wait_s: float = 180.0,
) -> list[HostResult]:
    """Every host's result; a host that failed has ``error`` set (and ``host`` from Spark's
    failure message, or "host K of N" when it never registered)."""
    if master.startswith("local"):
        raise FleetUsageError(
            f"--spark-master {master} runs everything in one process on one host; a fleet run "
            "needs a cluster master (spark://host:7077, yarn, k8s://...)"
        )
    if hosts < 1 or host_cores < 1:
        raise FleetUsageError(f"--hosts and --host-cores must be >= 1 (got {hosts}, {host_cores})")
    spark = start(
        master,
        cores=host_cores,
        conf={
            "spark.executor.cores": str(host_cores),
            "spark.task.cpus": str(host_cores),  # one task fills its executor
            "spark.cores.max": str(hosts * host_cores),
            "spark.task.maxFailures": "1",  # a retry would measure another host in its place
        },
    )
    try:
        sc = spark.sparkContext
        have = _wait_for_executors(sc, hosts, wait_s)
        if have < 1:
            raise WorkerError(f"no executor registered with {master} in {wait_s:.0f} s")
        one = functools.partial(_one_host, sc, fn, payload, timeout)
        with ThreadPoolExecutor(max_workers=have) as pool:  # one Spark job per host at once
            try:
                got = list(pool.map(one, range(have)))
            except BaseException:  # Ctrl-C: end the jobs, or leaving the pool waits for them
                sc.cancelAllJobs()
                raise
    finally:
        spark.stop()
    missing = [
        HostResult(f"host {i + 1} of {hosts}", "-", None,
                   f"never registered with {master} in {wait_s:.0f} s")
        for i in range(have, hosts)
    ]  # fmt: skip
    return _named(got) + missing


def _one_host(sc, fn, payload, timeout: float, index: int) -> HostResult:
    with Deadline(sc, timeout, f"perfsuite-host-{index}") as deadline:
        try:
            (got,) = (
                sc.parallelize([index], 1).map(functools.partial(_on_host, fn, payload)).collect()
            )
        except Exception as exc:
            host, executor, why = task_failure(exc)
            host = f"task {index + 1}" if host == "?" else host  # Spark did not say where
            if deadline.expired:
                why = f"over its deadline of {timeout:.0f} s: cancelled"
            return HostResult(host, executor, None, why)
    offset = _clock_offset(got.clock, time.time()) if got.clock else 0.0
    return replace(got, clock_offset_s=offset)


def _named(got: list[HostResult]) -> list[HostResult]:
    """Loopback "hosts" share a hostname: the executor id tells them apart. A second task on
    one executor (a host's task failed fast, freeing its executor before another host's job
    was placed) is no second host: it is reported, and one registered executor got no task."""
    names = [g.host for g in got]
    seen: set[tuple[str, str]] = set()
    out = []
    for g in got:
        if names.count(g.host) > 1 and g.executor != "?":
            g = replace(g, host=f"{g.host}#{g.executor}")
        if (g.host, g.executor) in seen and g.executor != "?":
            why = f"ran on executor {g.executor} after another task: an executor got no task"
            g = replace(g, host=f"{g.host} (again)", value=None, error=why)
        seen.add((g.host, g.executor))
        out.append(g)
    return sorted(out, key=lambda r: r.host)
