"""Which benchmark points to run: profile + command-line overrides + what this host supports.

Points the host cannot run (a NUMA node it does not have, bf16 without the ISA, a missing
framework, a precision a framework has no path for) stay in the plan with a skip reason, so
they show up as skips instead of vanishing.
"""

from __future__ import annotations

import importlib.resources
import itertools
import math
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from perfsuite import llm, serve
from perfsuite.host import placement
from perfsuite.host.topology import Topology
from perfsuite.prepare import (
    models,
    quantize,  # quantize.PRECISIONS: read on each use (entry points)
)
from perfsuite.prepare.backends import BACKENDS, get_backend
from perfsuite.prepare.models import files
from perfsuite.prepare.models import names as model_names
from perfsuite.records import (
    LLM_SERVER,
    SPARK_PATTERNS,
    LlmServingSettings,
    LoadGenSettings,
    MeasureProtocol,
    Point,
    SparkSpec,
    decode_test,
    mode_kind,
)

LIST_KEYS = ("models", "frameworks", "precisions", "threads", "numa_nodes", "batch", "mode")
# Optional keys, so profiles written before Spark points, instruction counts and LoadGen
# scenarios stay valid. LoadGen's settings default to MLPerf Inference's (docs/guide/serving.md):
# a 600 s minimum duration; the server bound per model (ResNet-50 15 ms, BERT 130 ms).
OPTIONAL = {
    "spark": ["none"],
    "spark_items": 512,
    "icount": False,
    "streams": [1],
    "latency_bound_ms": {},
    "loadgen_min_duration": 600.0,
    "loadgen_min_queries": 0,  # 0: the fewest LoadGen's early stopping accepts (serving.py)
    "server_target_qps": 0.0,  # where the server search starts; 0: from a short latency probe
    "search_steps": 8,
    "search_precision": 0.05,
    "server_searches": 1,  # rate searches per server point, each in a fresh process: median
    # llm_server points (perfsuite.llm.serving): p99 bounds, requests per rate, lengths
    "llm_slo_ms": [150.0, 10.0],
    "llm_requests": 24,
    "llm_duration_s": 3.0,
    "llm_input_tokens": [32, 96],
    "llm_output_tokens": [16, 48],
    "llm_burstiness": 1.0,
    "llm_static_batch": 4,
    "llm_search_steps": 6,
    "llm_search_precision": 0.25,
    # more points beside the profile's product: each a table of dimension lists that replace
    # the profile's (e.g. one server point in the default sweep), the rest of the profile kept
    "also": [],
}
# MLPerf Inference's server latency bounds (p99); other models fall back to 15 ms.
MLPERF_BOUNDS_MS = {"resnet50": 15.0, "bert128": 130.0, "bert384": 130.0}
SCALAR_KEYS = {
    "min_time": float,
    "min_samples": int,
    "warmup_time": float,
    "warmup_calls": int,
    "timeout": float,
    "kernels": bool,
    "sessions": int,
}


class PlanError(ValueError):
    """Bad profile or option: the message names the problem and the valid choices."""


