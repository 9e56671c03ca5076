"""A run in the formats of the dashboards teams already read:

- ``github-action-benchmark``: its ``customSmallerIsBetter`` list (latency p50 per point in
  ms, and the figures where smaller is better: a stream scenario's latency, TTFT, TPOT) or,
  with ``measure="throughput"``, ``customBiggerIsBetter`` (items/s per point, and the rates:
  a server's VALID scheduled samples/s, tokens/s, the roofline fraction). Each entry's
  ``extra`` says which tool setting it is for and LoadGen's verdict where there is one.
- ``bmf``: Bencher Metric Format, ``{benchmark: {measure: {value, lower_value,
  upper_value}}}``: ``latency`` (ns, p50 within [min, p90]), ``throughput`` (items/s) and
  one measure per figure (its slug, in the figure's unit).
- ``conbench``: Conbench BenchmarkResults: a point's latency samples (``s``), and one result
  per figure whose unit Conbench knows (``s``, ``i/s``); a figure it has no unit for (the
  roofline fraction) is in the results' ``info``. ``github`` is required by Conbench's
  server: without the run's repository and commit the export refuses.

The figures are ``records.Measurement.figures``; an INVALID LoadGen rate is not exported as a
rate (LoadGen itself says it is no result). Kernel benchmarks (``RunSummary.kernels``) are
exported beside the points, one entry per benchmark, under their rate.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from collections.abc import Iterator

from perfsuite.records import Headline, KernelResult, Provenance, Result, Run

FORMATS = ("github-action-benchmark", "bmf", "conbench")
MEASURES = ("latency", "throughput")
TAGS = ("model", "framework", "precision", "threads", "batch", "mode")  # Conbench tags, as text
DIRECTION = {False: "customSmallerIsBetter", True: "customBiggerIsBetter"}


class ExportError(ValueError):
    """A run that the format cannot hold; the message names the field."""


def _ok(run: Run) -> list[Result]:
    return sorted((r for r in run.results if r.ok and r.stats), key=lambda r: r.id)


def _figures(r: Result) -> list[Headline]:
    """The figures a dashboard may plot: INVALID LoadGen rates left out."""
    return [f for f in r.figures if f.valid is not False]


def _verdict(f: Headline) -> str:
    return "" if f.valid is None else (" VALID" if f.valid else " INVALID")


def slug(name: str) -> str:
    """A measure's name as Bencher wants it: lower case, words joined by '-'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def github_action_benchmark(run: Run, measure: str = "latency") -> list[dict]:
    bigger = measure == "throughput"
    tool = DIRECTION[bigger]
    out = []
    for r in _ok(run):
        s = r.stats
        if bigger:
            entry = {"name": r.id, "unit": "items/s", "value": s.throughput_ips}
        else:  # spread: half the IQR around the median
            entry = {"name": r.id, "unit": "ms", "value": s.latency_p50_ms}
            entry["range"] = f"± {s.iqr_ms / 2:.4g}"
        entry["extra"] = f"{tool}; n={s.n} cv={s.cv:.4f} class={r.hardware_class}"
        out.append(entry)
        out += [
            {"name": f"{r.id} {f.name}", "unit": f.unit, "value": f.value,
             "extra": f"{tool};{_verdict(f)} class={r.hardware_class}"}
            for f in _figures(r)
            if f.higher_is_better == bigger
        ]  # fmt: skip
    for k in _kernels(run):
        if k.figure.higher_is_better == bigger:
            out.append({"name": k.id, "unit": k.figure.unit, "value": k.figure.value,
                        "extra": f"{tool}; group={k.group}"})  # fmt: skip
    return out


def bmf(run: Run) -> dict:
    out: dict[str, dict] = {}
    for r in _ok(run):
        s = r.stats
        out[r.id] = {
            "latency": {
                "value": s.latency_p50_ms * 1e6,
                "lower_value": s.latency_min_ms * 1e6,
                "upper_value": s.latency_p90_ms * 1e6,
            },
            "throughput": {"value": s.throughput_ips},
            **{slug(f.name): {"value": f.value} for f in _figures(r)},
        }
    for k in _kernels(run):
        out[k.id] = {slug(k.figure.unit): {"value": k.figure.value}}
    return out


def _kernels(run: Run) -> list[KernelResult]:
    return sorted(run.summary.kernels, key=lambda k: k.id)


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
        # perfsuite measures on CPUs: a host's GPUs play no part in its figures
        "gpu_count": 0,
        "gpu_product_names": [],
    }


