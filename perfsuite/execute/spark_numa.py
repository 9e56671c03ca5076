"""NUMA for Spark, which has none: its Python workers are started through a generated
``numactl`` wrapper (what ``spark.pyspark.python`` / ``PYSPARK_PYTHON`` points at), and a
multi-node host runs one executor per node.

The wrapper binds to the node it was generated for unless ``PERFSUITE_NUMA_NODE`` is set in
the worker's environment: a standalone worker started per node with that variable (see
``executor_plan``) binds every Python worker of its executor to its own node with one script.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from perfsuite.writing import atomic_write_text

ENV_NODE = "PERFSUITE_NUMA_NODE"


class NumaUnavailable(RuntimeError):
    """numactl is missing, or the node does not exist."""


def wrapper_script(node: int, python: str, folder: Path, numactl: str | None = None) -> Path:
    """Write (atomically) and return an executable script that runs ``python`` bound to
    ``node``'s CPUs and memory."""
    numactl = numactl or shutil.which("numactl")
    if not numactl:
        raise NumaUnavailable(
            "a NUMA-bound Spark point needs numactl (apt install numactl); none on PATH"
        )
    path = folder / f"python-node{node}.sh"
    text = (
        "#!/bin/sh\n"
        f"# perfsuite: a Spark Python worker bound to NUMA node {node} ({ENV_NODE} overrides)\n"
        f'node="${{{ENV_NODE}:-{node}}}"\n'
        f'exec {shlex.quote(numactl)} --cpunodebind="$node" --membind="$node" '
        f'{shlex.quote(python)} "$@"\n'
    )
    atomic_write_text(path, text, executable=True)
    return path


@dataclass(frozen=True)
class ExecutorSpec:
    node: int
    cores: int  # physical cores of the node: the executor's cores and its task slots
    memory_mib: int | None
    env: dict

    def worker_command(self, master: str, spark_class: str = "spark-class") -> str:
        """How to start this node's standalone worker so its Python workers bind to it."""
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        mem = f" --memory {self.memory_mib}M" if self.memory_mib else ""
        return (
            f"{env} {spark_class} org.apache.spark.deploy.worker.Worker "
            f"--cores {self.cores}{mem} {master}"
        )


def executor_plan(topo) -> list[ExecutorSpec]:
    """One executor per NUMA node with CPUs: its cores, 90% of its memory (the rest for the
    OS and the JVM's overhead), and the environment that binds its Python workers."""
    tpc = topo.threads_per_core or 1
    return [
        ExecutorSpec(
            node=n.node,
            cores=max(1, len(n.cpus) // tpc),
            memory_mib=int(n.mem_total_bytes * 0.9 / 2**20) if n.mem_total_bytes else None,
            env={ENV_NODE: str(n.node)},
        )
        for n in topo.numa_nodes or ()
        if n.cpus
    ]
