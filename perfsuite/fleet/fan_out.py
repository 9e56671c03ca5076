"""Fan-out to hosts, with Spark as the engine: one task per executor host, each task taking
all of its executor's cores (``spark.task.cpus`` = ``spark.executor.cores``), so N hosts run N
tasks at once and no two share a machine. ``run_on_hosts`` waits for the executors, runs a
module-level function on each and brings its JSON-able result back with the host's name. The
SparkSession is stopped whatever happens.
"""

from __future__ import annotations

import functools
import os
import socket
import time
import urllib.parse
from dataclasses import dataclass, replace

from perfsuite.execute.isolation import WorkerError
from perfsuite.execute.spark import Deadline, start


class FleetUsageError(ValueError):
    """The master or host count cannot give one task per host (a usage error)."""


@dataclass
class HostResult:
    host: str  # hostname, plus the executor id where two executors share a hostname
    executor: str
    value: object | None
    error: str | None


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
    return HostResult(socket.gethostname(), executor_id(), value, error)


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
        },
    )
    try:
        sc = spark.sparkContext
        have = _wait_for_executors(sc, hosts, wait_s)
        if have < hosts:
            raise WorkerError(
                f"{have} executor(s) registered with {master} in {wait_s:.0f} s; {hosts} needed"
            )
        with Deadline(sc, timeout, "perfsuite-hosts") as deadline:
            try:
                got = (
                    sc.parallelize(range(hosts), hosts)
                    .map(functools.partial(_on_host, fn, payload))
                    .collect()
                )
            except Exception as exc:
                why = f"exceeded {timeout:.0f} s" if deadline.expired else str(exc).splitlines()[0]
                raise WorkerError(f"fleet run on {master} failed: {why}") from exc
    finally:
        spark.stop()
    names = [g.host for g in got]
    seen = set()
    for g in got:
        if (g.host, g.executor) in seen:
            raise WorkerError(
                f"two tasks ran on executor {g.executor} of {g.host}: the cluster "
                f"has fewer than {hosts} executors of {host_cores} core(s)"
            )
        seen.add((g.host, g.executor))
    # loopback "hosts" share a hostname: the executor id tells them apart
    return sorted(
        (replace(g, host=f"{g.host}#{g.executor}") if names.count(g.host) > 1 else g for g in got),
        key=lambda r: r.host,
    )
