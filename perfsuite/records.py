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
  since: ``calibration`` (2026-12-04), the machine-speed probes before and after each window;
  (2026-12-07) ``point.mode`` takes LoadGen's scenarios and llama-bench's tests (``MODES``),
  ``headline``, ``loadgen`` and ``decode``; a baseline entry's ``headline``.
- ``perfsuite.baseline/1`` (2026-11): per-id entries of thinned samples, stats and run medians.
- ``perfsuite.baseline/2`` (2026-12-03): as /1 with /2 points and finite samples and runs.
- ``perfsuite.run/1``: a run directory's summary.json (profile, fingerprint, point statuses).
- ``perfsuite.reference/1``: a SKU reference for ``perfsuite qualify``.
- ``perfsuite.gate/1``: a gate's verdicts (gate.json), in-run or offline.
- ``perfsuite.qualification/1``: a qualification report (qualification.json).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from perfsuite.urls import without_credentials

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
# seconds since the epoch, before the year 10000: what every date library can represent
Timestamp = Annotated[float, Field(gt=0, lt=253402300800, allow_inf_nan=False)]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


JSONValue = Any  # a value read from JSON that perfsuite passes through without reading it


SparkPattern = Literal["partition", "rdd_map"]
SPARK_PATTERNS = get_args(SparkPattern)


class SparkSpec(_Record):
    """How a Spark point runs: the pattern (partition: mapInArrow, a session per Python
    worker; rdd_map: the article's map, one record per call), concurrent tasks (slots) and
    CPUs each task's framework session uses."""

    pattern: SparkPattern
    slots: int = Field(ge=1)
    cpus_per_task: int = Field(ge=1)


# How a point is driven: a latency window or a throughput window (perfsuite.execute.measure),
# one of MLPerf LoadGen's scenarios (perfsuite.serve), or a llama-bench test of LLM decoding,
# pp<N> (prompt processing) or tg<N> (text generation; perfsuite.llm).
WINDOW_MODES = ("latency", "throughput")
SCENARIOS = ("single_stream", "multi_stream", "server", "offline")
DECODE_TEST = re.compile(r"^(pp|tg)([1-9][0-9]{0,4})$")
LLM_SERVER = "llm_server"  # an LLM served with continuous batching (perfsuite.llm.serving)
MODES = WINDOW_MODES + SCENARIOS + ("pp<N>", "tg<N>", LLM_SERVER)


class Unsupported(RuntimeError):
    """This point cannot run with this framework, precision or model on this CPU: raised by
    prepare (quantized variants) and llm (decoder variants), a reason to skip."""


def decode_test(name: str) -> tuple[Literal["pp", "tg"], int]:
    """``"pp512"`` -> ``("pp", 512)``: the one reading of a decode test's name (the plan,
    the LLM bench and the decode executor); a malformed one raises ValueError in one line."""
    match = DECODE_TEST.match(name)
    if not match:
        raise ValueError(
            f"bad LLM test name {name!r}: expected pp<N> or tg<N> with N from 1 to 99999"
        )
    return match.group(1), int(match.group(2))  # type: ignore[return-value]


def mode_kind(mode: str) -> Literal["window", "loadgen", "decode"]:
    if mode in WINDOW_MODES:
        return "window"
    if mode in SCENARIOS:
        return "loadgen"
    if DECODE_TEST.match(mode) or mode == LLM_SERVER:
        return "decode"
    raise ValueError(f"mode {mode!r}: use one of {', '.join(MODES)} (N from 1 to 99999)")


class Point(_Record):
    """One benchmark point: what the sweep plans, the executors measure and every record
    names. The id is derived from the fields (``point_id``) and checked when read."""

    model: str
    framework: str
    precision: str
    threads: int = Field(ge=1)
    numa_node: int | None = Field(default=None, ge=0)  # None: no binding
    # additive in result/2: one bound worker per NUMA node ("node") or L3 domain ("l3"),
    # started together, their throughput summed (the article's multi-socket recipe)
    shards: Literal["node", "l3"] | None = None
    batch: int = Field(ge=1)
    mode: str  # MODES
    threads_spec: str = ""  # how the count was asked for ("1", "cores", "auto", ...)
    skip: str | None = None
    spark: SparkSpec | None = None  # additive in result/2: absent means a single-process point
    # additive in result/2: a LoadGen point's framework sessions, threads split between them
    streams: int = Field(default=1, ge=1)
    id: str = ""

    @model_validator(mode="before")
    @classmethod
    def _fill_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("id"):
            try:
                return {**data, "id": point_id(data)}
            except (KeyError, TypeError, AttributeError):
                return data  # validation names what is missing
        return data

    @model_validator(mode="after")
    def _id_matches(self):
        mode_kind(self.mode)
        if self.shards and (self.numa_node is not None or self.spark):
            raise ValueError("a shards point binds each shard itself: no numa_node, no spark")
        want = point_id(self)
        if self.id != want:
            raise ValueError(f"id {self.id!r} does not match the point's fields ({want!r})")
        return self

    def but(self, **changes) -> Point:
        """A copy with ``changes``, validated, its id derived anew."""
        return Point.model_validate({**self.model_dump(exclude_unset=True), **changes, "id": ""})