NO_GITHUB = (
    "conbench needs the GitHub repository and commit the run measured, and {why}: record them "
    "when measuring (--perf-repository/--perf-commit, or $GITHUB_REPOSITORY/$GITHUB_SHA) or "
    "give them here (--repository/--commit)"
)


def _github(source: Provenance | None) -> dict:
    if source is None or not source.repository or not source.commit:
        missing = "repository" if source is None or not source.repository else "commit"
        raise ExportError(NO_GITHUB.format(why=f"this run has no {missing}"))
    repo = source.repository.removesuffix(".git").rstrip("/")
    if repo.startswith("git@github.com:"):
        repo = "https://github.com/" + repo.removeprefix("git@github.com:")
    if not repo.startswith("https://github.com/"):
        raise ExportError(NO_GITHUB.format(why=f"{repo} is not a https://github.com/ one"))
    return {"commit": source.commit, "repository": repo}


def _conbench_unit(unit: str) -> str | None:
    if unit in ("s", "ns"):
        return unit
    return ("B/s" if unit.endswith("B/s") else "i/s") if unit.endswith("/s") else None


def conbench(run: Run, source: Provenance | None = None) -> list[dict]:
    """One result per point's latency samples and per figure; ``source`` overrides the
    run's provenance (``perfsuite export --repository/--commit``)."""
    summary = run.summary
    source = source or summary.source or _first_source(run)
    github = _github(source)
    started = dt.datetime.fromtimestamp(min(r.timestamp for r in run.results), dt.UTC)
    run_id = hashlib.sha256(f"{run.source}|{started.isoformat()}".encode()).hexdigest()[:32]
    profile = summary.profile_name or "unknown"
    common = {
        "run_id": run_id,
        # "commit" puts a result in Conbench's history: not what an uncommitted tree measured
        "run_reason": "manual" if source.dirty else "commit",
        "batch_id": f"{run_id}-{profile}",
        "context": {"benchmark_language": "Python", "profile": profile},
        "machine_info": _machine_info(summary.fingerprint.fields),
        "github": github,
    }
    out = []
    for r in _ok(run):
        p = r.point
        tags = {
            "name": r.id,
            **{k: str(getattr(p, k)) for k in TAGS},
            "numa_node": "any" if p.numa_node is None else str(p.numa_node),
        }
        info = {k: v for k, v in r.software.items() if v is not None}
        info |= {slug(f.name): f.value for f in _figures(r) if _conbench_unit(f.unit) is None}
        stamp = dt.datetime.fromtimestamp(r.timestamp, dt.UTC).isoformat()
        # iterations per sample: each is one timed call
        stats = {"data": list(r.samples_s), "unit": "s", "iterations": 1}
        out.append(common | {"timestamp": stamp, "tags": tags | {"measure": "latency"},
                             "stats": stats, "info": info})  # fmt: skip
        for f in _figures(r):
            if (unit := _conbench_unit(f.unit)) is None:
                continue
            result = common | {"timestamp": stamp, "tags": tags | {"measure": f.name},
                               "stats": {"data": [f.value], "unit": unit, "iterations": 1},
                               "info": info}  # fmt: skip
            if f.valid is not None:
                result["validation"] = {"loadgen": "VALID" if f.valid else "INVALID"}
            out.append(result)
    out += list(_conbench_kernels(run, common))
    return out


def _conbench_kernels(run: Run, common: dict) -> Iterator[dict]:
    for k in _kernels(run):
        if (unit := _conbench_unit(k.figure.unit)) is None:
            continue
        scale = 1e9 if k.figure.unit.startswith("G") else 1.0  # GFLOP/s, GB/s in units/s
        yield common | {
            "timestamp": dt.datetime.fromtimestamp(k.timestamp, dt.UTC).isoformat(),
            "tags": {"name": k.id, "group": k.group, "measure": k.figure.unit},
            "stats": {"data": [k.figure.value * scale], "unit": unit, "iterations": 1},
            "info": {"unit": k.figure.unit},
        }


def _first_source(run: Run) -> Provenance | None:
    return next((r.source for r in run.results if r.source is not None), None)


def export(run: Run, fmt: str, measure: str = "latency", source: Provenance | None = None):
    """The JSON document of ``run`` in ``fmt`` (one of FORMATS)."""
    if fmt == "github-action-benchmark":
        return github_action_benchmark(run, measure)
    if fmt == "bmf":
        return bmf(run)
    if fmt == "conbench":
        return conbench(run, source)
    raise ValueError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
