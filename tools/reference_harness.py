"""An independent reference for perfsuite's inference figures: one point measured in a fresh
process with a plain loop over the framework's own API. perfsuite only builds the model file
(setup); nothing of perfsuite is on the timed path.

    python tools/reference_harness.py --framework onnxruntime --precision fp32 --threads 2
    python tools/reference_harness.py --compare perf-results/<run>   # every resnet50 point
                                                                     # with threads <= cores
    python tools/reference_harness.py --interleave perf-results/<run> --rounds 3
        # the same points, harness and perfsuite's measurement alternating, fresh processes
    python tools/reference_harness.py --turns perf-results/<run> --rounds 3
        # the same points, call by call: this script's loop and perfsuite's timed path
        # (perfsuite.execute.turns) open side by side and take turns of about one call
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def model_file(model: str, precision: str, framework: str) -> str:
    from perfsuite.prepare import models, quantize

    prec = "fp32" if precision == "bf16" else precision
    return str(quantize.prepare(models.get(model), prec, framework).path)


def batch_of_one(model: str) -> np.ndarray:
    from perfsuite.prepare import models

    shape = (1, *models.get(model).image[1])  # the zoo's one float input
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def session(framework: str, path: str, precision: str, threads: int, turns: bool = False):
    if framework == "onnxruntime":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        if turns:  # as perfsuite's turn worker: no spinning on into the other's turn
            so.add_session_config_entry("session.force_spinning_stop", "1")
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        name, outs = sess.get_inputs()[0].name, [o.name for o in sess.get_outputs()]
        return lambda x: sess.run(outs, {name: x})
    import openvino as ov

    core = ov.Core()
    model = core.read_model(path)
    # The files have a dynamic batch ("N"); the CPU plugin runs dynamic shapes slower, and
    # OpenVINO's own guidance is a static shape for latency: batch 1 here.
    model.reshape(
        {
            i.get_any_name(): [1] + [d.get_length() for d in list(i.get_partial_shape())[1:]]
            for i in model.inputs
        }  # fmt: skip
    )
    compiled = core.compile_model(
        model,
        "CPU",
        {
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_NUM_THREADS": threads,
            "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32",
        },
    )
    request = compiled.create_infer_request()
    return lambda x: request.infer([x])


def measure(args) -> dict:
    call = session(
        args.framework,
        model_file(args.model, args.precision, args.framework),
        args.precision,
        args.threads,
    )
    x = batch_of_one(args.model)
    end = time.perf_counter() + args.warmup
    while time.perf_counter() < end:
        call(x)
    times = []
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        call(x)
        times.append(time.perf_counter() - t0)
    med = float(np.median(times))
    return {"median_ms": med * 1e3, "items_per_s": 1 / med, "n": len(times)}


def serve(args) -> None:
    """The turn protocol of ``perfsuite.execute.turns`` with this script's plain loop: a
    line ``turn S`` times calls for S seconds (at least one), ``stop`` ends."""
    call = session(
        args.framework,
        model_file(args.model, args.precision, args.framework),
        args.precision,
        args.threads,
        turns=True,
    )
    x = batch_of_one(args.model)
    end = time.perf_counter() + args.warmup
    while time.perf_counter() < end:
        call(x)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd != "turn":
            print(json.dumps({}), flush=True)
            return
        times, end = [], time.perf_counter() + float(arg)
        while not times or time.perf_counter() < end:
            t0 = time.perf_counter()
            call(x)
            times.append(time.perf_counter() - t0)
        print(json.dumps({"samples_s": times}), flush=True)


class _Worker:
    """A process speaking the turn protocol: a request line in, a JSON line out."""

    def __init__(self, cmd: list[str]):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)  # fmt: skip

    def ask(self, request: str | None) -> dict:
        if request is not None:
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.proc.args[:4]} ended without an answer")
        return json.loads(line)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _turn_round(point: dict, r: int, turns: int, turn_s: float) -> float:
    """One round: both processes opened one after the other (which first alternates with
    ``r``), one untimed turn each, then ``turns`` timed turns each, alternating. Returns
    perfsuite's throughput over the harness's: the median over turn pairs of the harness's
    turn median over perfsuite's."""
    protocol = {"min_time": 1.0, "min_samples": 1, "warmup_time": 1.0, "warmup_calls": 3,
                "counters": False, "sessions": 1}  # fmt: skip
    cmds = {
        "suite": [sys.executable, "-m", "perfsuite.execute.turns", json.dumps(point),
                  json.dumps(protocol)],
        "harness": [sys.executable, __file__, "--serve", "--model", point["model"],
                    "--framework", point["framework"], "--precision", point["precision"],
                    "--threads", str(point["threads"])],
    }  # fmt: skip
    order = ["suite", "harness"] if r % 2 == 0 else ["harness", "suite"]
    workers: dict[str, _Worker] = {}
    try:
        for name in order:
            workers[name] = _Worker(cmds[name])
            workers[name].ask(None)
        for name in order:
            workers[name].ask(f"turn {turn_s}")
        medians: dict[str, list[float]] = {"suite": [], "harness": []}
        for t in range(turns):
            for name in order if t % 2 == 0 else order[::-1]:
                got = workers[name].ask(f"turn {turn_s}")["samples_s"]
                medians[name].append(float(np.median(got)))
        pairs = np.asarray(medians["harness"]) / np.asarray(medians["suite"])
        return float(np.exp(np.median(np.log(pairs))))
    finally:
        for w in workers.values():
            w.close()


