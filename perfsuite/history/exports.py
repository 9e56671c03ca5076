"""A run in the formats of the dashboards teams already read:

- ``github-action-benchmark``: its ``customSmallerIsBetter`` list (latency p50 per point, ms)
  or, with ``measure="throughput"``, ``customBiggerIsBetter`` (items/s);
- ``bmf``: Bencher Metric Format, ``{benchmark: {measure: {value, lower_value,
  upper_value}}}`` with the ``latency`` (ns, p50 within [min, p90]) and ``throughput``
  (items/s) measures;
- ``conbench``: one Conbench BenchmarkResult per point (``stats.data`` the latency samples
  in seconds), with the run's commit as its ``github`` object when it has one.

The consumers' schemas, written from their documentation, are in tests/data/export_schemas/.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math

from perfsuite.records import Provenance, Result, Run

FORMATS = ("github-action-benchmark", "bmf", "conbench")
MEASURES = ("latency", "throughput")
TAGS = ("model", "framework", "precision", "threads", "batch", "mode")  # Conbench tags, as text


def _ok(run: Run) -> list[Result]:
    return sorted((r for r in run.results if r.ok and r.stats), key=lambda r: r.id)


def github_action_benchmark(run: Run, measure: str = "latency") -> list[dict]:
    out = []
    for r in _ok(run):
        s = r.stats
        if measure == "latency":  # spread: half the IQR around the median
            entry = {"name": r.id, "unit": "ms", "value": s.latency_p50_ms}
            entry["range"] = f"± {s.iqr_ms / 2:.4g}"
        else:
            entry = {"name": r.id, "unit": "items/s", "value": s.throughput_ips}
        entry["extra"] = f"n={s.n} cv={s.cv:.4f} class={r.hardware_class}"
        out.append(entry)
    return out


def bmf(run: Run) -> dict:
    return {
        r.id: {
            "latency": {
                "value": r.stats.latency_p50_ms * 1e6,
                "lower_value": r.stats.latency_min_ms * 1e6,
                "upper_value": r.stats.latency_p90_ms * 1e6,
            },
            "throughput": {"value": r.stats.throughput_ips},
        }
        for r in _ok(run)
    }


class ExportError(ValueError):
    """A run that the format cannot hold; the message names the field."""


def _machine_info(fields: dict) -> dict:
    def num(key: str, scale: float = 1) -> int:
        value = fields.get(key) or 0  # Conbench wants a number; 0 when not readable
        try:
            number = float(value) * scale
        except (TypeError, ValueError):
            raise ExportError(f"fingerprint field {key!r} is {value!r}, not a number") from None
        if not math.isfinite(number) or not 0 <= number < 2**63:
            raise ExportError(f"fingerprint field {key!r} is {value!r}, out of range")
        return int(number)

    return {
        "name": str(fields.get("os.hostname") or "unknown"),
        "architecture_name": "x86_64",
        "kernel_name": str(fields.get("os.kernel") or "unknown"),
        "os_name": "Linux",
        "os_version": str(fields.get("os.kernel") or "unknown"),
        "cpu_model_name": str(fields.get("cpu.model_name") or "unknown"),
        **{f"cpu_{c}_cache_bytes": num(f"cache.{c}_bytes") for c in ("l1d", "l1i", "l2", "l3")},
        "cpu_core_count": num("cpu.physical_cores"),
        "cpu_thread_count": num("cpu.online_count"),
        "cpu_frequency_max_hz": num("freq.max_mhz", 1e6),
        "memory_bytes": num("memory.total_bytes"),
    }


def _github(source: Provenance | None) -> dict | None:
    if source is None or not source.commit or not source.repository:
        return None
    repo = source.repository.removesuffix(".git")
    if repo.startswith("git@github.com:"):
        repo = "https://github.com/" + repo.removeprefix("git@github.com:")
    if not repo.startswith("https://github.com/"):
        return None  # Conbench takes GitHub repositories only
    return {"commit": source.commit, "repository": repo}


def conbench(run: Run) -> list[dict]:
    summary = run.summary
    started = dt.datetime.fromtimestamp(min(r.timestamp for r in run.results), dt.UTC)
    run_id = hashlib.sha256(f"{run.source}|{started.isoformat()}".encode()).hexdigest()[:32]
    profile = summary.profile_name or "unknown"
    out = []
    for r in _ok(run):
        p = r.point
        result = {
            "run_id": run_id,
            "run_reason": "commit" if summary.source and summary.source.commit else "test",
            "batch_id": f"{run_id}-{profile}",
            "timestamp": dt.datetime.fromtimestamp(r.timestamp, dt.UTC).isoformat(),
            # iterations per sample: each is one timed call
            "stats": {"data": list(r.samples_s), "unit": "s", "iterations": 1},
            "tags": {
                "name": r.id,
                **{k: str(getattr(p, k)) for k in TAGS},
                "numa_node": "any" if p.numa_node is None else str(p.numa_node),
            },
            "context": {"benchmark_language": "Python", "profile": profile},
            "info": {k: v for k, v in r.software.items() if v is not None},
            "machine_info": _machine_info(summary.fingerprint.fields),
        }
        if github := _github(r.source or summary.source):
            result["github"] = github
        out.append(result)
    return out


def export(run: Run, fmt: str, measure: str = "latency"):
    """The JSON document of ``run`` in ``fmt`` (one of FORMATS)."""
    if fmt == "github-action-benchmark":
        return github_action_benchmark(run, measure)
    if fmt == "bmf":
        return bmf(run)
    if fmt == "conbench":
        return conbench(run)
    raise ValueError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