def point_id(p) -> str:
    """The one spelling of a point's id from its fields. Spark points say so, with pattern
    and slots x CPUs: ``...-spark_partition-2x1-b32``."""
    get = p.get if isinstance(p, dict) else lambda k: getattr(p, k)
    node = "unbound" if get("numa_node") is None else f"node{get('numa_node')}"
    if get("shards"):
        node = {"node": "shards", "l3": "l3shards"}.get(get("shards"), f"{get('shards')}shards")
    head = f"{get('model')}-{get('framework')}-{get('precision')}"
    spark = get("spark")
    if spark:
        spark = spark if isinstance(spark, dict) else spark.model_dump()
        where = f"spark_{spark['pattern']}-{spark['slots']}x{spark['cpus_per_task']}"
        where += "" if get("numa_node") is None else f"-{node}"
        return f"{head}-{where}-b{get('batch')}"
    suffix = "" if get("mode") == "latency" else f"-{get('mode')}"
    streams = p.get("streams", 1) if isinstance(p, dict) else p.streams
    suffix += f"-s{streams}" if streams > 1 else ""
    return f"{head}-t{get('threads')}-{node}-b{get('batch')}{suffix}"


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


class InterferenceWindow(_Record):
    """What else ran during one measurement window (``perfsuite.execute.interference``)."""

    window_s: NonNegative
    foreign_cpu_s: NonNegative  # other processes' CPU time during the window
    foreign_share: NonNegative  # of all CPUs over the window
    steal_share: NonNegative
    involuntary_switches: int
    migrations: int
    load_avg_1m: NonNegative | None = None
    contaminated: bool


class Interference(_Record):
    contaminated: bool
    retries: int = Field(ge=0)
    sessions: list[InterferenceWindow]
    discarded: list[InterferenceWindow] = []

    def why(self) -> str:
        """What disturbed the measurement, from its last window."""
        w = self.sessions[-1]
        return f"other processes used {w.foreign_share:.0%} of the CPUs, steal {w.steal_share:.0%}"


class Speed(_Record):
    """A machine-speed probe (``perfsuite.execute.calibration``)."""

    fma_gflops: Positive
    triad_gbs: Positive
    seconds: NonNegative


class SpeedAround(_Record):
    before: Speed
    after: Speed


class Calibration(_Record):
    sessions: list[SpeedAround]


class Counters(_Record):
    """Hardware counters around the window (``perf stat``; --perf-counters)."""

    counts: dict[str, int] = {}
    unsupported: dict[str, str] = {}  # event -> reason
    derived: dict[str, float] = {}
    returncode: int | None = None


class ModelInfo(_Record):
    params: int = Field(ge=0)
    flops_per_item: NonNegative | None  # None: a declared model's, not counted
    weight_bytes: int = Field(ge=0)
    variant_file: str
    variant_mb: NonNegative | None = None  # absent in Spark records


class Accuracy(_Record):
    """An INT8/bf16 variant against FP32 (``perfsuite.prepare.accuracy``)."""

    metric: str  # "top1_drop_points" or "centred_sqnr_db"
    value: float
    threshold: float
    passed: bool
    detail: dict[str, JSONValue]


class SparkAgreement(_Record):
    """A Spark point's first outputs against the same variant run in one process."""

    items: int = Field(ge=1)
    metric: str
    sqnr_db: float | None  # None when identical (SQNR is +inf, which JSON cannot hold)
    identical: bool
    threshold_db: float
    top1_agreement: float
    max_abs_diff: float
    passed: bool


class SparkWorker(_Record):
    """A Python worker that ran Spark tasks: where the kernel let it run."""

    pid: int
    cpus: list[int]
    mems: str | None


class SparkTask(SparkWorker):
    """What one Spark task reports from its worker (``execute.spark_tasks``, JSON)."""

    elapsed_s: NonNegative
    build_s: NonNegative  # building the worker's session, when this task paid for it
    items: int = Field(ge=0)
    settings: dict[str, JSONValue] = {}


class SparkWorkers(_Record):
    workers: list[SparkWorker]


class Binding(_Record):
    """The CPU and memory binding in force in a measuring process (``host.numa``)."""

    cpus_allowed: str
    mems_allowed: str
    mempolicy: str
    mempolicy_nodes: str
    mechanism: str


class Warmup(_Record):
    calls: int = Field(ge=0)
    seconds: NonNegative
    stable: bool