@dataclass(frozen=True)
class Profile:
    name: str
    models: tuple[str, ...]
    frameworks: tuple[str, ...]
    precisions: tuple[str, ...]
    threads: tuple[str, ...]
    numa_nodes: tuple[str, ...]
    batch: tuple[int, ...]
    mode: tuple[str, ...]
    min_time: float
    min_samples: int
    warmup_time: float
    warmup_calls: int
    timeout: float
    kernels: bool
    sessions: int
    spark: tuple[str, ...] = ("none",)  # "none" | "<pattern>" | "<pattern>:<slots>x<cpus>"
    spark_items: int = 512  # images in a Spark point's dataset
    icount: bool = False  # kernel instruction counts (valgrind), saved and gated with the run
    streams: tuple[int, ...] = (1,)  # server/offline points: framework sessions serving queries
    latency_bound_ms: tuple[tuple[str, float], ...] = ()  # model -> server p99 bound
    loadgen_min_duration: float = 600.0
    loadgen_min_queries: int = 0
    server_target_qps: float = 0.0
    search_steps: int = 8
    search_precision: float = 0.05
    server_searches: int = 1
    llm_slo_ms: tuple[float, float] = (150.0, 10.0)  # p99 TTFT, p99 TPOT
    llm_requests: int = 24
    llm_duration_s: float = 3.0
    llm_input_tokens: tuple[int, int] = (32, 96)
    llm_output_tokens: tuple[int, int] = (16, 48)
    llm_burstiness: float = 1.0
    llm_static_batch: int = 4
    llm_search_steps: int = 6
    llm_search_precision: float = 0.25
    also: tuple[Profile, ...] = ()

    def as_dict(self) -> dict:
        return asdict(self)

    def bound_ms(self, model: str) -> float:
        """The server scenario's p99 latency bound for ``model``: the profile's, else a
        declared model's own, else MLPerf's."""
        spec = models.declared(model)
        own = spec.latency_bound_ms if spec else None
        return dict(self.latency_bound_ms).get(model) or own or MLPERF_BOUNDS_MS.get(model, 15.0)

    def loadgen(self, model: str) -> LoadGenSettings:
        """What a LoadGen point runs with (``perfsuite.serve.ScenarioSettings`` and the
        server search): the profile's settings."""
        return LoadGenSettings(
            latency_bound_ms=self.bound_ms(model),
            min_duration_s=self.loadgen_min_duration,
            min_query_count=self.loadgen_min_queries,
            target_qps=self.server_target_qps,
            search_steps=self.search_steps,
            search_precision=self.search_precision,
            searches=self.server_searches,
        )

    def llm_serving(self) -> LlmServingSettings:
        """What an ``llm_server`` point serves (``perfsuite.llm.serving``)."""
        return LlmServingSettings(
            ttft_bound_ms=self.llm_slo_ms[0], tpot_bound_ms=self.llm_slo_ms[1],
            requests=self.llm_requests, duration_s=self.llm_duration_s,
            input_tokens=self.llm_input_tokens,
            output_tokens=self.llm_output_tokens, burstiness=self.llm_burstiness,
            static_batch=self.llm_static_batch, search_steps=self.llm_search_steps,
            search_precision=self.llm_search_precision,
        )  # fmt: skip

    def protocol(self, *, counters: bool = False, sessions: int | None = None) -> MeasureProtocol:
        """The measurement protocol a point runs with (``perfsuite.execute.measure``)."""
        return MeasureProtocol(
            min_time=self.min_time,
            min_samples=self.min_samples,
            warmup_time=self.warmup_time,
            warmup_calls=self.warmup_calls,
            counters=counters,
            sessions=self.sessions if sessions is None else sessions,
        )


def parse_spark(spec: str, cores: int) -> SparkSpec | None:
    """ "none" -> None; "partition" -> one 1-CPU slot per core; "partition:2x1" -> as given."""
    if spec == "none":
        return None
    pattern, _, shape = spec.partition(":")
    if pattern not in SPARK_PATTERNS:
        raise PlanError(
            f"spark {spec!r}: unknown pattern {pattern!r}; valid: none, {', '.join(SPARK_PATTERNS)}"
        )
    if not shape:
        return SparkSpec(pattern=pattern, slots=cores, cpus_per_task=1)
    slots, _, cpus = shape.partition("x")
    counts = [int(v) for v in (slots, cpus) if v.isdigit()]
    if len(counts) != 2 or not all(1 <= c <= MAX_COUNT for c in counts):
        raise PlanError(
            f"spark {spec!r}: use <pattern>:<slots>x<cpus per task>, e.g. partition:2x1"
        )
    return SparkSpec(pattern=pattern, slots=int(slots), cpus_per_task=int(cpus))


def _union(*lists) -> list[str]:
    return list(dict.fromkeys(x for names in lists for x in names))


def _choices(what: str, values, valid) -> None:
    bad = [v for v in values if v not in valid]
    if bad:
        raise PlanError(f"unknown {what} {', '.join(map(repr, bad))}; valid: {', '.join(valid)}")


def read_toml(path) -> dict:
    try:
        return tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise PlanError(f"cannot read profile file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path}: invalid TOML: {exc}") from exc


