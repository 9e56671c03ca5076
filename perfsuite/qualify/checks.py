"""Hardware qualification of a server against its SKU's reference: PASS / WARN / FAIL checks.

Checks are pure functions of (fingerprint fields, measurements, reference), so they are tested
with injected measurements on fixture topologies; ``measure`` takes the real measurements
(per-node STREAM triad in a worker bound to the node, FMA peak per core and on all cores,
GEMM efficiency against that peak, repeat stability).
"""

from __future__ import annotations

import importlib.resources
import json
import time
from pathlib import Path

import numpy as np

from perfsuite import kernels, records
from perfsuite.dispersion import cv as coefficient_of_variation
from perfsuite.execute.bound import run_bound
from perfsuite.gate.statistics import GateConfig
from perfsuite.host import placement
from perfsuite.host.fingerprint import fingerprint
from perfsuite.host.topology import read_topology
from perfsuite.prepare.backends import software_versions
from perfsuite.qualify.counters import check_counters, measure_counters
from perfsuite.records import Check
from perfsuite.store import scheme_of
from perfsuite.sweep.finish import FinishOptions, failures, finish
from perfsuite.sweep.plan import load_profiles, select_profile
from perfsuite.sweep.session import PerfSession

REFERENCE_SCHEMA = "perfsuite.reference/1"
NEEDS_REFERENCE = "measured; judging it needs a reference for this class"
# Judged on any host, reference or not.
ALL_CORE_MIN_RATIO = 0.9
GEMM_EFFICIENCY_MIN = 0.5
STABILITY_MAX_CV = 0.10
NODE_SYMMETRY_MAX_SPREAD = 0.15
RECOMMENDED_SETTINGS = {"os.numa_balancing": False, "freq.governor": "performance"}
TOPOLOGY_KEYS = (
    "cpu.vendor",
    "cpu.microarchitecture",
    "cpu.sockets",
    "cpu.physical_cores",
    "cpu.threads_per_core",
    "numa.node_count",
    "cache.l3_bytes",
    "cache.l3_domain_count",
)
# The AVX-512 generations: these flags missing on them means a hypervisor or BIOS masks them.
AVX512_MICROARCHITECTURES = ("zen4", "zen5")


class QualifyError(ValueError):
    """A reference that cannot apply to this host, or one that is malformed."""


def shipped_references() -> dict[str, Path]:
    root = importlib.resources.files("perfsuite").joinpath("references")
    return {p.name: Path(str(p)) for p in root.iterdir() if p.name.endswith(".json")}


def load_reference(path: Path | None, hardware_class: str) -> records.Reference | None:
    """The reference at ``path``, else the shipped one for this hardware class, else None:
    a class with no reference is still qualified on what needs none (``evaluate``)."""
    if path is None:
        for p in shipped_references().values():
            ref = records.load_reference(json.loads(p.read_text()), f"shipped reference {p.name}")
            if ref.hardware_class == hardware_class:
                return ref
        return None
    try:
        ref = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise QualifyError(f"reference {path} is unreadable: {exc}") from None
    try:
        return records.load_reference(ref, f"reference {path}")
    except records.RecordError as exc:
        raise QualifyError(str(exc)) from None


def check_sku(fields: dict, ref: records.Reference | None) -> None:
    """A reference for another vendor or microarchitecture is a usage error, not a FAIL."""
    if ref is None:
        return
    topo = ref.topology
    for key in ("cpu.vendor", "cpu.microarchitecture"):
        if key in topo and fields.get(key) != topo[key]:
            raise QualifyError(
                f"reference '{ref.sku}' is for {key} = {topo[key]}; this "
                f"host has {fields.get(key)}: choose the reference of its SKU"
            )


def _check(group: str, name: str, status: str, measured=None, expected=None, detail="") -> Check:
    """A ``Check`` from its fields in order, so that each check below reads as one call."""
    return Check(
        group=group, name=name, status=status, measured=measured, expected=expected, detail=detail
    )


def _status(ok: bool, otherwise: str) -> str:
    return "PASS" if ok else otherwise


def check_topology(fields: dict, ref: records.Reference) -> list[Check]:
    out = [
        _check("topology", key, _status(fields.get(key) == want, "FAIL"), fields.get(key), want)
        for key, want in ref.topology.items()
    ]
    want_gib = ref.memory_total_gib_min
    if want_gib is not None:
        got = (fields.get("memory.total_bytes") or 0) / 2**30
        status = _status(got >= want_gib, "FAIL")
        out.append(_check("topology", "memory.total_gib", status, round(got, 1), f">= {want_gib}"))
    return out