class LoadGenSettings(_Record):
    """What a LoadGen point runs with (``sweep.plan.Profile.loadgen``): the scenario's
    settings and the server search's, from the profile."""

    latency_bound_ms: Positive
    min_duration_s: Positive
    min_query_count: int = Field(ge=0)  # 0: the early-stopping minimum of the scenario
    target_qps: NonNegative  # 0: estimated from a short latency probe
    search_steps: int = Field(ge=1)
    search_precision: Annotated[float, Field(gt=0, lt=1)]
    # server: rate searches, each in a fresh process; the headline is their median
    searches: int = Field(1, ge=1)
    unloaded: bool = True  # server: a SingleStream run before the search (the first one's)


class LlmServingSettings(_Record):
    """What an ``llm_server`` point serves (``sweep.plan.Profile.llm_serving``)."""

    ttft_bound_ms: Positive = 150.0
    tpot_bound_ms: Positive = 10.0
    requests: int = Field(24, ge=2)  # per rate tried, at least
    duration_s: Positive = 3.0  # the arrivals span at least this: rate x duration requests
    input_tokens: tuple[int, int] = (32, 96)  # uniform, inclusive
    output_tokens: tuple[int, int] = (16, 48)
    burstiness: Positive = 1.0  # gamma shape of the arrival gaps: 1 = Poisson
    static_batch: int = Field(4, ge=1)  # static batching's batch, run at the rate found
    search_steps: int = Field(6, ge=1)
    search_precision: Annotated[float, Field(gt=0, lt=1)] = 0.25


class ModelInput(_Record):
    """One input of a model: its name, element type (numpy's name) and shape, a symbolic
    dimension by its name ("?" where the file names none)."""

    name: str
    dtype: str
    shape: list[int | str]


class InputRule(_Record):
    """How one input of a declared model gets its data (``[models.NAME.inputs.INPUT]``):
    integers uniform in [low, high), a constant, or positions 0, 1, 2, ... along the last
    axis. Float inputs without a rule are normal(0, 1)."""

    low: float | None = None
    high: float | None = None
    value: float | None = None
    arange: bool = False

    @model_validator(mode="after")
    def _one_rule(self):
        ranged = self.low is not None or self.high is not None
        given = [ranged, self.value is not None, self.arange]
        if sum(given) != 1:
            raise ValueError("give one of low and high, value, or arange = true")
        if ranged and (self.low is None or self.high is None or not self.low < self.high):
            raise ValueError("low and high must both be given, with low < high")
        return self


ModelFormat = Literal["onnx", "ir"]


class ModelSpec(_Record):
    """A model file perfsuite did not build, declared in configuration (``[models.NAME]``) or
    named by ``--perf-model``: where it is, the values of its symbolic dimensions and how its
    inputs, calibration data and labels are made. It travels in the protocol to every
    executor, as the built-in zoo's names do not need to."""

    name: str
    path: str  # absolute: an .onnx file or an IR .xml (an exported folder's, resolved)
    format: ModelFormat
    dims: dict[str, Annotated[int, Field(ge=1)]] = {}
    batch_dim: str | None = None  # the dimension the profile's batch sets (None: a symbolic axis 0)
    inputs: dict[str, InputRule] = {}
    data: str | None = None  # .npz keyed by input name, first axis = samples
    calibration: str | None = None  # .npz like data, for quantize_static and NNCF
    labels: str | None = None  # .npy of class indices, one per sample of data
    latency_bound_ms: Positive | None = None  # the server scenario's p99 bound
    options: dict[str, dict[str, JSONValue]] = {}  # framework -> its backend options


class MeasureProtocol(_Record):
    """What a point's measurement needs, from the sweep to every executor and worker (the
    one contract across process and host boundaries, as JSON there): the latency or
    throughput window and its warm-up (``execute.measure``), the sessions, and for a LoadGen
    point its settings and where its logs go."""

    min_time: NonNegative = 2.0
    min_samples: int = Field(15, ge=1)
    warmup_time: NonNegative = 0.5
    warmup_calls: int = Field(3, ge=1)
    max_warmup_time: NonNegative = 30.0
    # warm-up ends when the median of the last 5 calls is within this fraction of the 5
    # before (or max_warmup_time passes)
    stable_within: NonNegative = 0.05
    max_time: NonNegative = 120.0
    counters: bool = False  # perf stat on the measurement window (execute.counters)
    sessions: int = Field(1, ge=1)  # fresh framework sessions, measured one after another
    loadgen: LoadGenSettings | None = None
    llm_serving: LlmServingSettings | None = None
    log_dir: str | None = None  # a LoadGen point's logs (relative to the run directory)
    model: ModelSpec | None = None  # the point's model when it is a declared file
    llm_folder: str | None = None  # the point's LLM when it is a user's Hugging Face folder
    barrier: str | None = None  # a shard's: "FOLDER:N", its window starts when N shards are ready


