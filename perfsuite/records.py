"""perfsuite's records: what a point's measurement (``Result``), a run (``RunSummary``) and a
stored baseline (``Baseline``) look like on disk, validated when written and when read.

pydantic v2 rather than msgspec: its validators say *which* field is wrong in one line, and
``model_json_schema()`` gives the JSON Schema shipped in ``perfsuite/schemas/`` from the same
types (a test checks the shipped files are current: ``python -m perfsuite.records``).

Samples and rates must be finite and positive: JSON Schema's ``exclusiveMinimum: 0`` lets NaN
through (it compares false), and one NaN sample made ``perfsuite compare`` call a 1.5x slowdown
"unchanged +nan%".

Format history (``upgrade`` turns any older file into the current one):
- ``perfsuite.result/1`` (2026-11): one point's record; ``point.extra`` always ``{}``.
- ``perfsuite.result/2`` (2026-12-03): ``point.extra`` dropped; the point's ``id`` must agree
  with its fields (the gate used to re-split ids on "-"); samples finite and > 0. Additive
  since: ``calibration`` (2026-12-04), the machine-speed probes before and after each window.
- ``perfsuite.baseline/1`` (2026-11): per-id entries of thinned samples, stats and run medians.
- ``perfsuite.baseline/2`` (2026-12-03): as /1 with /2 points and finite samples and runs.
- ``perfsuite.run/1``: a run directory's summary.json (profile, fingerprint, point statuses).
- ``perfsuite.reference/1``: a SKU reference for ``perfsuite qualify``.
- ``perfsuite.gate/1``: a gate's verdicts (gate.json), in-run or offline.
- ``perfsuite.qualification/1``: a qualification report (qualification.json).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

RESULT = "perfsuite.result/2"
BASELINE = "perfsuite.baseline/2"
RUN = "perfsuite.run/1"
REFERENCE = "perfsuite.reference/1"
GATE = "perfsuite.gate/1"
QUALIFICATION = "perfsuite.qualification/1"


class RecordError(ValueError):
    """A record that cannot be read: the message names the file and the field."""


Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


SPARK_PATTERNS = ("partition", "rdd_map")


class SparkSpec(_Record):
    """How a Spark point runs: the pattern, concurrent tasks (slots) and CPUs each task's
    framework session uses."""

    pattern: Literal["partition", "rdd_map"]
    slots: int = Field(ge=1)
    cpus_per_task: int = Field(ge=1)


def point_id(p: dict) -> str:
    """The one spelling of a point's id from its fields (the sweep's plan and the record
    validator share it). Spark points say so, with pattern and slots x CPUs:
    ``...-spark_partition-2x1-b32``."""
    node = "unbound" if p["numa_node"] is None else f"node{p['numa_node']}"
    head = f"{p['model']}-{p['framework']}-{p['precision']}"
    spark = p.get("spark")
    if spark:
        where = f"spark_{spark['pattern']}-{spark['slots']}x{spark['cpus_per_task']}"
        where += "" if p["numa_node"] is None else f"-{node}"
        return f"{head}-{where}-b{p['batch']}"
    suffix = "" if p["mode"] == "latency" else f"-{p['mode']}"
    return f"{head}-t{p['threads']}-{node}-b{p['batch']}{suffix}"


class Point(_Record):
    id: str
    model: str
    framework: str
    precision: str
    threads: int = Field(ge=1)
    numa_node: int | None = Field(default=None, ge=0)
    batch: int = Field(ge=1)
    mode: Literal["latency", "throughput"]
    threads_spec: str = ""
    skip: str | None = None
    spark: SparkSpec | None = None  # additive in result/2: absent means a single-process point

    @model_validator(mode="after")
    def _id_matches(self):
        want = point_id(self.model_dump())
        if self.id != want:
            raise ValueError(f"id {self.id!r} does not match the point's fields ({want!r})")
        return self


class Stats(_Record):
    n: int = Field(ge=1)
    latency_p50_ms: Positive
    latency_p90_ms: Positive
    latency_p99_ms: Positive
    latency_mean_ms: Positive
    latency_stdev_ms: NonNegative
    latency_min_ms: Positive
    latency_max_ms: Positive
    cv: NonNegative
    iqr_ms: NonNegative
    p99_reliable: bool
    throughput_ips: Positive
    between_session_cv: NonNegative | None = None


class Result(_Record):
    """One point's measurement (or its error), as the worker returns it and the store keeps
    it."""

    model_config = ConfigDict(frozen=True, extra="allow")  # framework-specific additions

    schema_: Literal["perfsuite.result/2"] = Field(RESULT, alias="schema")
    id: str
    point: Point
    hardware_class: str
    software: dict[str, str | None] = {}
    timestamp: Positive
    status: Literal["ok", "error"]
    error: str | None = None
    samples_s: list[Positive] = []
    session_medians_s: list[Positive] = []
    stats: Stats | None = None
    accuracy: dict | None = None
    settings: dict = {}
    interference: dict | None = None  # perfsuite.execute.interference, per session window
    calibration: dict | None = None  # additive in result/2: machine speed around each window

    @model_validator(mode="after")
    def _consistent(self):
        if self.id != self.point.id:
            raise ValueError(f"id {self.id!r} is not its point's id {self.point.id!r}")
        if self.status == "ok" and (not self.samples_s or self.stats is None):
            raise ValueError("status ok needs samples_s and stats")
        if self.stats is not None and self.stats.n != len(self.samples_s):
            raise ValueError(f"stats.n = {self.stats.n} but {len(self.samples_s)} samples")
        return self


class BaselineEntry(_Record):
    point: Point
    samples_s: list[Positive] = Field(min_length=1)
    stats: Stats
    settings: dict = {}
    software: dict[str, str | None] = {}
    accuracy: dict | None = None
    recorded: str
    runs: list[Positive] = []


class HistoryItem(_Record):
    time: str
    action: Literal["created", "added", "updated", "run-added"]
    ids: list[str]
    software: dict[str, str | None] = {}


class Fingerprint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    fields: dict[str, Any]
    classes: dict[str, Literal["must_match", "tolerance", "informational"]]


class InstructionCounts(_Record):
    """Kernel instruction counts (``perfsuite.execute.instructions``): exact, so gated
    without statistics."""

    isa: str  # the kernel variant counted (valgrind runs the AVX2 ones)
    counts: dict[str, int]
    recorded: str

    @model_validator(mode="after")
    def _positive(self):
        for key, n in self.counts.items():
            if n <= 0:
                raise ValueError(f"instruction count of {key!r} must be positive, got {n}")
        return self


class Baseline(_Record):
    schema_: Literal["perfsuite.baseline/2"] = Field(BASELINE, alias="schema")
    hardware_class: str = Field(pattern=r"^[a-z0-9_-]+$")
    profile: str
    fingerprint: Fingerprint
    entries: dict[str, BaselineEntry]
    history: list[HistoryItem]
    instructions: InstructionCounts | None = None  # additive in baseline/2: absent = not kept

    @model_validator(mode="after")
    def _keys_are_ids(self):
        for key, e in self.entries.items():
            if key != e.point.id:
                raise ValueError(f"entry {key!r} holds point {e.point.id!r}")
        return self


Fraction = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


class Expected(_Record):
    expected: Positive
    warn_below: Fraction
    fail_below: Fraction

    @model_validator(mode="after")
    def _ordered(self):
        if self.fail_below > self.warn_below:
            raise ValueError("fail_below must not exceed warn_below")
        return self


class Reference(BaseModel):
    """A SKU reference for ``perfsuite qualify`` (shipped in perfsuite/references/ or given
    with --reference); every threshold finite and in range, or the check would never fail."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    schema_: Literal["perfsuite.reference/1"] = Field(REFERENCE, alias="schema")
    sku: str
    hardware_class: str
    source: str
    saved: dict | None = None
    topology: dict[str, Any] = {}
    memory_total_gib_min: Positive | None = None
    bandwidth_gbs_per_node: Expected | None = None
    node_symmetry_max_spread: Fraction | None = None
    fma_gflops_per_core: Expected | None = None
    gemm_efficiency_min: Fraction | None = None
    stability_max_cv: Fraction | None = None
    settings: dict[str, Any] = {}


