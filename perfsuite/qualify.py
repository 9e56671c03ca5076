"""Hardware qualification of a server against its SKU's reference: PASS / WARN / FAIL checks.

Checks are pure functions of (fingerprint fields, measurements, reference), so they are tested
with injected measurements on fixture topologies; ``measure`` takes the real measurements
(per-node STREAM triad in a worker bound to the node, FMA peak per core and on all cores,
GEMM efficiency against that peak, repeat stability).
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

REFERENCE_SCHEMA = "perfsuite.reference/1"
STATUSES = ("PASS", "WARN", "FAIL", "SKIP")


class QualifyError(ValueError):
    """A reference that cannot apply to this host, or one that is malformed."""


@dataclass(frozen=True)
class Check:
    group: str
    name: str
    status: str
    measured: object
    expected: object
    detail: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def shipped_references() -> dict[str, Path]:
    root = importlib.resources.files("perfsuite").joinpath("references")
    return {p.name: Path(str(p)) for p in root.iterdir() if p.name.endswith(".json")}


def load_reference(path: Path | None, hardware_class: str) -> dict:
    if path is None:
        for p in shipped_references().values():
            ref = json.loads(p.read_text())
            if ref.get("hardware_class") == hardware_class:
                return ref
        raise QualifyError(
            f"no shipped reference for hardware class {hardware_class}; pass "
            f"--reference FILE (shipped: {', '.join(sorted(shipped_references()))})"
        )
    try:
        ref = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise QualifyError(f"reference {path} is unreadable: {exc}") from None
    if ref.get("schema") != REFERENCE_SCHEMA:
        raise QualifyError(
            f"reference {path}: schema {ref.get('schema')!r}, expected {REFERENCE_SCHEMA!r}"
        )
    return ref


def check_sku(fields: dict, ref: dict) -> None:
    """A reference for another vendor or microarchitecture is a usage error, not a FAIL."""
    topo = ref.get("topology", {})
    for key in ("cpu.vendor", "cpu.microarchitecture"):
        if key in topo and fields.get(key) != topo[key]:
            raise QualifyError(
                f"reference '{ref.get('sku')}' is for {key} = {topo[key]}; this "
                f"host has {fields.get(key)}: choose the reference of its SKU"
            )


def check_topology(fields: dict, ref: dict) -> list[Check]:
    out = []
    for key, want in ref.get("topology", {}).items():
        got = fields.get(key)
        out.append(Check("topology", key, "PASS" if got == want else "FAIL", got, want))
    want_gib = ref.get("memory_total_gib_min")
    if want_gib is not None:
        got = (fields.get("memory.total_bytes") or 0) / 2**30
        out.append(
            Check(
                "topology",
                "memory.total_gib",
                "PASS" if got >= want_gib else "FAIL",
                round(got, 1),
                f">= {want_gib}",
            )
        )
    return out


def _graded(value: float, expected: float, warn: float, fail: float) -> str:
    ratio = value / expected if expected else 0.0
    return "PASS" if ratio >= warn else ("WARN" if ratio >= fail else "FAIL")


def check_bandwidth(per_node_gbs: dict[int, float], ref: dict) -> list[Check]:
    spec = ref["bandwidth_gbs_per_node"]
    out = [
        Check(
            "bandwidth",
            f"node{n} triad GB/s",
            _graded(v, spec["expected"], spec["warn_below"], spec["fail_below"]),
            round(v, 1),
            spec["expected"],
            f"{v / spec['expected']:.0%} of the reference",
        )
        for n, v in sorted(per_node_gbs.items())
    ]
    if len(per_node_gbs) > 1:
        best = max(per_node_gbs.values())
        limit = ref.get("node_symmetry_max_spread", 0.15)
        slow = {n: v for n, v in per_node_gbs.items() if v < best * (1 - limit)}
        detail = ", ".join(
            f"node{n} at {v / best:.0%} of the fastest node" for n, v in slow.items()
        )
        out.append(
            Check(
                "bandwidth",
                "node symmetry",
                "FAIL" if slow else "PASS",
                {f"node{n}": round(v, 1) for n, v in sorted(per_node_gbs.items())},
                f"all within {limit:.0%} of the fastest",
                detail or "all nodes within the limit (a DIMM missing shows up here)",
            )
        )
    return out


def check_compute(
    peak_per_core: float, all_core_per_core: float, gemm_eff: float, ref: dict
) -> list[Check]:
    spec = ref["fma_gflops_per_core"]
    out = [
        Check(
            "compute",
            "FMA GFLOP/s, one core",
            _graded(peak_per_core, spec["expected"], spec["warn_below"], spec["fail_below"]),
            round(peak_per_core, 1),
            spec["expected"],
        ),
        Check(
            "compute",
            "FMA GFLOP/s per core, all cores busy",
            _graded(all_core_per_core, spec["expected"], spec["warn_below"], spec["fail_below"]),
            round(all_core_per_core, 1),
            spec["expected"],
            "every core reaches the expected clock"
            if all_core_per_core >= peak_per_core * 0.9
            else "all-core rate well below the single-core rate: clock drops under load",
        ),
    ]
    want = ref.get("gemm_efficiency_min", 0.5)
    out.append(
        Check(
            "compute",
            "GEMM efficiency (gemm_f32 n=1024 / FMA peak)",
            "PASS" if gemm_eff >= want else "WARN",
            round(gemm_eff, 2),
            f">= {want}",
        )
    )
    return out


def check_stability(repeats: list[float], ref: dict) -> list[Check]:
    a = np.asarray(repeats, float)
    cv = float(a.std(ddof=1) / a.mean()) if a.size > 1 else 0.0
    limit = ref.get("stability_max_cv", 0.05)
    return [
        Check(
            "stability",
            "FMA peak across repeats (CV)",
            "PASS" if cv <= limit else "WARN",
            round(cv, 4),
            f"<= {limit}",
            f"{a.size} repeats, min {a.min():.1f} max {a.max():.1f} GFLOP/s",
        )
    ]


def check_settings(fields: dict, ref: dict) -> list[Check]:
    out = []
    for key, want in ref.get("settings", {}).items():
        got = fields.get(key)
        if got is None:
            out.append(Check("settings", key, "SKIP", None, want, "not readable on this host"))
        else:
            out.append(
                Check(
                    "settings",
                    key,
                    "PASS" if got == want else "WARN",
                    got,
                    want,
                    "" if got == want else f"recommended: {want}",
                )
            )
    return out


_SWEEP_TEST = """
def test_sweep(perf_point, perf_run):
    perf_run(perf_point)