def load_profiles(pyproject: Path | None = None, user_file: Path | None = None) -> dict:
    """Built-in profiles, overridden key by key by [tool.perfsuite.profiles] in pyproject.toml
    and then by a user's file."""
    text = importlib.resources.files("perfsuite").joinpath("profiles.toml").read_text()
    profiles = {k: dict(v) for k, v in tomllib.loads(text).items()}
    layers = []
    if pyproject is not None and pyproject.is_file():
        data = read_toml(pyproject)
        layers.append((pyproject, data.get("tool", {}).get("perfsuite", {}).get("profiles", {})))
    if user_file is not None:
        user = read_toml(user_file)
        user.pop("models", None)  # [models.NAME]: declared models (sweep.declared), no profile
        layers.append((user_file, user))
    for source, layer in layers:
        for name, values in layer.items():
            if name == "models":
                raise PlanError(f"{source}: 'models' is not a profile name; [models.NAME] "
                                "tables declare models (docs/guide/your-models.md)")  # fmt: skip
            if not isinstance(values, dict):
                raise PlanError(f"{source}: profile {name!r} must be a table")
            # a new profile starts from default's keys, not from its extra points
            default = {k: v for k, v in profiles.get("default", {}).items() if k != "also"}
            base = profiles.setdefault(name, default)
            base.update(values)
    return profiles


# Thread counts and batch sizes beyond this are typing mistakes, not experiments: 100000
# framework threads or a 100000-image batch would exhaust the host instead of measuring it.
MAX_COUNT = 4096


def _serving(name: str, raw: dict) -> dict:
    """The LoadGen keys, checked: each bad value is one line naming the key."""
    out = {}
    streams = raw["streams"]
    streams = [streams] if isinstance(streams, (int, str)) else list(streams)
    if not streams or not all(str(v).isdigit() and 1 <= int(v) <= MAX_COUNT for v in streams):
        raise PlanError(f"profile {name!r}: streams must be whole numbers from 1 to {MAX_COUNT}")
    out["streams"] = tuple(int(v) for v in streams)
    bounds = raw["latency_bound_ms"]
    if not isinstance(bounds, dict):
        raise PlanError(f"profile {name!r}: latency_bound_ms must be a table of model = ms")
    for model, ms in bounds.items():
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 < ms < math.inf:
            raise PlanError(
                f"profile {name!r}: latency_bound_ms.{model} = {ms!r} must be a number of ms > 0"
            )
    out["latency_bound_ms"] = tuple(sorted((m, float(v)) for m, v in bounds.items()))
    checks = {
        "loadgen_min_duration": (float, lambda v: 0 < v <= 86400, "seconds > 0 (up to a day)"),
        "loadgen_min_queries": (int, lambda v: 0 <= v <= 10**9, "a whole number >= 0"),
        "server_target_qps": (float, lambda v: v >= 0, "queries/s >= 0 (0: estimate)"),
        "search_steps": (int, lambda v: 1 <= v <= 64, "a whole number from 1 to 64"),
        "search_precision": (float, lambda v: 0 < v < 1, "a fraction between 0 and 1"),
        "server_searches": (int, lambda v: 1 <= v <= 99, "a whole number from 1 to 99"),
    }
    for key, (typ, ok, what) in checks.items():
        value = raw[key]
        try:
            if isinstance(value, bool) or (typ is int and value != int(value)):
                raise ValueError
            out[key] = typ(value)
        except (TypeError, ValueError):
            raise PlanError(f"profile {name!r}: {key} = {value!r} must be {what}") from None
        if not math.isfinite(out[key]) or not ok(out[key]):
            raise PlanError(f"profile {name!r}: {key} = {value!r} must be {what}")
    _check_schedule(name, out)
    return out | _llm_serving(name, raw)


def _llm_serving(name: str, raw: dict) -> dict:
    """The llm_server keys, checked: each bad value is one line naming the key."""

    def pair(key: str, typ, ok, what: str) -> tuple:
        value = raw[key]
        if (not isinstance(value, list) or len(value) != 2
                or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)
                or not ok(*value)):  # fmt: skip
            raise PlanError(f"profile {name!r}: {key} = {value!r} must be {what}")
        return tuple(typ(v) for v in value)

    out = {
        "llm_slo_ms": pair("llm_slo_ms", float, lambda a, b: 0 < a < math.inf and 0 < b < math.inf,
                           "[TTFT ms, TPOT ms], both > 0"),
        "llm_input_tokens": pair("llm_input_tokens", int, lambda a, b: 1 <= a <= b == int(b),
                                 "[fewest, most] prompt tokens, 1 <= fewest <= most"),
        "llm_output_tokens": pair("llm_output_tokens", int, lambda a, b: 2 <= a <= b == int(b),
                                  "[fewest, most] generated tokens, 2 <= fewest <= most"),
    }  # fmt: skip
    for key, low, high, typ in (("llm_requests", 2, 100000, int), ("llm_static_batch", 1, 256, int),
                                ("llm_burstiness", 0.01, 100, float),
                                ("llm_duration_s", 0.1, 3600, float),
                                ("llm_search_steps", 1, 64, int),
                                ("llm_search_precision", 0.01, 0.99, float)):  # fmt: skip
        value = raw[key]
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or (typ is int and value != int(value)) or not low <= value <= high):  # fmt: skip
            raise PlanError(f"profile {name!r}: {key} = {value!r} must be from {low} to {high}")
        out[key] = typ(value)
    return out