def in_turns(run_dir: Path, args) -> int:
    """Per point, ``rounds`` rounds of ``_turn_round``; the figure is the median of the
    rounds' ratios. Whole windows in separate processes (``--interleave``) are at the mercy of
    this host's speed, which changes within a second; turns of one call are not."""
    changes = []
    for rec in _points(run_dir):
        ratios = np.asarray([_turn_round(rec["point"], r, args.turns_n, args.turn_time)
                             for r in range(args.rounds)])  # fmt: skip
        changes.append(float(np.median(ratios)) - 1)
        print(f"{rec['id']:<50} perfsuite/harness {changes[-1]:+6.1%}  "
              f"(per round {', '.join(f'{x - 1:+.1%}' for x in ratios)})", flush=True)  # fmt: skip
    return _summary(changes, " (call by call)")


def _points(run_dir: Path):
    """The run's ResNet-50 records this host can reproduce (threads <= CPUs, batch 1)."""
    for path in sorted((run_dir / "points").glob("resnet50-*.json")):
        rec = json.loads(path.read_text())
        p = rec["point"]
        if rec["status"] == "ok" and p["threads"] <= os.cpu_count() and p["batch"] == 1:
            yield rec


def _harness(point: dict, seconds: float) -> float:
    """items/s of ``point`` measured by this script in a fresh process."""
    cmd = [sys.executable, __file__, "--model", point["model"], "--framework", point["framework"]]
    cmd += ["--precision", point["precision"], "--threads", str(point["threads"])]
    cmd += ["--seconds", str(seconds)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["items_per_s"]


def _summary(changes: list[float], how: str) -> int:
    within = sum(abs(x) <= 0.05 for x in changes)
    print(f"{within} of {len(changes)} points within +-5% of the harness{how}")
    return 0


def compare(run_dir: Path, args) -> int:
    changes = []
    for rec in _points(run_dir):
        ours, ref = rec["stats"]["throughput_ips"], _harness(rec["point"], args.seconds)
        changes.append(ours / ref - 1)
        print(f"{rec['id']:<50} suite {ours:8.2f}  harness {ref:8.2f}  {changes[-1]:+6.1%}",
              flush=True)  # fmt: skip
    return _summary(changes, "")


SUITE = """
import json, sys
from perfsuite.execute.runner import run_point
point, seconds = json.loads(sys.argv[1]), float(sys.argv[2])
protocol = {"min_time": seconds, "min_samples": 15, "warmup_time": 1.0, "warmup_calls": 3,
            "counters": False, "sessions": 1}
print(json.dumps(run_point(point, protocol)["stats"]))
"""


def _suite(point: dict, seconds: float) -> float:
    """items/s of ``point`` by perfsuite's own measurement code in a fresh process."""
    cmd = [sys.executable, "-c", SUITE, json.dumps(point), str(seconds)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["throughput_ips"]


def interleave(run_dir: Path, args) -> int:
    """Per point, ``rounds`` x (harness and perfsuite's own measurement code, each in a fresh
    process, one right after the other; which goes first alternates): the same minute, the
    same host state. The figure is the median of the per-round ratios."""
    changes = []
    for rec in _points(run_dir):
        p = rec["point"]
        ref, ours = [], []
        for r in range(args.rounds):
            if r % 2 == 0:
                ref.append(_harness(p, args.seconds))
                ours.append(_suite(p, args.seconds))
            else:
                ours.append(_suite(p, args.seconds))
                ref.append(_harness(p, args.seconds))
        ratios = np.asarray(ours) / np.asarray(ref)
        changes.append(float(np.median(ratios)) - 1)
        print(f"{rec['id']:<50} perfsuite {np.median(ours):8.2f}  harness {np.median(ref):8.2f}"
              f"  {changes[-1]:+6.1%}  (per round {', '.join(f'{x - 1:+.1%}' for x in ratios)})",
              flush=True)  # fmt: skip
    return _summary(changes, " (interleaved)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", type=Path, help="a perfsuite run directory")
    ap.add_argument("--interleave", type=Path, help="a run directory: its points, interleaved")
    ap.add_argument("--turns", type=Path, help="a run directory: its points, call by call")
    ap.add_argument("--turns-n", type=int, default=24, help="timed turns per side and round")
    ap.add_argument("--turn-time", type=float, default=0.01, help="seconds per turn")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--framework", default="onnxruntime")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    args = ap.parse_args()
    if args.compare:
        return compare(args.compare, args)
    if args.interleave:
        return interleave(args.interleave, args)
    if args.turns:
        return in_turns(args.turns, args)
    if args.serve:
        serve(args)
        return 0
    print(json.dumps(measure(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
