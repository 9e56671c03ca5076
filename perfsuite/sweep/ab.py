"""Relative runs (``perfsuite ab``): the same points from two environments, A then B, round
after round, each measurement in a fresh process of that environment's interpreter, on the
same machine in the same minutes; B is judged against A on the per-round ratios
(``perfsuite.gate.paired``). Two venvs with different onnxruntime or openvino versions, two
builds of the kernels, or one interpreter with a different environment (``--b-env``).

Each side must have perfsuite installed: the measurement is ``run_point`` in that
interpreter, so the framework versions, the kernels and the Python are that side's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perfsuite import records
from perfsuite.execute.isolation import WorkerError

SNIPPET = """
import json, sys
from perfsuite.execute.runner import run_point
from perfsuite.prepare.backends import software_versions
point, protocol = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = run_point(point, protocol)
out["software"] = software_versions()
sys.stdout.write("\\n" + json.dumps(out, default=str) + "\\n")
"""


@dataclass(frozen=True)
class Side:
    name: str  # "a" | "b"
    python: str
    env: dict = field(default_factory=dict)

    def describe(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.env.items())
        return f"{self.python}" + (f" ({extra})" if extra else "")


def measure(side: Side, point: dict, protocol: dict, timeout: float) -> dict:
    """One fresh process of ``side`` measuring ``point``; its plain-data result."""
    try:
        proc = subprocess.run(
            [side.python, "-c", SNIPPET, json.dumps(point), json.dumps(protocol)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **side.env},
        )
    except subprocess.TimeoutExpired as exc:
        raise WorkerError(f"side {side.name}: {point['id']} passed {timeout:.0f} s") from exc
    except OSError as exc:
        raise WorkerError(f"side {side.name}: cannot run {side.python}: {exc}") from exc
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise WorkerError(f"side {side.name}: {point['id']}: {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@dataclass
class AbRun:
    samples: dict = field(default_factory=lambda: {"a": {}, "b": {}})  # side -> id -> [s]
    medians: dict = field(default_factory=lambda: {"a": {}, "b": {}})  # side -> id -> [per round]
    last: dict = field(default_factory=lambda: {"a": {}, "b": {}})  # side -> id -> result
    errors: dict = field(default_factory=dict)


def run(points: list[dict], protocol: dict, a: Side, b: Side, rounds: int, *,
        timeout: float, progress=None) -> AbRun:  # fmt: skip
    """``rounds`` x (for every point: A, then B). A point that fails on either side is an
    error for that point and is not measured again."""
    out = AbRun()
    for r in range(rounds):
        for p in points:
            if p["id"] in out.errors:
                continue
            for side in (a, b):
                try:
                    got = measure(side, p, protocol, timeout)
                except WorkerError as exc:
                    out.errors[p["id"]] = str(exc)
                    break
                out.samples[side.name].setdefault(p["id"], []).extend(got["samples_s"])
                out.medians[side.name].setdefault(p["id"], []).append(
                    float(np.median(got["samples_s"]))
                )
                out.last[side.name][p["id"]] = got
            if progress:
                progress(r, p["id"])
    return out


def write(run_dir: Path, ab: AbRun, points: list[dict], hardware_class: str, verdicts) -> None:
    """A normal run directory for each side (``<run>/a``, ``<run>/b``: every round's samples
    pooled, the round medians as session medians) and ``ab.json`` with the verdicts."""
    from perfsuite.execute.measure import summarize
    from perfsuite.files import atomic_write_text, json_default

    for side in ("a", "b"):
        for p in points:
            pid = p["id"]
            last = ab.last[side].get(pid)
            if last is None:
                continue
            samples = ab.samples[side][pid]
            rec = {
                **last,
                "schema": records.RESULT,
                "id": pid,
                "point": p,
                "hardware_class": hardware_class,
                "timestamp": time.time(),
                "status": "ok",
                "error": None,
                "samples_s": samples,
                "session_medians_s": ab.medians[side][pid],
                "stats": summarize(samples, items_per_call=p["batch"]),
                "isolation": f"ab side {side}",
            }
            rec["interference"] = None  # per-round windows are in the rounds, not pooled
            records.check_result(json.loads(json.dumps(rec, default=json_default)))
            atomic_write_text(
                run_dir / side / "points" / f"{pid}.json",
                json.dumps(rec, indent=1, default=json_default),
            )
    atomic_write_text(
        run_dir / "ab.json",
        json.dumps({"schema": "perfsuite.ab/1", "verdicts": [v.as_dict() for v in verdicts]},
                   indent=1),
    )  # fmt: skip