def _check_schedule(name: str, out: dict) -> None:
    """LoadGen builds a test's schedule up front: refuse a rate it could not hold, with the
    limit, instead of a worker growing for minutes before the first query."""
    qps, seconds = out["server_target_qps"], out["loadgen_min_duration"]
    if qps * seconds > serve.MAX_SCHEDULED_QUERIES:
        raise PlanError(
            f"profile {name!r}: server_target_qps = {qps:g} over loadgen_min_duration = "
            f"{seconds:g} s schedules {qps * seconds:,.0f} queries; LoadGen holds at most "
            f"{serve.MAX_SCHEDULED_QUERIES:,} (<= {serve.MAX_SCHEDULED_QUERIES / seconds:g}/s)"
        )


def _check_context(models, modes) -> None:
    """A decode test longer than an LLM's context cannot run: say so before measuring."""
    modes = [m for m in modes if m != LLM_SERVER]
    for model in (m for m in models if m in llm.MODELS):
        context = llm.MODELS[model].max_context
        for mode in (m for m in modes if mode_kind(m) == "decode"):
            kind, n = decode_test(mode)
            tokens = n if kind == "pp" else llm.bench.TG_PROMPT + n
            if tokens > context:
                raise PlanError(
                    f"{mode} on {model} needs {tokens} tokens of context; the model has {context}"
                )


