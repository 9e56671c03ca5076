"""An independent reference for perfsuite's inference figures: one point measured in a fresh
process with a plain loop over the framework's own API. perfsuite only builds the model file
(setup); nothing of perfsuite is on the timed path.

    python tools/reference_harness.py --framework onnxruntime --precision fp32 --threads 2
    python tools/reference_harness.py --compare perf-results/<run>   # every resnet50 point
                                                                     # with threads <= cores
    python tools/reference_harness.py --interleave perf-results/<run> --rounds 3
        # the same points, harness and perfsuite's measurement alternating, fresh processes
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


def session(framework: str, path: str, precision: str, threads: int):
    if framework == "onnxruntime":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        name, outs = sess.get_inputs()[0].name, [o.name for o in sess.get_outputs()]
        return lambda x: sess.run(outs, {name: x})
    import openvino as ov

    compiled = ov.Core().compile_model(
        path,
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
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
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


def _points(run_dir: Path):
    """The run's ResNet-50 records this host can reproduce (threads <= CPUs, batch 1)."""
    for path in sorted((run_dir / "points").glob("resnet50-*.json")):
        rec = json.loads(path.read_text())
        p = rec["point"]
        if rec["status"] == "ok" and p["threads"] <= os.cpu_count() and p["batch"] == 1:
            yield rec


def _harness(point: dict, seconds: float) -> float:
    """items/s of ``point`` measured by this script in a fresh process."""
    cmd = [sys.executable, __file__, "--framework", point["framework"]]
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
    print(json.dumps(measure(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