class RunProtocol(_Record):
    """How a measurement ran: a latency window and its warm-up, a throughput window's items,
    one entry per session, a Spark point's passes, or an A/B point's turns."""

    warmup: Warmup | None = None
    window_s: NonNegative | None = None
    items: int | None = None
    sessions: list[RunProtocol] = []
    runs: int | None = None
    turns: int | None = None
    turn_s: NonNegative | None = None
    turn_medians_s: list[Positive] = []


class SparkRun(SparkSpec):
    """How a Spark point ran (``perfsuite.execute.spark``): passes, start-up, agreement of
    its outputs with a single-process run."""

    master: str
    items: int = Field(ge=1)
    spark_session_start_s: NonNegative | None = None
    cold_pass_s: NonNegative
    pass_s: list[NonNegative]
    session_build_s: list[NonNegative] = []
    partition_s: list[NonNegative] = []
    agreement: SparkAgreement | None = None


class Provenance(_Record):
    """Which code a run measured (``perfsuite.host.provenance``)."""

    commit: str | None = None
    branch: str | None = None
    dirty: bool | None = None  # uncommitted changes to tracked files
    repository: str | None = None

    @field_validator("repository")
    @classmethod
    def _no_credentials(cls, url: str | None) -> str | None:
        # a CI checkout's remote often holds a token (https://gitlab-ci-token:TOKEN@...):
        # never recorded, whichever way the URL arrived (git, an option, an older record)
        return url and without_credentials(url)


class Headline(_Record):
    """The one number a scenario or decode test is known by (MLPerf's and llama-bench's):
    a server's scheduled QPS, an offline samples/s, a single-stream p90, tokens/s."""

    name: str
    value: Positive
    unit: str
    higher_is_better: bool
    # the gate compares this value, not the samples: a server search's rate, an offline rate
    # (one number per run); single-stream, multi-stream and decode points gate on samples
    gated: bool = False
    # LoadGen's verdict on the run the figure comes from; None where no rules judge it
    valid: bool | None = None
    # the values this one is the median of (a server point's fresh-process rate searches);
    # empty: one value. Their spread is the figure's own noise (the gate reads it).
    runs: list[Positive] = []

    @property
    def spread(self) -> float | None:
        """max / min - 1 of ``runs``; None with fewer than two."""
        return max(self.runs) / min(self.runs) - 1 if len(self.runs) > 1 else None


class TimelineSummary(_Record):
    """A LoadGen run's per-query timeline in figures (``serve.timeline``): p50 and p99 of
    LoadGen's issue delay, the wait for a worker, the worker's service time and the whole
    latency (ms); the most queries in the system at once; queries per CPU. ``file``: the
    table, in the run's log folder."""

    queries: int = Field(ge=1)
    issue_delay_p50_ms: float | None = None  # None: no LoadGen trace to read it from
    issue_delay_p99_ms: float | None = None
    wait_p50_ms: float
    wait_p99_ms: float
    service_p50_ms: float
    service_p99_ms: float
    latency_p50_ms: float
    latency_p99_ms: float
    max_in_system: int = Field(ge=1)
    cpus: dict[str, int] = {}
    file: str | None = None


class LoadGenRun(_Record):
    """One LoadGen test (``perfsuite.serve``): its verdict, LoadGen's reasons when INVALID,
    and its summary fields under LoadGen's own names; the logs sit in ``log_dir`` (relative
    to the run directory)."""

    scenario: str
    target_qps: Positive | None = None
    valid: bool
    reasons: list[str] = []
    fields: dict[str, float | int | str | bool] = {}
    headline: Headline | None = None  # None: the summary lacks it (an INVALID early stop)
    duration_s: NonNegative
    log_dir: str | None = None
    timeline: TimelineSummary | None = None  # additive in result/2


class LoadGenSearch(_Record):
    """One server rate search of a point (``serve.search``): where its steps sit in
    ``LoadGenRecord.runs``, the rate it found, its bracket, and the step that failed."""

    first_run: int = Field(ge=0)
    steps: int = Field(ge=0)
    best: int | None = None  # index in LoadGenRecord.runs of its highest VALID rate
    rate: Positive | None = None  # that run's headline value
    converged: bool = False
    bracket_qps: tuple[Positive | None, Positive | None] = (None, None)
    failed_step: str | None = None  # "step 3 (148.7 queries/s): worker 0 raised ..."