def _graded(value: float, spec: records.Expected) -> str:
    ratio = value / spec.expected
    return "PASS" if ratio >= spec.warn_below else ("WARN" if ratio >= spec.fail_below else "FAIL")


def check_bandwidth(
    per_node_gbs: dict[int, float], ref: records.Reference | None, *, quick: bool = False
) -> list[Check]:
    spec = ref.bandwidth_gbs_per_node if ref else None
    limit = (ref.node_symmetry_max_spread if ref else None) or NODE_SYMMETRY_MAX_SPREAD
    expected = spec.expected if spec else None
    out = []
    for n, v in sorted(per_node_gbs.items()):
        if spec and quick:
            # 16 MiB arrays read far below the real rate (docs/measurements/qualification.md)
            status = "WARN"
            detail = "--quick arrays are too small to judge bandwidth; run without --quick"
        elif spec:
            status, detail = _graded(v, spec), f"{v / spec.expected:.0%} of the reference"
        else:
            status = "WARN"
            detail = NEEDS_REFERENCE + " (the DIMM channel count is not readable from sysfs)"
        name = f"node{n} triad GB/s"
        out.append(_check("bandwidth", name, status, round(v, 1), expected, detail))
    if len(per_node_gbs) > 1:
        out.append(check_node_symmetry(per_node_gbs, limit))
    return out


def check_node_symmetry(per_node_gbs: dict[int, float], limit: float) -> Check:
    """Nodes of one server must match each other: judged without any reference."""
    best = max(per_node_gbs.values())
    slow = {n: v for n, v in per_node_gbs.items() if v < best * (1 - limit)}
    detail = ", ".join(f"node{n} at {v / best:.0%} of the fastest node" for n, v in slow.items())
    measured = {f"node{n}": round(v, 1) for n, v in sorted(per_node_gbs.items())}
    return _check(
        "bandwidth",
        "node symmetry",
        _status(not slow, "FAIL"),
        measured,
        f"all within {limit:.0%} of the fastest",
        detail or "all nodes within the limit (a DIMM missing shows up here)",
    )


def check_compute(
    peak_per_core: float, all_core_per_core: float, gemm_eff: float, ref: records.Reference | None
) -> list[Check]:
    """Without a reference the absolute rate is not judged, but the host is compared with
    itself: all cores busy must keep 90% of the one-core rate (no clock collapse under
    load). The GEMM must reach a share of the peak measured on this host either way."""
    want = (ref.gemm_efficiency_min if ref else None) or GEMM_EFFICIENCY_MIN
    gemm_name = "GEMM efficiency (gemm_f32 n=1024 / FMA peak)"
    gemm_status = _status(gemm_eff >= want, "WARN")
    gemm = _check("compute", gemm_name, gemm_status, round(gemm_eff, 2), f">= {want}")
    one_core_name, peak = "FMA GFLOP/s, one core", round(peak_per_core, 1)
    if ref is None:
        one_core = _check("compute", one_core_name, "WARN", peak, detail=NEEDS_REFERENCE)
        ratio = all_core_per_core / peak_per_core if peak_per_core else 0.0
        ok = ratio >= ALL_CORE_MIN_RATIO
        all_cores = _check(
            "compute",
            "FMA per core all cores busy / one core",
            _status(ok, "WARN"),
            round(ratio, 2),
            f">= {ALL_CORE_MIN_RATIO}",
            f"{all_core_per_core:.1f} vs {peak_per_core:.1f} GFLOP/s per core"
            + ("" if ok else ": clock drops under load"),
        )
    else:
        spec = ref.fma_gflops_per_core
        graded = _graded(peak_per_core, spec)
        one_core = _check("compute", one_core_name, graded, peak, spec.expected)
        all_cores = _check(
            "compute",
            "FMA GFLOP/s per core, all cores busy",
            _graded(all_core_per_core, spec),
            round(all_core_per_core, 1),
            spec.expected,
            "every core reaches the expected clock"
            if all_core_per_core >= peak_per_core * ALL_CORE_MIN_RATIO
            else "all-core rate well below the single-core rate: clock drops under load",
        )
    return [one_core, all_cores, gemm]