def make_profile(name: str, raw: dict) -> Profile:
    raw = {**OPTIONAL, **raw}
    if "scenario" in raw:  # the dimension's name in the serving docs; ``mode`` in profiles
        raw["mode"] = raw.pop("scenario")
    unknown = set(raw) - set(LIST_KEYS) - set(SCALAR_KEYS) - set(OPTIONAL)
    if unknown:
        raise PlanError(
            f"profile {name!r}: unknown key(s) {sorted(unknown)}; valid: "
            f"{', '.join(LIST_KEYS + tuple(SCALAR_KEYS) + tuple(OPTIONAL))}"
        )
    missing = [k for k in LIST_KEYS + tuple(SCALAR_KEYS) if k not in raw]
    if missing:
        raise PlanError(f"profile {name!r}: missing key(s) {missing}")
    lists = {}
    for key in LIST_KEYS:
        value = raw[key]
        value = [value] if isinstance(value, (str, int)) else list(value)
        if not value:
            raise PlanError(f"profile {name!r}: {key} is empty")
        lists[key] = tuple(str(v) for v in value)
    if paths := [m for m in lists["models"] if m.endswith((".onnx", ".xml")) or "/" in m]:
        raise PlanError(f"models: {paths[0]!r} is a file; name files with --perf-model PATH")
    _choices("model", lists["models"], model_names() + list(llm.MODELS))
    _choices("framework", lists["frameworks"], _union(list(BACKENDS), llm.FRAMEWORKS))
    _choices("precision", lists["precisions"], _union(quantize.PRECISIONS, llm.PRECISIONS))
    for mode in lists["mode"]:
        try:
            mode_kind(mode)
        except ValueError as exc:
            raise PlanError(str(exc)) from None
    for t in lists["threads"]:
        if t not in ("auto", "all", "cores") and not (t.isdigit() and 1 <= int(t) <= MAX_COUNT):
            raise PlanError(
                f"threads {t!r}: use integers from 1 to {MAX_COUNT}, 'auto', 'all' or 'cores'"
            )
    for n in lists["numa_nodes"]:
        if n not in ("none", "all", *SHARDS) and not n.isdigit():
            raise PlanError(
                f"NUMA node {n!r}: use node numbers, 'all', 'none', 'shards' (a worker per "
                "node) or 'l3-shards' (a worker per L3 domain)"
            )
    spark = raw["spark"]
    spark = [spark] if isinstance(spark, str) else [str(v) for v in spark]
    if not spark:
        raise PlanError(f'profile {name!r}: spark is empty (use ["none"])')
    for spec in spark:
        parse_spark(spec, 1)
    if not isinstance(raw["icount"], bool):
        raise PlanError(f"profile {name!r}: icount must be true or false, not {raw['icount']!r}")
    for b in lists["batch"]:
        if not (b.isdigit() and 1 <= int(b) <= MAX_COUNT):
            raise PlanError(f"batch {b!r}: use integers from 1 to {MAX_COUNT}")
    scalars = {}
    for key, typ in {**SCALAR_KEYS, "spark_items": int}.items():
        try:
            scalars[key] = typ(raw[key])
        except (TypeError, ValueError) as exc:
            raise PlanError(f"profile {name!r}: {key} must be {typ.__name__}") from exc
        if typ is float and not math.isfinite(scalars[key]):
            # TOML has nan and inf; NaN passes every "<= 0" check and would mean "forever"
            raise PlanError(f"profile {name!r}: {key} = {raw[key]!r} must be a finite number")
    if any(scalars[key] <= 0 for key in ("min_time", "min_samples", "timeout", "sessions")):
        raise PlanError(
            f"profile {name!r}: min_time, min_samples, timeout and sessions must be positive"
        )
    if not 1 <= scalars["spark_items"] <= 1_000_000:
        raise PlanError(f"profile {name!r}: spark_items must be from 1 to 1000000")
    lists["batch"] = tuple(int(b) for b in lists["batch"])
    serving = _serving(name, raw)
    _check_context(lists["models"], lists["mode"])
    also = []
    if not isinstance(raw["also"], list) or not all(isinstance(x, dict) for x in raw["also"]):
        raise PlanError(f"profile {name!r}: also must be a list of tables of dimension lists")
    for i, extra in enumerate(raw["also"]):
        bad = sorted(set(extra) - {*LIST_KEYS, "scenario", "streams"})
        if bad:
            raise PlanError(
                f"profile {name!r}: also[{i}] sets {bad}; it takes only the dimensions "
                f"({', '.join(LIST_KEYS)}, streams)"
            )
        base = {k: v for k, v in raw.items() if k not in ("also", "mode", "scenario")}
        also.append(make_profile(f"{name}.also[{i}]", {**base, "mode": raw["mode"], **extra}))
    return Profile(
        name, **lists, **scalars, spark=tuple(spark), icount=raw["icount"], **serving,
        also=tuple(also),
    )  # fmt: skip


def select_profile(profiles: dict, name: str, overrides: dict) -> Profile:
    if name not in profiles:
        raise PlanError(f"unknown profile {name!r}; valid: {', '.join(profiles)}")
    raw = dict(profiles[name])
    given = {k: v for k, v in overrides.items() if v is not None}
    raw.update(given)
    if set(given) & {*LIST_KEYS, "scenario"}:  # a narrowed run runs what it names, no extras
        raw["also"] = []
    return make_profile(name, raw)


def l3_mb_of(topo: Topology) -> float:
    """The L3 in MiB for ``article_threads``; 32 (a Zen 3 CCD's) where sysfs does not say."""
    return (topo.l3_bytes or 32 << 20) / 2**20


def article_threads(physical_cores: int, model_mb: float, l3_mb: float) -> int:
    """The article's heuristic: min(physical cores x 2, model MB / (L3 MB / 2)), >= 1."""
    return max(1, min(physical_cores * 2, math.floor(model_mb / (l3_mb / 2))))