class LoadGenRecord(_Record):
    """A scenario point's LoadGen runs: one, or a server search's steps (INVALID kept)."""

    scenario: str
    settings: dict[str, JSONValue]
    workers: int = Field(ge=1)  # framework sessions serving queries (worker-per-stream)
    runs: list[LoadGenRun]
    best: int | None = None  # index in runs of the reported one; None: no run was VALID
    converged: bool | None = None  # server: the search bracketed the rate to its precision
    bracket_qps: tuple[Positive | None, Positive | None] | None = None  # (top VALID, low INVALID)
    # server: every search (several: fresh processes, the headline their median); best,
    # converged and bracket_qps above are the reported search's. Additive in result/2.
    searches: list[LoadGenSearch] = []
    # server: a SingleStream run of the same session before the search, the service time
    # with no queueing (its timeline beside the search's). Additive in result/2.
    unloaded: LoadGenRun | None = None

    @property
    def latency_bound_ms(self) -> float | None:
        """The bound the scenario was run against (``settings`` is open: records of every
        version keep what their LoadGen settings were)."""
        return self.settings.get("latency_bound_ms")


class Percentiles(_Record):
    p50: NonNegative
    p90: NonNegative
    p99: NonNegative


class LlmServingRun(_Record):
    """One open-loop run of an LLM server at a request rate (``llm.serving``): per-request
    TTFT, TPOT = (latency - TTFT) / (output tokens - 1), inter-token and end-to-end latency
    percentiles in seconds, throughput and goodput (requests/s meeting every bound)."""

    batching: Literal["continuous", "static"]
    rate_rps: Positive  # the arrivals' rate
    requests: int = Field(ge=1)
    completed: int = Field(ge=0)
    duration_s: Positive  # first arrival to last token
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    output_tokens_per_s: NonNegative
    goodput_rps: NonNegative
    meets_slo: bool  # p99 TTFT and p99 TPOT within their bounds, every request completed
    max_batch: int | None = None  # static batching's batch size; None: the scheduler's
    e2e_each_s: list[Positive] = []  # each completed request's end-to-end latency, in order


class LlmServing(_Record):
    """A serving point: the workload and bounds, the rate search's runs (one per step, in
    order), the highest rate meeting the bounds, and static batching at that rate."""

    workload: dict[str, JSONValue]  # lengths, arrival process, requests per step
    ttft_bound_s: Positive
    tpot_bound_s: Positive
    runs: list[LlmServingRun]
    best: int | None = None  # index in runs of the highest rate meeting the bounds
    converged: bool = False
    static: LlmServingRun | None = None  # static batching at the best rate, side by side
    static_why_not: str | None = None


class DecodeRecord(_Record):
    """A llama-bench test (``perfsuite.llm``) with its memory-bandwidth roofline."""

    test: str
    tokens: int = Field(ge=1)
    tokens_per_s: Positive
    ttft_s: Positive | None = None
    tpot_s: Positive | None = None
    # llama-bench's "mean ± sd": tokens/s of each repetition (tg: its steps after the first)
    repetitions: int | None = Field(None, ge=1)
    tokens_per_s_mean: Positive | None = None
    tokens_per_s_sd: NonNegative | None = None
    peak_rss_mb: Positive | None = None  # the measuring process's peak resident memory
    weight_bytes_per_token: int = Field(ge=1)
    serving: LlmServing | None = None  # an LLM serving point (mode "serve")
    triad_gbs: Positive | None = None
    roofline_tokens_per_s: Positive | None = None
    roofline_fraction: NonNegative | None = None
    cache_resident: bool | None = None  # weights fit the L3: the roofline does not bind


class ResultHead(_Record):
    """What the sweep knows of a point's result before it is measured."""

    schema_: Literal["perfsuite.result/2"] = Field(RESULT, alias="schema")
    id: str
    point: Point
    hardware_class: str
    software: dict[str, str | None] = {}
    timestamp: Timestamp
    status: Literal["ok", "error"]
    error: str | None = None
    error_detail: str | None = None  # the whole message when ``error`` is its first line
    accuracy: Accuracy | None = None
    source: Provenance | None = None  # additive in result/2


class ShardRun(_Record):
    """One shard of a shards point: where it ran and what it measured."""

    placement: str
    cpus: str
    throughput_ips: Positive
    latency_p50_ms: Positive
    mechanism: str  # numactl | syscall