def check_stability(repeats: list[float], ref: records.Reference | None) -> list[Check]:
    a = np.asarray(repeats, float)
    cv = coefficient_of_variation(a)
    limit = (ref.stability_max_cv if ref else None) or STABILITY_MAX_CV
    name, status = "FMA peak across repeats (CV)", _status(cv <= limit, "WARN")
    detail = f"{a.size} repeats, min {a.min():.1f} max {a.max():.1f} GFLOP/s"
    return [_check("stability", name, status, round(cv, 4), f"<= {limit}", detail)]


def check_settings(fields: dict, ref: records.Reference | None) -> list[Check]:
    out = []
    for key, want in (ref.settings if ref else RECOMMENDED_SETTINGS).items():
        got = fields.get(key)
        if got is None:
            status, detail = "SKIP", "not readable on this host"
        else:
            status = "PASS" if got == want else "WARN"
            detail = "" if got == want else f"recommended: {want}"
        out.append(_check("settings", key, status, got, want, detail))
    return out


def run_inference(
    out_dir: Path, baselines: Path, profile: str = "qualification", timeout: float | None = None
) -> records.InferenceOutcome:
    """Run the inference sweep of ``profile`` through the sweep's and the gate's Python API
    (the run's executor, the gate against ``baselines``, the same reports as a pytest run,
    under ``out_dir/results``); return what the gate said. ``timeout``: seconds per point
    (default: the profile's)."""
    return measure_inference(out_dir, baselines, profile, timeout)[0]


def measure_inference(
    out_dir: Path, baselines: Path, profile: str = "qualification", timeout: float | None = None
) -> tuple[records.InferenceOutcome, list[records.Result]]:
    """``run_inference``, and the sweep's results (what ``check_serving`` and
    ``check_decode`` judge)."""
    prof = select_profile(load_profiles(), profile, {"timeout": timeout})  # None: profile's
    session = PerfSession(
        prof,
        Path(out_dir).resolve() / "results",
        read_topology("/"),
        fingerprint("/", frameworks=software_versions()),
        baselines=baselines if scheme_of(str(baselines)) != "file" else Path(baselines).resolve(),
    )
    try:
        for point in session.points():
            if not point.skip:
                session.run(point)
        if not session.records:
            none = records.InferenceOutcome(
                returncode=2, summary="no runnable point", run_dir=None, gate=None
            )
            return none, []
        outcome = finish(session, FinishOptions(gate=GateConfig(), fail_on="regression"))
    finally:
        session.close()  # the run's executor (and any SparkSession) stops here
    errors = [r.id for r in session.records if not r.ok]
    inaccurate = [r.id for r in session.records if r.accuracy and not r.accuracy.passed]
    failed = bool(failures(session.records, outcome))
    summary = f"{len(session.records)} point(s) measured"
    if errors or inaccurate:
        summary += f"; errors: {', '.join(errors) or '-'}; accuracy failed: "
        summary += ", ".join(inaccurate) or "-"
    gate = outcome.comparison and records.InferenceGate(
        points=len(outcome.comparison.verdicts),
        failures=len(outcome.comparison.failing("regression")),
    )
    info = records.InferenceOutcome(
        returncode=1 if failed else 0, summary=summary, run_dir=str(session.run_dir), gate=gate
    )
    return info, list(session.records)


def check_inference(info: records.InferenceOutcome | None) -> list[Check]:
    name = "qualification sweep vs the SKU baseline"
    if info is None:
        status, measured, expected = "SKIP", None, None
        detail = "not run (perfsuite qualify --inference runs it)"
    elif info.returncode not in (0, 1):
        name, status, measured, expected = "qualification sweep", "FAIL", info.summary, "completes"
        detail = "the sweep itself failed; see " + str(info.run_dir)
    elif info.gate is None:
        status, measured, expected = "WARN", info.summary, "a baseline"
        detail = "no baseline for this class/profile: measured but not judged"
    else:
        gate = info.gate
        status = "FAIL" if gate.failures or info.returncode == 1 else "PASS"
        measured, expected = f"{gate.failures} of {gate.points} points failing", "0 failing"
        detail = f"gate reports in {info.run_dir}"
    return [_check("inference", name, status, measured, expected, detail)]


NOT_RUN = "not run (perfsuite qualify --inference runs it)"
NO_REFERENCE = "no reference for this check: " + NEEDS_REFERENCE
NO_VALID_RATE = "no VALID server rate"