class RunSummary(BaseModel):
    """A run directory's summary.json."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    schema_: Literal["perfsuite.run/1"] = Field(RUN, alias="schema")
    profile: dict[str, Any]
    fingerprint: Fingerprint
    points: list[dict[str, Any]]


Finite = Annotated[float, Field(allow_inf_nan=False)]


class Verdict(_Record):
    id: str
    verdict: Literal[
        "improved", "unchanged", "regressed", "unstable", "new", "missing", "incomparable",
        "error",
    ]  # fmt: skip
    change: Finite | None = None
    ci: tuple[Finite, Finite] | None = None
    p_value: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    baseline_median_ms: Positive | None = None
    current_median_ms: Positive | None = None
    reason: str = ""
    confirmed: bool | None = None
    shift: Finite | None = None  # additive in gate/1: its thread group's machine-wide shift


class GateReport(_Record):
    schema_: Literal["perfsuite.gate/1"] = Field(GATE, alias="schema")
    comparable: bool
    differences: dict[str, Any]
    machine_shift: Finite | None
    fail_on: Literal["regression", "unstable", "never"]
    failing: list[str]
    verdicts: list[Verdict]


class Check(_Record):
    group: str
    name: str
    status: Literal["PASS", "WARN", "FAIL", "SKIP"]
    measured: Any = None
    expected: Any = None
    detail: str = ""


class QualificationReport(_Record):
    schema_: Literal["perfsuite.qualification/1"] = Field(QUALIFICATION, alias="schema")
    verdict: Literal["PASS", "WARN", "FAIL"]
    reference: dict[str, Any] | None
    fingerprint: dict[str, Any]
    measurements: dict[str, Any]
    seconds: NonNegative
    checks: list[Check]


# -- upgrades: each takes a dict of one version and returns the next (asv's update_to_N) -----


# Upgrades reshape what is there and leave the rest to validation, which names what is
# missing or wrong; they never raise on a malformed file themselves.


def _point_1_to_2(point: Any) -> Any:
    if not isinstance(point, dict):
        return point
    return {k: v for k, v in point.items() if k != "extra"}


def _result_1_to_2(d: dict) -> dict:
    return dict(d, schema="perfsuite.result/2", point=_point_1_to_2(d.get("point")))


def _baseline_1_to_2(d: dict) -> dict:
    entries = d.get("entries")
    if isinstance(entries, dict):
        entries = {
            k: dict(e, point=_point_1_to_2(e.get("point"))) if isinstance(e, dict) else e
            for k, e in entries.items()
        }
    return dict(d, schema="perfsuite.baseline/2", entries=entries)


UPGRADES = {
    "perfsuite.result/1": _result_1_to_2,
    "perfsuite.baseline/1": _baseline_1_to_2,
}
CURRENT = {
    "result": RESULT,
    "baseline": BASELINE,
    "reference": REFERENCE,
    "run": RUN,
    "gate": GATE,
    "qualification": QUALIFICATION,
}


def upgrade(data: dict) -> dict:
    """Apply upgrade steps until the data is at its kind's current schema."""
    seen = set()
    while isinstance(data, dict) and data.get("schema") in UPGRADES:
        if data["schema"] in seen:  # a broken chain must not loop
            raise RecordError(f"upgrade loop at {data['schema']}")
        seen.add(data["schema"])
        data = UPGRADES[data["schema"]](data)
    return data


