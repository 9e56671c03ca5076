"""perfsuite's OpenVINO figure against OpenVINO's own ``benchmark_app`` (it ships in the
openvino wheel) on the same file, shapes, inputs, precision and threads, in turns within the
same minutes (the host drifts between minutes). Both sides are pinned: benchmark_app's
defaults differ from a latency point's (its ``INFERENCE_PRECISION_HINT`` is bf16 on a CPU
with AVX-512 BF16, and it takes ``-nthreads`` only with ``-hint none``), so each side's
effective settings are reported beside its figure."""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from perfsuite import records
from perfsuite.execute.isolation import WorkerError
from perfsuite.execute.runner import run_point
from perfsuite.prepare import models

OV_TYPES = {"float32": "f32", "float16": "f16", "int64": "i64", "int32": "i32", "uint8": "u8",
            "int8": "i8", "bool": "boolean"}  # fmt: skip
THROUGHPUT = re.compile(r"Throughput:\s+([0-9.]+)\s+FPS")
SETTING = re.compile(r"\[ INFO \]\s+(INFERENCE_PRECISION_HINT|INFERENCE_NUM_THREADS|NUM_STREAMS|"
                     r"PERFORMANCE_HINT): (.+)")  # fmt: skip


@dataclass
class Crosscheck:
    point: str
    perfsuite_ips: list[float] = field(default_factory=list)  # one per turn
    benchmark_app_ips: list[float] = field(default_factory=list)
    perfsuite_settings: dict = field(default_factory=dict)
    benchmark_app_settings: dict = field(default_factory=dict)
    command: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """perfsuite / benchmark_app, of the medians over the turns."""
        return statistics.median(self.perfsuite_ips) / statistics.median(self.benchmark_app_ips)


def benchmark_app_command(path: Path, inputs: dict, threads: int, seconds: int, folder: Path):
    shapes = ",".join(f"{k}[{','.join(map(str, v.shape))}]" for k, v in inputs.items())
    files = []
    for i, (name, array) in enumerate(inputs.items()):
        np.save(folder / f"input{i}.npy", array)
        files.append(f"{name}:{folder / f'input{i}.npy'}")
    # benchmark_app takes a 4D input for an image and feeds it u8 unless told the type
    types = ",".join(f"{k}:{OV_TYPES.get(v.dtype.name, v.dtype.name)}" for k, v in inputs.items())
    exe = shutil.which("benchmark_app")
    if exe is None:
        raise WorkerError("benchmark_app is not on PATH (it comes with the openvino wheel)")
    return [exe, "-m", str(path), "-d", "CPU", "-hint", "none", "-nthreads", str(threads),
            "-nstreams", "1", "-nireq", "1", "-api", "sync", "-infer_precision", "f32",
            "-t", str(seconds), "-shape", shapes, "-i", ",".join(files),
            "-iop", types]  # fmt: skip


def run_benchmark_app(cmd: list[str], timeout: float) -> tuple[float, dict]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise WorkerError(f"benchmark_app did not finish in {timeout:g} s") from None
    found = THROUGHPUT.search(done.stdout)
    if done.returncode != 0 or found is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise WorkerError(f"benchmark_app failed (exit {done.returncode}): {tail[0]}")
    return float(found.group(1)), dict(SETTING.findall(done.stdout))


def crosscheck(
    name: str, threads: int = 1, batch: int = 1, seconds: int = 3, turns: int = 2
) -> Crosscheck:
    """``turns`` of (perfsuite's OpenVINO fp32 latency point, benchmark_app), each
    ``seconds`` long, on model ``name``."""
    model = models.get(name)
    if model.format not in ("onnx", "ir"):
        raise WorkerError(f"{name}: benchmark_app reads ONNX and IR files only")
    point = records.Point(model=name, framework="openvino", precision="fp32", threads=threads,
                          batch=batch, mode="latency")  # fmt: skip
    protocol = records.MeasureProtocol(min_time=seconds, warmup_time=0.5,
                                       model=models.declared(name))  # fmt: skip
    out = Crosscheck(point.id)
    with tempfile.TemporaryDirectory(prefix="perfsuite-crosscheck-") as tmp:
        cmd = benchmark_app_command(model.path, model.inputs(batch), threads, seconds, Path(tmp))
        out.command = cmd
        for turn in range(turns):
            for side in ("ours", "theirs") if turn % 2 == 0 else ("theirs", "ours"):  # no side
                if side == "ours":  # always first in the host's warmer or quieter moment
                    measured = records.Measurement.model_validate(run_point(point, protocol))
                    out.perfsuite_ips.append(measured.stats.throughput_ips)
                    out.perfsuite_settings = dict(measured.settings)
                else:
                    fps, settings = run_benchmark_app(cmd, timeout=seconds * 10 + 120)
                    out.benchmark_app_ips.append(fps)
                    out.benchmark_app_settings = settings
    return out