def _error_line(r: records.Result) -> str:
    """A point's error without its id in front (``<point id>: why``)."""
    text = r.error or "error"
    return text[len(r.id) + 2 :] if text.startswith(f"{r.id}: ") else text


def check_serving(
    results: list[records.Result] | None, ref: records.Reference | None
) -> list[Check]:
    """The highest VALID MLPerf LoadGen server rate (QPS) of the sweep's server points
    against the reference's ``server_qps``; a search that found no VALID rate FAILs."""
    name = "LoadGen server QPS (highest VALID)"
    if results is None:
        return [_check("serving", name, "SKIP", detail=NOT_RUN)]
    want = ref.server_point if ref else None
    points = [r for r in results if r.point.mode == "server" and want in (None, r.id)]
    if not points:
        detail = f"the sweep has no server point{f' {want}' if want else ''}"
        return [_check("serving", name, "SKIP", detail=detail)]
    rated = [r for r in points if r.ok and r.headline and r.loadgen and r.loadgen.best is not None]
    spec = ref.server_qps if ref else None
    expected = spec.expected if spec else None
    if not rated:
        failed = next((r for r in points if NO_VALID_RATE in (r.error or "")), points[0])
        why = _error_line(failed) if not failed.ok else f"{NO_VALID_RATE} in the search"
        return [_check("serving", name, "FAIL", None, expected, f"{failed.id}: {why}")]
    best = max(rated, key=lambda r: r.headline.value)
    qps = best.headline.value
    bound = best.loadgen.latency_bound_ms
    at = f"{best.id}, p99 bound {bound} ms"
    if spec is None:
        status, detail = "WARN", f"{at}; {NO_REFERENCE}"
    elif ref.server_latency_bound_ms is not None and bound != ref.server_latency_bound_ms:
        status = "WARN"
        detail = (
            f"{at}, but the reference's rate is for a {ref.server_latency_bound_ms} ms bound: "
            "not comparable"
        )
    else:
        status, detail = _graded(qps, spec), f"{at}; {qps / spec.expected:.0%} of the reference"
    return [_check("serving", name, status, round(qps, 2), expected, detail)]


def check_decode(
    results: list[records.Result] | None, ref: records.Reference | None
) -> list[Check]:
    """Each LLM tg point: its tokens/s against the reference's ``decode_tokens_per_s``, and
    the share of its own memory-bandwidth roofline against ``decode_roofline_min`` (weights
    that fit the L3 are not bound by it, so the floor does not apply to them)."""
    if results is None:
        return [_check("decode", "LLM tg tokens/s", "SKIP", detail=NOT_RUN)]
    want = ref.decode_point if ref else None
    points = [
        r
        for r in results
        if (m := records.DECODE_TEST.match(r.point.mode)) and m[1] == "tg" and want in (None, r.id)
    ]
    if not points:
        detail = f"the sweep has no tg point{f' {want}' if want else ''}"
        return [_check("decode", "LLM tg tokens/s", "SKIP", detail=detail)]
    spec = ref.decode_tokens_per_s if ref else None
    floor = ref.decode_roofline_min if ref else None
    out = []
    for r in points:
        test = r.point.mode
        name = f"{test} tokens/s ({r.point.model} {r.point.framework} {r.point.precision})"
        d = r.decode
        if not r.ok or d is None:
            why = _error_line(r) if not r.ok else "the record has no decode measurement"
            expected = spec.expected if spec else None
            out.append(_check("decode", name, "FAIL", None, expected, f"{r.id}: {why}"))
            continue
        if spec is None:
            status, detail = "WARN", f"{r.id}; {NO_REFERENCE}"
        else:
            ratio = d.tokens_per_s / spec.expected
            status, detail = _graded(d.tokens_per_s, spec), f"{r.id}; {ratio:.0%} of the reference"
        expected = spec.expected if spec else None
        out.append(_check("decode", name, status, round(d.tokens_per_s, 2), expected, detail))
        out.append(_roofline_check(test, d, floor))
    return out


