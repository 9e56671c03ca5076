"""A real Spark standalone cluster on 127.0.0.1 for tests: a master and workers of one core
each, started through the ``spark-class`` launcher the pyspark package ships, and stopped
(process group killed) at the end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from contextlib import contextmanager, suppress
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def _wait_port(port: int, proc: subprocess.Popen, log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Spark master exited: {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"Spark master did not listen on {port} in {seconds} s")


@contextmanager
def standalone(
    folder: Path,
    workers: int = 2,
    cores: int = 1,
    env: dict | None = None,
    worker_env: list[dict] | None = None,
):
    """Yields the master URL of a loopback cluster with ``workers`` workers; ``worker_env[i]``
    is added to worker i's environment (its executors and their Python workers inherit it)."""
    import pyspark

    folder.mkdir(parents=True, exist_ok=True)
    base = {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_NO_DAEMONIZE": "1",
        **(env or {}),
    }
    port = free_port()
    master = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []

    def launch(name: str, *args: str, extra: dict | None = None) -> subprocess.Popen:
        log = folder / f"{name}.log"
        p = subprocess.Popen(
            [_spark_class(), *args],
            env={**base, **(extra or {})},
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,  # one group per daemon: killed with its children
        )
        procs.append(p)
        return p

    try:
        m = launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1",
            "--port", str(port),
            "--webui-port", str(free_port()),
        )  # fmt: skip
        _wait_port(port, m, folder / "master.log", 90)
        for i in range(workers):
            launch(
                f"worker{i}",
                "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1",
                "--cores", str(cores),
                "--memory", "1g",
                "--webui-port", str(free_port()),
                "--work-dir", str(folder / f"work{i}"),
                master,
                extra=(worker_env or [{}] * workers)[i],
            )  # fmt: skip
        yield master
    finally:
        for p in procs:
            with suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