class Measurement(_Record):
    """What an executor measured for a point: the contract between the sweep and a worker
    process, another interpreter or a Spark host (serialised as JSON between them)."""

    interference: Interference | None = None  # per session window
    calibration: Calibration | None = None  # additive in result/2: speed around each window
    counters: Counters | None = None
    samples_s: list[Positive] = []
    session_medians_s: list[Positive] = []
    stats: Stats | None = None
    protocol: RunProtocol = RunProtocol()
    settings: dict[str, JSONValue] = {}  # the framework session's effective settings
    binding: Binding | SparkWorkers | None = None  # a process's, or a Spark point's workers
    setup_s: NonNegative | None = None  # session creation, quantization: never timed
    model: ModelInfo | None = None
    spark: SparkRun | None = None  # a Spark point's passes
    isolation: str | None = None  # how the point was run: worker, in-process, spark, ...
    headline: Headline | None = None  # scenario and decode points: what the gate compares
    loadgen: LoadGenRecord | None = None
    decode: DecodeRecord | None = None
    shards: list[ShardRun] | None = None  # a shards point's workers

    @property
    def figures(self) -> list[Headline]:
        """What the point is known by beyond its latency samples, headline first: a LoadGen
        point's MLPerf metric with LoadGen's verdict; a decode point's tokens/s, then its
        TTFT, TPOT and fraction of the bandwidth roofline. Every output carries these."""
        out = [self.headline] if self.headline is not None else []
        d = self.decode
        served = d and d.serving and d.serving.best is not None
        figures = (
            ("TTFT", d and d.ttft_s, "s", False),
            ("TPOT", d and d.tpot_s, "s", False),
            ("roofline fraction", d and d.roofline_fraction, "fraction", True),
        )
        if served:  # an llm_server point: the rate the search found, its p99s
            figures = (
                ("TTFT p99", d.ttft_s, "s", False),
                ("TPOT p99", d.tpot_s, "s", False),
                ("output tokens/s", d.tokens_per_s, "tokens/s", True),
                ("request rate", d.serving.runs[d.serving.best].rate_rps, "requests/s", True),
            )
        for name, value, unit, higher in figures:
            if value:
                out.append(Headline(name=name, value=value, unit=unit, higher_is_better=higher))
        return out


class WorkerReply(_Record):
    """What ``run_point`` in another interpreter prints (``execute.interpreter``)."""

    measurement: Measurement
    software: dict[str, str | None] = {}


class TurnReply(BaseModel):
    """One answer of a turn worker (``execute.turns``): ``ready`` with its set-up time, a
    turn's ``samples_s``, or, on ``stop``, its session's settings, binding, software and
    model. Open to additions: the other side may run a newer perfsuite."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    ready: bool = False
    setup_s: NonNegative | None = None
    samples_s: list[Positive] = []
    settings: dict[str, JSONValue] = {}
    binding: Binding | None = None
    software: dict[str, str | None] = {}
    model: ModelInfo | None = None


class Result(Measurement, ResultHead):
    """One point's measurement (or its error), as the store keeps it: its head, then what was
    measured. Fields absent from a file stay absent when it is written back (``dump``)."""

    remeasure: bool | None = None  # a confirmation re-measure, not one of the run's results

    @model_validator(mode="after")
    def _consistent(self):
        if self.id != self.point.id:
            raise ValueError(f"id {self.id!r} is not its point's id {self.point.id!r}")
        if self.status == "ok" and (not self.samples_s or self.stats is None):
            raise ValueError("status ok needs samples_s and stats")
        if self.stats is not None and self.stats.n != len(self.samples_s):
            raise ValueError(f"stats.n = {self.stats.n} but {len(self.samples_s)} samples")
        return self

    @classmethod
    def of(cls, *parts: BaseModel, **fields) -> Result:
        """A result from its typed parts (a ``ResultHead``, a ``Measurement``) and fields that
        override theirs: what each part had set is set in the result, so ``dump`` writes
        what a worker sent and nothing it left out. Raises RecordError when invalid."""
        given = {}
        for part in parts:
            given |= {_key(part, name): getattr(part, name) for name in part.model_fields_set}
        try:
            return cls.model_validate(given | fields)
        except ValidationError as exc:
            raise RecordError(f"result is not a valid {RESULT}: {one_line(exc)}") from None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def contaminated(self) -> str | None:
        """What disturbed this measurement, or None."""
        i = self.interference
        return i.why() if i is not None and i.contaminated and i.sessions else None


class BaselineEntry(_Record):
    point: Point
    samples_s: list[Positive] = Field(min_length=1)
    stats: Stats
    settings: dict[str, JSONValue] = {}
    software: dict[str, str | None] = {}
    accuracy: Accuracy | None = None
    recorded: str
    runs: list[Positive] = []  # medians of the runs (fresh sessions) it holds
    headline: Headline | None = None  # additive in baseline/2: scenario and decode points
    headline_runs: list[Positive] = []  # additive: the headline's value in each run it holds


class HistoryItem(_Record):
    time: str
    action: Literal["created", "added", "updated", "run-added"]
    ids: list[str]
    software: dict[str, str | None] = {}


class NumaNodeFact(_Record):
    """One entry of the fingerprint's ``numa.nodes``."""

    node: int
    cpus: str
    mem_total_bytes: int | None