def _roofline_check(test: str, d: records.DecodeRecord, floor: float | None) -> Check:
    name = f"{test} share of its memory-bandwidth roofline"
    fraction = d.roofline_fraction
    measured = None if fraction is None else round(fraction, 3)
    expected = None if floor is None else f">= {floor}"
    if d.cache_resident:
        detail = (
            f"{test}'s weights ({d.weight_bytes_per_token / 1e6:.0f} MB per token) fit the L3: "
            "memory bandwidth does not bound it, so the roofline floor does not apply"
        )
        return _check("decode", name, "SKIP", measured, expected, detail)
    if fraction is None or not d.triad_gbs:
        detail = "no roofline in the record (no triad measured with it)"
        return _check("decode", name, "WARN" if floor else "SKIP", measured, expected, detail)
    ceiling = f"{d.roofline_tokens_per_s:.1f}" if d.roofline_tokens_per_s else "?"
    basis = (
        f"{d.triad_gbs:.1f} GB/s triad / {d.weight_bytes_per_token / 1e6:.0f} MB of weights "
        f"per token = {ceiling} tokens/s"
    )
    if floor is None:
        detail = f"{fraction:.0%} of {basis}; {NO_REFERENCE}"
        return _check("decode", name, "WARN", measured, expected, detail)
    if fraction < floor:
        detail = (
            f"{test} reaches {fraction:.0%} of its memory-bandwidth roofline ({basis}), below "
            f"the reference's floor of {floor:.0%}: memory or thread placement is wrong"
        )
        return _check("decode", name, "FAIL", measured, expected, detail)
    detail = f"{fraction:.0%} of {basis}"
    return _check("decode", name, "PASS", measured, expected, detail)


def check_topology_sanity(fields: dict) -> list[Check]:
    """What a host's own topology must satisfy, with or without a reference."""
    online = fields.get("cpu.online_count")
    cores, tpc = fields.get("cpu.physical_cores"), fields.get("cpu.threads_per_core")
    out = []
    if online is not None and cores and tpc:
        ok = online == cores * tpc
        detail = "" if ok else "CPUs offline or cores disabled"
        name = "online CPUs = cores x threads per core"
        out.append(_check("topology", name, _status(ok, "FAIL"), online, cores * tpc, detail))
    offline = fields.get("cpu.offline") or ""
    known = {k: fields.get(k) for k in ("numa.node_count", "cache.l3_bytes")}
    readable = _status(all(known.values()), "FAIL")
    out += [
        _check("topology", "offline CPUs", _status(not offline, "WARN"), offline or "none", "none"),
        _check("topology", "NUMA nodes and L3 readable", readable, known, "both known"),
    ]
    if fields.get("cpu.microarchitecture") in AVX512_MICROARCHITECTURES:
        flags = ("isa.avx512f", "isa.avx512_vnni", "isa.avx512_bf16")
        masked = [f for f in flags if fields.get(f) is False]
        out.append(
            _check(
                "topology",
                "AVX-512 visible (VNNI, BF16)",
                _status(not masked, "WARN"),
                "masked: " + ", ".join(masked) if masked else "all present",
                "all present",
                "a hypervisor or BIOS hides them: INT8/bf16 run the slow paths" if masked else "",
            )
        )
    return out


def evaluate(
    fields: dict,
    m: records.HostMeasurements,
    ref: records.Reference | None,
    results: list[records.Result] | None = None,
) -> list[Check]:
    """Every check; with ``ref`` None, what needs a reference is WARN and the rest is judged.
    ``results``: the inference sweep's (``measure_inference``), None when it did not run."""
    check_sku(fields, ref)
    checks = check_topology_sanity(fields) if ref is None else check_topology(fields, ref)
    checks += check_bandwidth(m.bandwidth_gbs, ref, quick=m.quick)
    checks += check_compute(m.fma_per_core, m.fma_all_cores_per_core, m.gemm_efficiency, ref)
    checks += check_stability(m.fma_repeats, ref)
    checks += check_settings(fields, ref)
    checks += check_inference(m.inference)
    checks += check_serving(results, ref)
    checks += check_decode(results, ref)
    checks += check_counters(m.counters)
    return checks


