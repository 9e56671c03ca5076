"""Relative runs (``perfsuite ab``): the same points from two environments, A then B, round
after round, each measurement in a fresh process of that environment's interpreter, on the
same machine in the same minutes; B is judged against A on the per-round ratios
(``perfsuite.gate.paired``). Two venvs with different onnxruntime or openvino versions, two
builds of the kernels, or one interpreter with a different environment (``--b-env``).

Each side is an ``interpreter`` executor (``perfsuite.execute.interpreter``), so the
framework versions, the kernels and the Python are that side's own.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perfsuite import records
from perfsuite.execute.executors import get_executor
from perfsuite.execute.interpreter import Interpreter
from perfsuite.execute.isolation import WorkerError
from perfsuite.execute.measure import summarize
from perfsuite.gate.paired import judge_ratios
from perfsuite.prepare import models
from perfsuite.records import MeasureProtocol, Point
from perfsuite.store.files import SUMMARY
from perfsuite.sweep.session import run_summary
from perfsuite.writing import write_json


@dataclass(frozen=True)
class Arm:
    """One arm of an A/B comparison: an interpreter and its environment (the gate's
    ``Side`` is the samples one arm produced)."""

    name: str  # "a" | "b"
    python: str
    env: dict = field(default_factory=dict)

    def describe(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.env.items())
        return self.python + (f" ({extra})" if extra else "")

    def executor(self, timeout: float) -> Interpreter:
        return get_executor("interpreter", timeout=timeout, python=self.python, env=self.env,
                            label=f"side {self.name}")  # fmt: skip


@dataclass(frozen=True)
class Measured:
    """One side's measurement of a point in a round, and that side's framework versions."""

    measurement: records.Measurement
    software: dict


def measure(side: Arm, point: Point, protocol: MeasureProtocol, timeout: float) -> Measured:
    """One fresh process of ``side`` measuring ``point``."""
    with side.executor(timeout) as executor:
        return Measured(executor.run(point, protocol), executor.software)


def measure_turns(a: Arm, b: Arm, point: Point, protocol: MeasureProtocol, turns: int,
                  turn_s: float,
                  r: int, timeout: float) -> dict[str, Measured]:  # fmt: skip
    """One call-interleaved round: a fresh worker per side, both opened and warmed up (one
    after the other, so neither warms up beside the other), one untimed turn each (the
    other's set-up left the caches cold), then ``turns`` timed turns each, the side that
    goes first alternating. Returns ``{side: result}``; each result's protocol has the
    median of every turn (``turn_medians_s``), which ``round_ratio`` pairs. Short turns pair
    best: the host changes speed within fractions of a second
    (docs/measurements/2026-12-03-zen3-ab.md)."""
    order = (a, b) if r % 2 == 0 else (b, a)
    setup: dict[str, float] = {}
    with ExitStack() as opened:  # closing a side's executor ends its turn worker
        workers = {}
        for side in order:
            executor = opened.enter_context(side.executor(timeout))
            workers[side.name] = executor.turns(point, protocol)
            setup[side.name] = workers[side.name].ask(None).setup_s
        for side in order:
            workers[side.name].ask(f"turn {turn_s}")
        samples: dict[str, list[float]] = {"a": [], "b": []}
        medians: dict[str, list[float]] = {"a": [], "b": []}
        for t in range(turns):
            for side in order if t % 2 == 0 else order[::-1]:
                got = workers[side.name].ask(f"turn {turn_s}").samples_s
                samples[side.name] += got
                medians[side.name].append(float(np.median(got)))
        out = {}
        for name, w in workers.items():
            final = w.ask("stop")  # the worker's JSON: settings, binding, software, model
            how = records.RunProtocol(turns=turns, turn_s=turn_s, turn_medians_s=medians[name])
            measured = records.Measurement(
                samples_s=samples[name], setup_s=setup[name], settings=final.settings,
                binding=final.binding, model=final.model, protocol=how,
            )  # fmt: skip
            out[name] = Measured(measured, final.software)
        return out


def round_ratio(a: records.Measurement, b: records.Measurement) -> float:
    """B / A of one round. In turns: the median over turn pairs of B's turn median over A's,
    each pair timed within a second of each other (not the medians of the pooled calls, which
    a change of speed mid-round splits: docs/measurements/2026-12-03-zen3-ab.md). Whole
    windows: the ratio of the two windows' medians."""
    ta, tb = (x.protocol.turn_medians_s for x in (a, b))
    if ta and tb:
        return float(np.exp(np.median(np.log(np.asarray(tb) / np.asarray(ta)))))
    return float(np.median(b.samples_s) / np.median(a.samples_s))


@dataclass
class AbRun:
    samples: dict = field(default_factory=lambda: {"a": {}, "b": {}})  # side -> id -> [s]
    medians: dict = field(default_factory=lambda: {"a": {}, "b": {}})  # side -> id -> [per round]
    ratios: dict = field(default_factory=dict)  # id -> [B / A per round]
    last: dict = field(default_factory=lambda: {"a": {}, "b": {}})  # side -> id -> Measured
    errors: dict = field(default_factory=dict)


def run(points: list[Point], protocol: MeasureProtocol, a: Arm, b: Arm, rounds: int, *,
        timeout: float, progress=None, out: AbRun | None = None, start: int = 0,
        turns: int = 0, turn_s: float = 0.01) -> AbRun:  # fmt: skip
    """Rounds ``start`` .. ``rounds - 1``, each measuring every point on both sides, into
    ``out`` (a new run by default). A point that fails on either side is an error for that
    point and is not measured again.

    With ``turns``, a round is ``measure_turns``; without, each side measures its whole window
    in its own process. Either way the side that goes first alternates from round to round:
    with a fixed order, whatever drifts within a round (a neighbour starting, the clock
    settling) would land on one side every time and read as a difference between them."""
    out = out or AbRun()
    for r in range(start, rounds):
        for p in points:
            if p.id in out.errors:
                continue
            spec = models.declared(p.model)  # set only for a file: an older B reads the rest
            how = protocol.model_copy(update={"model": spec}) if spec else protocol
            try:
                if turns:
                    got = measure_turns(a, b, p, how, turns, turn_s, r, timeout)
                else:
                    got = {s.name: measure(s, p, how, timeout)
                           for s in ((a, b) if r % 2 == 0 else (b, a))}  # fmt: skip
            except WorkerError as exc:
                out.errors[p.id] = str(exc)
                continue
            for name, res in got.items():
                samples = res.measurement.samples_s
                out.samples[name].setdefault(p.id, []).extend(samples)
                out.medians[name].setdefault(p.id, []).append(float(np.median(samples)))
                out.last[name][p.id] = res
            ratio = round_ratio(got["a"].measurement, got["b"].measurement)
            out.ratios.setdefault(p.id, []).append(ratio)
            if progress:
                progress(r, p.id)
    return out


def run_sequential(points: list[Point], protocol: MeasureProtocol, a: Arm, b: Arm, plan,
                   cfg, *,
                   timeout: float, progress=None, on_look=None, turns: int = 0,
                   turn_s: float = 0.01) -> tuple[AbRun, list]:  # fmt: skip
    """Rounds in the groups of ``plan`` (``gate.paired.looks``), judged after each group;
    only the points not yet decided are measured in the next. Returns the run and the
    final verdicts."""
    out, settled, done, verdicts = AbRun(), {}, 0, []
    last = len(plan.rounds)
    for k, (upto, alpha) in enumerate(zip(plan.rounds, plan.alphas, strict=True), start=1):
        active = [p for p in points if p.id not in settled]
        run(active, protocol, a, b, upto, timeout=timeout, progress=progress, out=out,
            start=done, turns=turns, turn_s=turn_s)  # fmt: skip
        done = upto
        verdicts = judge_ratios(out.ratios, cfg, out.errors, alpha=alpha, look=k,
                                final=k == last, settled=settled)  # fmt: skip
        settled = {v.id: v for v in verdicts if v.verdict != "pending"}
        if on_look:
            on_look(k, upto, alpha, verdicts)
        if len(settled) == len(verdicts):
            break
    return out, verdicts


def write(
    run_dir: Path, ab: AbRun, points: list[Point], fp: records.Fingerprint, profile: dict, verdicts
) -> None:
    """An ordinary run directory for each side (``<run>/a``, ``<run>/b``: summary.json and
    points/, every round's samples pooled, the round medians as session medians), so that
    ``export``, ``compare`` and ``db import`` take them, and ``ab.json`` with the verdicts."""
    for side in ("a", "b"):
        results = []
        for p in points:
            last = ab.last[side].get(p.id)
            if last is None:
                continue
            samples = ab.samples[side][p.id]
            pooled = last.measurement.model_copy(update={
                "samples_s": samples,
                "session_medians_s": ab.medians[side][p.id],
                "stats": records.Stats(**summarize(samples, items_per_call=p.batch)),
                "isolation": f"ab side {side}",
                "interference": None,  # per-round windows are in the rounds, not pooled
            })  # fmt: skip
            result = records.Result.model_validate({
                **records.dump(pooled), "schema": records.RESULT, "id": p.id, "point": p,
                "software": last.software,
                "hardware_class": fp.hardware_class, "timestamp": time.time(), "status": "ok",
                "error": None,
            })  # fmt: skip
            results.append(result)
            write_json(run_dir / side / "points" / f"{p.id}.json", records.dump(result))
        if results:
            summary = run_summary(profile, fp, results)
            write_json(run_dir / side / SUMMARY, records.dump(summary))
    judged = [v.model_dump(mode="json", exclude_none=True) for v in verdicts]
    write_json(run_dir / "ab.json", {"schema": "perfsuite.ab/1",
               "order": "A first in even rounds, B first in odd", "verdicts": judged})  # fmt: skip