def _one_line(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(top level)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def _load(model: type[BaseModel], kind: str, data: Any, source: str) -> BaseModel:
    if not isinstance(data, dict):
        raise RecordError(f"{source} is not a perfsuite {kind} (not a JSON object)")
    data = upgrade(data)
    if data.get("schema") != CURRENT[kind]:
        raise RecordError(
            f"{source} has schema {data.get('schema')!r}; this perfsuite reads "
            f"{CURRENT[kind]!r} (and upgrades {', '.join(k for k in UPGRADES if kind in k)})"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RecordError(f"{source} is not a valid {CURRENT[kind]}: {_one_line(exc)}") from None


def check_result(record: dict, source: str = "record") -> dict:
    """Validate a record about to be written; returns it unchanged (as a plain dict)."""
    load_result(record, source)
    return record


def dump(record: BaseModel) -> dict:
    return record.model_dump(mode="json", by_alias=True, exclude_none=False)


SCHEMAS = {
    "result": Result,
    "baseline": Baseline,
    "reference": Reference,
    "run": RunSummary,
    "gate": GateReport,
    "qualification": QualificationReport,
}


def load(kind: str, data: Any, source: str | None = None) -> BaseModel:
    """Upgrade and validate ``data`` as a record of ``kind`` (a key of ``SCHEMAS``)."""
    return _load(SCHEMAS[kind], kind, data, source or kind)


load_result = functools.partial(load, "result")
load_baseline = functools.partial(load, "baseline")
load_reference = functools.partial(load, "reference")
load_run_summary = functools.partial(load, "run")
load_gate_report = functools.partial(load, "gate")
load_qualification = functools.partial(load, "qualification")


def json_schema(kind: str) -> dict:
    schema = SCHEMAS[kind].model_json_schema(by_alias=True)
    schema["$id"] = CURRENT[kind]
    return schema


def main() -> int:
    """Write the JSON Schemas shipped in perfsuite/schemas/ from the types."""
    import json
    from pathlib import Path

    folder = Path(__file__).parent / "schemas"
    for kind in SCHEMAS:
        path = folder / f"{kind}.schema.json"
        path.write_text(json.dumps(json_schema(kind), indent=1, sort_keys=True) + "\n")
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