"""


def run_inference(
    out_dir: Path, baselines: Path, profile: str = "qualification", timeout: float = 3600
) -> dict:
    """Run the inference sweep of ``profile`` (pytest + the perfsuite plugin, in a scratch
    directory) gated against ``baselines``; return what the gate said."""
    import subprocess
    import sys

    out_dir = Path(out_dir).resolve()
    work = out_dir / "sweep"
    work.mkdir(parents=True, exist_ok=True)
    (work / "test_qualification_sweep.py").write_text(_SWEEP_TEST)
    results = work / "results"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        str(work),
        "--benchmark-only",
        "--perf-profile",
        profile,
        "--perf-fail-on",
        "regression",
        "--perf-baseline",
        str(Path(baselines).resolve()),
        "--perf-out",
        str(results),
        "--rootdir",
        str(work),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=work)
    runs = sorted(results.glob("*"))
    junit = runs[-1] / "gate-junit.xml" if runs else None
    tail = proc.stdout.strip().splitlines()[-1:] or [""]
    info = {
        "returncode": proc.returncode,
        "summary": tail[0],
        "run_dir": str(runs[-1]) if runs else None,
        "gate": None,
    }
    if junit is not None and junit.exists():
        from xml.etree import ElementTree as ET

        suite = ET.parse(junit).getroot()
        info["gate"] = {
            "points": int(suite.get("tests", 0)),
            "failures": int(suite.get("failures", 0)),
        }
    return info


def check_inference(info: dict | None) -> list[Check]:
    if info is None:
        return [
            Check(
                "inference",
                "qualification sweep vs the SKU baseline",
                "SKIP",
                None,
                None,
                "not run (perfsuite qualify --inference runs it)",
            )
        ]
    gate = info.get("gate")
    if info["returncode"] not in (0, 1):
        return [
            Check(
                "inference",
                "qualification sweep",
                "FAIL",
                info["summary"],
                "completes",
                "the sweep itself failed; see " + str(info["run_dir"]),
            )
        ]
    if gate is None:
        return [
            Check(
                "inference",
                "qualification sweep vs the SKU baseline",
                "WARN",
                info["summary"],
                "a baseline",
                "no baseline for this class/profile: measured but not judged",
            )
        ]
    status = "FAIL" if gate["failures"] or info["returncode"] == 1 else "PASS"
    return [
        Check(
            "inference",
            "qualification sweep vs the SKU baseline",
            status,
            f"{gate['failures']} of {gate['points']} points failing",
            "0 failing",
            f"gate reports in {info['run_dir']}",
        )
    ]


def evaluate(fields: dict, measurements: dict, ref: dict) -> list[Check]:
    check_sku(fields, ref)
    checks = check_topology(fields, ref)
    checks += check_bandwidth(measurements["bandwidth_gbs"], ref)
    checks += check_compute(
        measurements["fma_per_core"],
        measurements["fma_all_cores_per_core"],
        measurements["gemm_efficiency"],
        ref,
    )
    checks += check_stability(measurements["fma_repeats"], ref)
    checks += check_settings(fields, ref)
    checks += check_inference(measurements.get("inference"))
    return checks


def verdict(checks: list[Check]) -> str:
    statuses = {c.status for c in checks}
    return "FAIL" if "FAIL" in statuses else ("WARN" if "WARN" in statuses else "PASS")


# -- measuring the real host ------------------------------------------------------------------


def _triad_best(n: int, threads: int, repeats: int) -> float:
    from perfsuite import kernels

    a = kernels.aligned_zeros(n)  # first touch inside the bound worker: memory on its node
    b = kernels.aligned_zeros(n) + 1
    c = kernels.aligned_zeros(n) + 2
    return max(kernels.stream_triad(a, b, c, 3.0, threads)["bandwidth_gbs"] for _ in range(repeats))


def measure(topo, *, quick: bool = False, mechanism: str = "auto") -> dict:
    import time

    from perfsuite import kernels, placement
    from perfsuite.bound import run_bound

    n = 1 << (22 if quick else 25)
    bandwidth = {}
    for p in placement.shards(topo, "node"):
        node_id = p.mem_nodes[0]
        out = run_bound(
            _triad_best, n, len(p.cpus), 3 if quick else 5, placement=p, mechanism=mechanism
        )
        bandwidth[node_id] = out["result"]
    seconds = 0.05 if quick else 0.3
    repeats = [kernels.compute_peak(1, seconds)["gflops"] for _ in range(3 if quick else 5)]
    cores = topo.physical_cores or 1
    # best of 3: a single all-core reading on a shared host can lose a core to a neighbour
    all_cores = (
        max(kernels.compute_peak(len(topo.online or [0]), seconds)["gflops"] for _ in range(3))
        / cores
    )
    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    kernels.gemm_f32(a, a)
    t0 = time.perf_counter()
    kernels.gemm_f32(a, a)
    gemm = 2 * 1024**3 / (time.perf_counter() - t0) / 1e9
    return {
        "bandwidth_gbs": bandwidth,
        "fma_per_core": max(repeats),
        "fma_all_cores_per_core": all_cores,
        "gemm_efficiency": gemm / max(repeats),
        "fma_repeats": repeats,
    }


def html(checks: list[Check], title: str) -> str:
    import html as h

    colour = {"PASS": "#dfd", "WARN": "#ffd", "FAIL": "#fdd", "SKIP": "#eee"}
    rows = "".join(
        f"<tr style='background:{colour[c.status]}'><td>{c.status}</td><td>{h.escape(c.group)}"
        f"</td><td>{h.escape(c.name)}</td><td>{h.escape(str(c.measured))}</td>"
        f"<td>{h.escape(str(c.expected))}</td><td>{h.escape(c.detail)}</td></tr>"
        for c in checks
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{h.escape(title)}</title>"
        "<style>body{font-family:sans-serif}td,th{padding:2px 8px}</style></head><body>"
        f"<h1>{h.escape(title)}: {verdict(checks)}</h1><table><tr><th>status</th>"
        "<th>group</th><th>check</th><th>measured</th><th>expected</th><th>detail</th></tr>"
        f"{rows}</table></body></html>"
    )