def expand(
    profile: Profile,
    topo: Topology,
    *,
    model_mb=None,
    bf16: bool = False,
    unavailable: dict | None = None,
) -> list[Point]:
    """All points of the profile on this host, each with a skip reason when it cannot run.
    model_mb(name) gives a model's weight size for threads='auto' (the article's formula);
    unavailable maps a framework to why it cannot run here (its BackendUnavailable)."""
    unavailable = unavailable or {}
    nodes = {n.node: n for n in topo.numa_nodes or ()}
    named = {"none": [None], "all": sorted(nodes) or [None], **{s: [s] for s in SHARDS}}
    node_list = [node for spec in profile.numa_nodes for node in named.get(spec) or [int(spec)]]
    physical = topo.physical_cores or len(topo.online or ()) or 1
    tpc = topo.threads_per_core or 1
    l3_mb = l3_mb_of(topo)
    per_node = {}  # node -> (why it cannot be used, its cores)
    for node in dict.fromkeys(node_list):
        if node in SHARDS:
            per_node[node] = _shard_cores(topo, SHARDS[node], tpc)
        elif node is None:
            per_node[node] = (None, physical)
        elif node not in nodes:
            why = f"NUMA node {node} does not exist on this host ({len(nodes)} node(s))"
            per_node[node] = (why, physical)
        elif not nodes[node].cpus:
            per_node[node] = (f"NUMA node {node} has no online CPUs", physical)
        else:
            per_node[node] = (None, max(1, len(nodes[node].cpus) // tpc))
    points: dict[str, Point] = {}  # by id, the first of each
    dims = (profile.models, profile.frameworks, profile.precisions, per_node)
    for model, fw, prec, node in itertools.product(*dims):
        if not _same_family(model, prec):
            continue  # a weight-only LLM precision of a CNN, an INT8 calibration of an LLM
        node_skip, cores = per_node[node]
        candidates = []
        if node in SHARDS:  # one worker per shard: the point binds none itself
            singles = _single_process(profile, model, None, cores, physical, l3_mb, model_mb)
            candidates += [_as_shards(p, SHARDS[node]) for p in singles]
        else:
            if "none" in profile.spark:
                candidates += _single_process(
                    profile, model, node, cores, physical, l3_mb, model_mb
                )
            candidates += _spark_points(profile, model, node, cores, unavailable)
        for p in candidates:
            no_loadgen = unavailable.get("loadgen") if mode_kind(p.mode) == "loadgen" else None
            why = (skip_reason(model, fw, prec, unavailable, bf16)
                   or _fixed_batch(model, p.batch) or _llm_server_runtime(p.mode, fw))  # fmt: skip
            skip = p.skip or node_skip or no_loadgen or why
            p = p.but(framework=fw, precision=prec, skip=skip)
            points.setdefault(p.id, p)
    for extra in profile.also:
        for p in expand(extra, topo, model_mb=model_mb, bf16=bf16, unavailable=unavailable):
            points.setdefault(p.id, p)
    return list(points.values())


def require_points(profile: Profile, points: list[Point]) -> list[Point]:
    """``points``, or a PlanError saying in one line why the profile plans none: a run with
    nothing to measure must not pass green."""
    if points:
        return points
    pairs = list(itertools.product(profile.models, profile.precisions))
    if not any(_same_family(m, p) for m, p in pairs):
        why = (
            f"no precision of {', '.join(profile.precisions)} applies to its models "
            f"({', '.join(profile.models)}): LLMs take {', '.join(llm.PRECISIONS)}, other "
            f"models {', '.join(quantize.PRECISIONS)}"
        )
    elif not any((mode_kind(mode) == "decode") == (m in llm.MODELS)
                 for m, mode in itertools.product(profile.models, profile.mode)):  # fmt: skip
        why = (
            f"no mode of {', '.join(profile.mode)} applies to its models "
            f"({', '.join(profile.models)}): decode tests (tg<N>, pp<N>) run only on LLMs, "
            "and LLMs run only decode tests"
        )
    else:
        why = "its dimensions leave no point"
    raise PlanError(f"profile {profile.name!r} plans nothing to measure: {why}")


def _single_process(profile, model, node, cores, physical, l3_mb, model_mb) -> list[Point]:
    out = []
    for tspec in profile.threads:
        if tspec == "auto":
            mb = model_mb(model) if model_mb else None
            counts = [article_threads(physical, mb, l3_mb)] if mb else [1]
        elif tspec == "cores":
            counts = [cores]
        elif tspec == "all":
            counts = list(range(1, cores + 1))
        else:
            counts = [int(tspec)]
        for threads, batch, mode in itertools.product(counts, profile.batch, profile.mode):
            kind = mode_kind(mode)
            if (kind == "decode") != (model in llm.MODELS):
                continue  # decode tests are for LLMs, and LLMs only run decode tests
            # one query at a time (single/multi-stream) keeps one session busy: no streams
            for streams in profile.streams if mode in ("server", "offline") else (1,):
                skip = None
                if kind == "decode" and batch > 1:  # a record must hold what was measured
                    skip = f"batch {batch}: decode tests run one sequence (batch 1) only"
                elif threads % streams:
                    skip = f"{threads} threads do not split evenly between {streams} streams"
                out.append(
                    Point(model=model, framework="", precision="", threads=threads,
                          numa_node=node, batch=batch, mode=mode, threads_spec=tspec,
                          streams=streams, skip=skip)
                )  # fmt: skip
    return out


SHARDS = {"shards": "node", "l3-shards": "l3"}  # numa_nodes values -> Point.shards


def _shard_cores(topo: Topology, by: str, tpc: int) -> tuple[str | None, int]:
    """(why the host cannot be sharded so, or None; the cores of its smallest shard)."""
    try:
        placements = placement.shards(topo, by)
    except placement.PlacementError as exc:
        return str(exc), 1
    if not placements:
        return f"no {by} shards on this host", 1
    return None, max(1, min(len(p.cpus) for p in placements) // tpc)


def _as_shards(p: Point, by: str) -> Point:
    """A single-process point as a shards point; a window mode only: a LoadGen or decode
    test drives its own process, not N of them."""
    skip = p.skip
    if mode_kind(p.mode) != "window":
        skip = skip or f"{p.mode} runs one process: shards measure latency or throughput windows"
    return p.but(shards=by, skip=skip)


def _same_family(model: str, precision: str) -> bool:
    """LLMs run fp32 and the weight-only precisions; every other model the others."""
    if model in llm.MODELS:
        return precision in llm.PRECISIONS
    return precision in quantize.PRECISIONS


def _spark_points(profile, model, node, cores, unavailable) -> list[Point]:
    """Spark points run the whole dataset (end-to-end throughput); rdd_map infers one record
    per call (the article's map), so its batch is always 1."""
    out = []
    for spec in profile.spark:
        spark = parse_spark(spec, cores)
        if spark is None:
            continue
        threads = spark.slots * spark.cpus_per_task
        skip = unavailable.get("spark")
        if not skip and threads > cores:
            where = "this host" if node is None else f"NUMA node {node}"
            skip = (
                f"spark {spark.slots}x{spark.cpus_per_task} needs {threads} CPUs; "
                f"{where} has {cores} cores"
            )
        if model in llm.MODELS:
            continue
        if models.declared(model) is not None:
            skip = skip or "Spark points run the built-in image models (declared files: not yet)"
        out += [
            Point(model=model, framework="", precision="", threads=threads, numa_node=node,
                  batch=batch, mode="throughput", threads_spec=spec, skip=skip, spark=spark)
            for batch in ((1,) if spark.pattern == "rdd_map" else profile.batch)
        ]  # fmt: skip
    return out


def skip_reason(model, fw, prec, unavailable, bf16) -> str | None:
    if model in llm.MODELS:
        return unavailable.get(fw) or llm.why_not(fw, prec, model)
    if fw in llm.GENAI:
        return f"{fw} runs the LLMs ({', '.join(llm.MODELS)}), not {model}"
    no_bf16 = quantize.NO_BF16 if prec == "bf16" and not bf16 else None
    return (
        unavailable.get(fw)
        or _no_format(model, fw, prec)
        or get_backend(fw).why_not(prec)
        or no_bf16
    )


def _llm_server_runtime(mode: str, fw: str) -> str | None:
    if mode == LLM_SERVER and fw != "openvino-genai":
        return (f"llm_server runs continuous batching on openvino-genai's "
                f"ContinuousBatchingPipeline; {fw} has none on CPU")  # fmt: skip
    return None


def _fixed_batch(model: str, batch: int) -> str | None:
    """Why a declared file cannot take ``batch`` (its first axis is fixed), or None."""
    spec = models.declared(model)
    return files.batch_problem(spec, batch) if spec else None


def _no_format(model: str, fw: str, prec: str) -> str | None:
    """Why ``fw`` at ``prec`` cannot take ``model``'s file (an IR on onnxruntime), or None."""
    fmt = models.format_of(model)
    if fmt not in get_backend(fw).formats:
        return f"{fw} cannot load an OpenVINO IR ({model} is an .xml file)"
    return quantize.why_not_format(prec, model, fmt)