def make_reference(
    fp: records.Fingerprint, runs: list[records.HostMeasurements], *, when: str, note: str = ""
) -> records.Reference:
    """A reference from a known-good host (its ``records.Fingerprint`` or the JSON of one):
    the median of repeated measurements, this host's topology as the expected one, its
    settings as the recommended ones."""
    fields = fp.fields
    med = lambda xs: float(np.median(xs))  # noqa: E731
    bandwidth = med([min(r.bandwidth_gbs.values()) for r in runs])
    fma = med([med(r.fma_repeats) for r in runs])
    gemm = med([r.gemm_efficiency for r in runs if r.gemm_efficiency is not None])
    topology = {k: fields.get(k) for k in TOPOLOGY_KEYS if fields.get(k) is not None}
    topology.update({k: v for k, v in fields.items() if k.startswith("isa.") and v is not None})
    settings = {
        k: fields[k]
        for k in ("os.thp_enabled", "os.numa_balancing", "freq.governor")
        if fields.get(k) is not None
    }
    ref = {
        "schema": REFERENCE_SCHEMA,
        "sku": f"{fp.hardware_class} ({fields.get('cpu.model_name') or 'unknown model'})",
        "hardware_class": fp.hardware_class,
        "source": (
            f"perfsuite qualify --save-reference on {when}: median of {len(runs)} runs "
            f"(triad {bandwidth:.1f} GB/s on the slowest node, FMA {fma:.1f} GFLOP/s per "
            f"core, GEMM efficiency {gemm:.2f}){note}"
        ),
        "saved": {"date": when, "fingerprint": fields},
        "topology": topology,
        "memory_total_gib_min": int((fields.get("memory.total_bytes") or 0) / 2**30 * 0.95)
        or None,  # unknown memory: no minimum, not a minimum of 0
        # Wide bands: a reference from one VM must pass on that VM on a noisy day.
        "bandwidth_gbs_per_node": {
            "expected": round(bandwidth, 1),
            "warn_below": 0.8,
            "fail_below": 0.5,
        },
        "node_symmetry_max_spread": NODE_SYMMETRY_MAX_SPREAD,
        "fma_gflops_per_core": {"expected": round(fma, 1), "warn_below": 0.85, "fail_below": 0.6},
        "gemm_efficiency_min": round(gemm * 0.8, 2),
        "stability_max_cv": STABILITY_MAX_CV,
        "settings": settings,
    }
    return records.load_reference(ref, "the reference made here")


def verdict(checks: list[Check]) -> str:
    statuses = {c.status for c in checks}
    return "FAIL" if "FAIL" in statuses else ("WARN" if "WARN" in statuses else "PASS")


# -- measuring the real host ------------------------------------------------------------------


def measure(topo, *, quick: bool = False, mechanism: str = "auto") -> records.HostMeasurements:
    n = 1 << (22 if quick else 25)
    bandwidth = {}
    for p in placement.shards(topo, "node"):
        bandwidth[p.mem_nodes[0]] = run_bound(
            kernels.triad_gbs, n, len(p.cpus), 3 if quick else 5, best=True, placement=p,
            mechanism=mechanism,
        ).result  # fmt: skip
    seconds = 0.05 if quick else 0.3
    repeats = [kernels.compute_peak(1, seconds)["gflops"] for _ in range(3 if quick else 5)]
    cores = topo.physical_cores or 1
    # A neighbour can take a core from one all-core reading: read up to 8 times, stop at the
    # first that keeps 90% of the one-core rate (docs/measurements/qualification.md).
    readings = []
    for _ in range(8):
        readings.append(kernels.compute_peak(len(topo.online or [0]), seconds)["gflops"] / cores)
        if readings[-1] >= ALL_CORE_MIN_RATIO * max(repeats):
            break
    all_cores = max(readings)
    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    kernels.gemm_f32(a, a)
    t0 = time.perf_counter()
    kernels.gemm_f32(a, a)
    gemm = 2 * 1024**3 / (time.perf_counter() - t0) / 1e9
    return records.HostMeasurements(
        bandwidth_gbs=bandwidth,
        fma_per_core=max(repeats),
        fma_all_cores_per_core=all_cores,
        fma_all_cores_readings=readings,
        quick=quick,
        gemm_efficiency=gemm / max(repeats),
        fma_repeats=repeats,
        counters=measure_counters(quick=quick),
    )


def html(checks: list[Check], title: str, claims: list[records.ArticleClaim] = ()) -> str:
    import html as h

    claim_rows = "".join(
        f"<tr><td>{h.escape(c.claim)}</td><td>{h.escape(c.verdict)}</td>"
        f"<td>{h.escape(c.measured)}</td><td>{h.escape(c.why)}</td>"
        f"<td>{h.escape(', '.join(c.points))}</td></tr>"
        for c in claims
    )
    claims_table = (
        "<h2>The article's claims on this host</h2><table id='claims'><tr><th>claim</th>"
        "<th>verdict</th><th>measured</th><th>why</th><th>points</th></tr>"
        f"{claim_rows}</table>"
        if claims
        else ""
    )
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
        f"{rows}</table>{claims_table}</body></html>"
    )
