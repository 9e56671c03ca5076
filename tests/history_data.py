"""Synthetic run directories for the results-history tests and tools/history_bench.py: valid
perfsuite.result/2 records whose medians follow a given series, in the run-directory layout
the plugin writes (summary.json + points/<id>.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from perfsuite.execute.measure import summarize

DAY = 86400.0
T0 = 1.79e9  # 2026-09


def host_fingerprint(host: str = "vm", hardware_class: str = "amd-zen4-2c-1n"):
    """``fingerprint`` as the record the store and the gate take."""
    from perfsuite.records import Fingerprint

    return Fingerprint.model_validate(fingerprint(host, hardware_class))


def fingerprint(host: str = "vm", hardware_class: str = "amd-zen4-2c-1n") -> dict:
    return {
        "hardware_class": hardware_class,
        "fields": {
            "cpu.microarchitecture": "zen4",
            "cpu.physical_cores": 2,
            "os.hostname": host,
            "software.perfsuite": "0.1.0",
        },
        "classes": {
            "cpu.microarchitecture": "must_match",
            "cpu.physical_cores": "must_match",
            "os.hostname": "informational",
            "software.perfsuite": "informational",
        },
    }


def point_id(i: int) -> str:
    return f"m{i:02d}-fw-fp32-t1-unbound-b1"


def record(pid: str, median_s: float, ts: float, rng, n: int = 20, cv: float = 0.01) -> dict:
    samples = median_s * (1 + cv * rng.standard_normal(n))
    samples = np.abs(samples - np.median(samples) + median_s)
    return {
        "schema": "perfsuite.result/2",
        "id": pid,
        "status": "ok",
        "point": {
            "id": pid,
            "model": pid.split("-")[0],
            "framework": "fw",
            "precision": "fp32",
            "threads": 1,
            "numa_node": None,
            "batch": 1,
            "mode": "latency",
        },
        "samples_s": samples.tolist(),
        "stats": summarize(samples),
        "timestamp": ts,
        "software": {"software.perfsuite": "0.1.0"},
        "hardware_class": "amd-zen4-2c-1n",
    }


def write_run(
    root: Path,
    index: int,
    medians: dict[str, float],
    *,
    host: str = "vm",
    seed: int = 0,
    hardware_class: str = "amd-zen4-2c-1n",
) -> Path:
    """Run ``index`` (one a day from T0) with one point per entry of ``medians`` (seconds)."""
    rng = np.random.default_rng(seed * 100003 + index)
    run = Path(root) / f"run-{host}-{index:05d}"
    (run / "points").mkdir(parents=True)
    recs = [
        record(pid, m, T0 + index * DAY + k, rng)
        for k, (pid, m) in enumerate(sorted(medians.items()))
    ]
    for r in recs:
        r["hardware_class"] = hardware_class
        (run / "points" / f"{r['id']}.json").write_text(json.dumps(r))
    summary = {
        "schema": "perfsuite.run/1",
        "profile": {"name": "nightly"},
        "fingerprint": fingerprint(host, hardware_class),
        "points": [{"id": r["id"], "status": "ok"} for r in recs],
    }
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def step_history(
    root: Path,
    runs: int,
    points: int,
    *,
    step_point: int | None = 0,
    step_at: int = 60,
    step: float = 0.15,
    noise: float = 0.01,
    seed: int = 0,
) -> list[Path]:
    """``runs`` nightly runs of ``points`` points; point ``step_point`` gets ``step`` slower
    from run ``step_at`` on; every median has ``noise`` run-to-run CV."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(runs):
        medians = {}
        for p in range(points):
            base = 0.010 * (1 + p / 10)
            if p == step_point and i >= step_at:
                base *= 1 + step
            medians[point_id(p)] = base * (1 + noise * rng.standard_normal())
        out.append(write_run(root, i, medians, seed=seed))
    return out


def qualification(folder: Path, host: str, bandwidth: float, **extra) -> Path:
    """A perfsuite.qualification/1 report of ``host`` (class amd-zen4-2c-1n) in ``folder``;
    ``extra`` overrides measurements (None: leave one out)."""
    fp = fingerprint(host)
    fp["fields"]["os.hostname"] = host
    measurements = {
        "bandwidth_gbs": {"0": bandwidth},
        "fma_per_core": 120.0,
        "fma_all_cores_per_core": 118.0,
        "gemm_efficiency": 0.8,
        "fma_repeats": [120.0],
        "quick": False,
    }
    measurements.update(extra)
    for k in [k for k, v in extra.items() if v is None]:
        del measurements[k]
    report = {
        "schema": "perfsuite.qualification/1",
        "verdict": "PASS",
        "reference": None,
        "fingerprint": fp,
        "measurements": measurements,
        "seconds": 1.0,
        "checks": [],
    }
    path = folder / f"q-{host}.json"
    path.write_text(json.dumps(report))
    return path