class Fingerprint(BaseModel):
    """The host fingerprint (``perfsuite.host.fingerprint``): fields and how each is matched.
    Open to additions: a newer perfsuite's host facts must not make an older one's run
    unreadable, so top-level keys this version does not know are kept in ``additions`` and
    written back where they were."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", json_schema_extra={"additionalProperties": True}
    )
    schema_: str | None = Field(None, alias="schema")
    hardware_class: str | None = None
    fields: dict[str, JSONValue]
    classes: dict[str, Literal["must_match", "tolerance", "informational"]]
    notes: list[str] | None = None
    python_executable: str | None = None
    additions: SkipJsonSchema[dict[str, JSONValue]] = Field({}, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _keep_additions(cls, data):
        if not isinstance(data, dict) or "additions" in data:
            return data
        known = {name for name in cls.model_fields} | {"schema"}
        extra = {k: v for k, v in data.items() if k not in known}
        if not extra:
            return data
        return {**{k: v for k, v in data.items() if k in known}, "additions": extra}

    @model_serializer(mode="wrap")
    def _write_additions_back(self, handler):
        return {**handler(self), **self.additions}

    def as_dict(self) -> dict:
        """The JSON form (a run's summary, a qualification report, ``perfsuite info``)."""
        return self.model_dump(by_alias=True, exclude_unset=True)

    @property
    def software(self) -> dict:
        """The software versions among the fields (``software.*``)."""
        return {k: v for k, v in self.fields.items() if k.startswith("software.")}

    def on_host(self, hostname: str) -> Fingerprint:
        """This fingerprint as measured on ``hostname`` (loopback fleet "hosts" share one)."""
        return self.model_copy(update={"fields": {**self.fields, "os.hostname": hostname}})


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


class IcountFile(_Record):
    """``perfsuite icount --save``'s file."""

    schema_: Literal["perfsuite.icount/1"] = Field("perfsuite.icount/1", alias="schema")
    isa: str
    counts: dict[str, int]


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


class Reference(_Record):
    """A SKU reference for ``perfsuite qualify`` (shipped in perfsuite/references/ or given
    with --reference); every threshold finite and in range, or the check would never fail."""

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
    # additive in reference/1: what `perfsuite qualify --inference` judges its serving and
    # decode points by (absent: measured, not judged). The highest VALID LoadGen server rate
    # (QPS) of server_point (None: of any server point), under a p99 bound of
    # server_latency_bound_ms (None: not checked); the tokens/s of decode_point's tg test
    # (None: of every tg point) and the least share of its memory-bandwidth roofline.
    server_qps: Expected | None = None
    server_point: str | None = None
    server_latency_bound_ms: Positive | None = None
    decode_tokens_per_s: Expected | None = None
    decode_point: str | None = None
    decode_roofline_min: Fraction | None = None


class RunPoint(_Record):
    """A point's line in a run's summary."""

    id: str
    status: Literal["ok", "error"]
    error: str | None = None
    stats: Stats | None = None
    accuracy: Accuracy | None = None
    figures: list[Headline] = []  # additive in run/1: ``Measurement.figures``


class KernelResult(_Record):
    """A kernel benchmark of the run (tests/benchmarks): its rate and its timed rounds, under
    pytest-benchmark's name and group."""

    id: str
    group: str
    figure: Headline
    samples_s: list[Positive] = []
    timestamp: Timestamp


class RunSummary(_Record):
    """A run directory's summary.json."""

    schema_: Literal["perfsuite.run/1"] = Field(RUN, alias="schema")
    profile: dict[str, JSONValue]  # the profile as run (``sweep.plan.Profile``)
    fingerprint: Fingerprint
    points: list[RunPoint]
    source: Provenance | None = None  # additive in run/1
    kernels: list[KernelResult] = []  # additive in run/1

    @property
    def profile_name(self) -> str | None:
        return self.profile.get("name")


Finite = Annotated[float, Field(allow_inf_nan=False)]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


VerdictName = Literal[
    "improved",
    "unchanged",
    "regressed",
    "unstable",
    "new",
    "missing",
    "incomparable",
    "error",
    "pending",  # a paired (A/B) point not yet decided at a look before the last
]
VERDICTS = get_args(VerdictName)


class Verdict(_Record):
    """The gate's verdict on one point: against a baseline (``perfsuite.gate.judge``) or on
    interleaved A/B rounds (``perfsuite.gate.paired``: ``rounds`` and after)."""

    id: str
    verdict: VerdictName
    change: Finite | None = None
    ci: tuple[Finite, Finite] | None = None
    p_value: Probability | None = None
    baseline_median_ms: Positive | None = None
    current_median_ms: Positive | None = None
    reason: str = ""
    confirmed: bool | None = None
    shift: Finite | None = None  # additive in gate/1: its thread group's machine-wide shift
    rounds: int | None = Field(None, ge=0)  # paired: rounds judged
    ratios: list[Positive] | None = None  # paired: B / A of each round
    threshold: NonNegative | None = None  # paired: the practical threshold applied
    look: int | None = Field(None, ge=1)  # paired: the look that decided it
    alpha: Probability | None = None  # paired: the alpha that look tested at
    p_sides: tuple[Probability, Probability] | None = None  # paired: (slower, faster), pre-Holm

    @model_serializer(mode="wrap")
    def _paired_fields_only_when_paired(self, handler):
        # gate.json of a baseline gate stays as it was before the paired fields existed
        out = handler(self)
        return {k: v for k, v in out.items() if k not in PAIRED_FIELDS or v is not None}


PAIRED_FIELDS = ("rounds", "ratios", "threshold", "look", "alpha", "p_sides")


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


class InferenceGate(_Record):
    points: int
    failures: int


class InferenceOutcome(_Record):
    """What ``perfsuite qualify --inference`` got from its sweep: 0 passed, 1 failed, 2 the
    sweep itself did not run."""

    returncode: int
    summary: str
    run_dir: str | None
    gate: InferenceGate | None  # None: no baseline to judge against


class CounterProbes(_Record):
    """The qualification's counters (the article's ``perf stat`` advice): perf on a GEMM and a
    triad where the PMU counts; where it does not, why, and valgrind's instruction counts of
    the kernels as the deterministic stand-in."""

    perf: dict[str, Counters] = {}  # probe -> what perf counted around it
    unsupported: str | None = None  # why perf counts nothing here
    instructions: dict[str, int] = {}  # kernel point -> instructions (valgrind, AVX2 rows)
    instructions_skipped: str | None = None  # why there are no instruction counts either


class HostMeasurements(_Record):
    """What ``perfsuite qualify`` measured on one host (GB/s and GFLOP/s)."""

    bandwidth_gbs: dict[int, NonNegative]  # triad, per NUMA node
    fma_per_core: NonNegative
    fma_all_cores_per_core: NonNegative
    fma_all_cores_readings: list[NonNegative] = []
    quick: bool = False
    gemm_efficiency: NonNegative | None = None  # absent in reports of early versions
    fma_repeats: list[NonNegative] = Field(min_length=1)
    inference: InferenceOutcome | None = None
    recorded_at: str | None = None  # ISO time, when a report carries it
    counters: CounterProbes | None = None  # additive in qualification/1


class ArticleClaim(_Record):
    """One of the tuning article's claims as measured on a host (``perfsuite.sweep.claims``)."""

    claim: str
    host_class: str
    measured: str
    verdict: Literal["confirmed", "refuted", "partly", "untestable here", "not measured"]
    why: str
    points: list[str] = []

    def line(self) -> str:
        used = f" [{', '.join(self.points)}]" if self.points else ""
        measured = "" if self.measured == "-" else f"{self.measured}; "
        head = f"claim '{self.claim}' on {self.host_class}: {self.verdict.upper()}"
        return f"{head}: {measured}{self.why}{used}"


class QualificationReport(_Record):
    schema_: Literal["perfsuite.qualification/1"] = Field(QUALIFICATION, alias="schema")
    verdict: Literal["PASS", "WARN", "FAIL"]
    reference: Reference | None
    fingerprint: Fingerprint
    measurements: HostMeasurements
    seconds: NonNegative
    checks: list[Check]
    claims: list[ArticleClaim] = []  # additive in qualification/1


class Run(_Record):
    """A run in memory, as a store keeps it (``Store.add_run``): its summary, its results
    (re-measures excluded), the gate's verdicts when it was gated, and its directory."""

    summary: RunSummary
    results: list[Result] = Field(min_length=1)
    gate: GateReport | None = None
    source: str = ""


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


def upgrade(data: dict) -> dict:
    """Apply upgrade steps until the data is at its kind's current schema."""
    seen = set()
    while isinstance(data, dict) and data.get("schema") in UPGRADES:
        if data["schema"] in seen:  # a broken chain must not loop
            raise RecordError(f"upgrade loop at {data['schema']}")
        seen.add(data["schema"])
        data = UPGRADES[data["schema"]](data)
    return data


def one_line(exc: ValidationError) -> str:
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
        raise RecordError(f"{source} is not a valid {CURRENT[kind]}: {one_line(exc)}") from None


def _key(record: BaseModel, name: str) -> str:
    alias = type(record).model_fields[name].alias
    return alias or name


def dump(record: BaseModel) -> dict:
    """The JSON form of a record. What a file did not have stays out (a record read and
    written back is unchanged); what the code set is written, None included."""
    return record.model_dump(mode="json", by_alias=True, exclude_unset=True)


SCHEMAS = {
    "result": Result,
    "baseline": Baseline,
    "reference": Reference,
    "run": RunSummary,
    "gate": GateReport,
    "qualification": QualificationReport,
}
# each kind's current schema: the one its type writes
CURRENT = {kind: model.model_fields["schema_"].default for kind, model in SCHEMAS.items()}


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
    folder = Path(__file__).parent / "schemas"
    for kind in SCHEMAS:
        path = folder / f"{kind}.schema.json"
        path.write_text(json.dumps(json_schema(kind), indent=1, sort_keys=True) + "\n")
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
