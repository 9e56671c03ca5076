"""Every option the two faces share, defined once: the pytest plugin spells it ``--perf-<name>``,
each ``perfsuite`` verb that takes it ``--<name>`` (pytest-benchmark's ``add_global_options``
pattern): ``OPTIONS`` is the table.

An option's ``kwargs`` hold what every face shares (its type, choices, help); ``per_face``
holds only what one face sets differently, such as a verb's own default and the help that
states it. Options of a single verb stay in that verb's module (``perfsuite/cli/``)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from perfsuite.execute.executors import DEFAULT as DEFAULT_EXECUTOR
from perfsuite.execute.executors import EXECUTORS
from perfsuite.writing import NotWritable, check_writable_dir

PLUGIN = "plugin"  # the face name of the pytest plugin; a CLI face is named by its verb


def csv(valid_hint: str) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {valid_hint}")
        return items

    return parse


def _checked(to: Callable[[str], Any], what: str, ok: Callable[[Any], bool], must: str):
    """A parser: ``to(text)`` (else "is not ``what``"), finite and ``ok`` (else "must be ...")."""

    def parse(text: str):
        try:
            value = to(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if to is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if not ok(value):
            raise argparse.ArgumentTypeError(f"{text!r} must be {must}")
        return value

    return parse


positive_float = _checked(float, "a number", lambda v: v > 0, "> 0")
fraction = _checked(float, "a number", lambda v: 0 < v < 1, "between 0 and 1 (exclusive)")  # alpha
positive_int = _checked(int, "a whole number", lambda v: v >= 1, ">= 1")


def store_url(text: str) -> str:
    """A store URL: an empty one is an error, not silently the default store."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty URL (leave the option out for the default)")
    return text


def output_file(text: str) -> Path:
    """A file to write, checked before anything is measured: not empty, not a directory,
    its folder creatable and writable. ``-`` is standard output."""
    if text == "-":
        return Path("-")
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    try:
        check_writable_dir(path.parent, "its folder")
    except NotWritable as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return path


def output_dir(text: str) -> Path:
    """A directory to write into, checked as ``output_file`` is."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path")
    try:
        check_writable_dir(text, "")
    except NotWritable as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return Path(text)


def dims_pairs(text: str) -> dict[str, int]:
    """``--perf-dims batch=1,sequence=128``: values for symbolic dimensions."""
    out = {}
    for item in (t.strip() for t in text.split(",") if t.strip()):
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise argparse.ArgumentTypeError(f"{item!r}: use name=N with N >= 1, comma-separated")
        out[name.strip()] = int(value)
    if not out:
        raise argparse.ArgumentTypeError("expected name=N pairs, comma-separated")
    return out


@dataclass(frozen=True)
class Option:
    """One option. ``plugin``: the plugin takes it as ``--perf-<name>``; ``verbs``: the CLI
    verbs that take it as ``--<name>`` (and as each of ``aliases``)."""

    name: str
    kwargs: Mapping[str, Any]
    plugin: bool = True
    verbs: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    per_face: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    profile_key: bool = False  # overrides the profile key of its name ("_" for "-")

    @property
    def faces(self) -> tuple[str, ...]:
        return ((PLUGIN,) if self.plugin else ()) + self.verbs

    def flags(self, face: str) -> tuple[str, ...]:
        if face == PLUGIN:
            return (f"--perf-{self.name}",)
        return (f"--{self.name}", *self.aliases)


def _option(name: str, **kwargs: Any) -> Option:
    """An option from ``Option``'s fields and ``add_argument``'s keyword arguments (the rest);
    its default is None unless given."""
    own = {f.name: kwargs.pop(f.name) for f in fields(Option) if f.name in kwargs}
    return Option(name, {"default": None, **kwargs}, **own)


def _profile_default(what: str) -> dict[str, Any]:
    return {"default": None, "help": f"{what} (default: the profile's)"}


def _profiled(name: str, what: str, **kwargs: Any) -> Option:
    """An option that overrides the profile's key, which it keeps by default."""
    return _option(name, profile_key=True, **_profile_default(what), **kwargs)


def _flag(name: str, text: str) -> Option:
    """An on/off option of the plugin, off by default."""
    return _option(name, action="store_true", default=False, help=text)


FAIL_ON = ("regression", "unstable", "never")
FAIL_ON_HELP = (
    "fail on confirmed regressions, also on unstable/incomparable, or never (default: {})"
)
SWEEP_VERBS = ("ab",)  # verbs that select sweep points as the plugin does
FLEET_VERBS = ("qualify", "sweep")  # verbs that run on the hosts of a Spark cluster


def _list(name: str, hint: str, what: str) -> Option:
    """A comma-separated sweep dimension that overrides the profile's."""
    return _profiled(name, what, type=csv(hint), verbs=SWEEP_VERBS)


OPTIONS: tuple[Option, ...] = (
    _option(
        "profile",
        default="default",
        help="sweep profile (default: default)",
        verbs=("ab", "sweep"),
        per_face={
            PLUGIN: {
                "default": None,
                "help": "sweep profile (default: smoke; default under --benchmark-only)",
            }
        },
    ),
    _option(
        "config",
        type=Path,
        help="TOML file overriding/adding profiles (default: none)",
        verbs=("ab", "sweep"),
    ),
    _list("models", "model names", "models, comma-separated"),
    _option(
        "model",
        action="append",
        metavar="PATH",
        help="measure this model file instead of the profile's models (repeatable): an .onnx, "
        "an OpenVINO IR .xml or an exported folder, named by its stem",
        verbs=SWEEP_VERBS,
    ),
    _option(
        "dims",
        type=dims_pairs,
        metavar="NAME=N,...",
        help="values of the symbolic dimensions of the --perf-model files (e.g. sequence=128)",
        verbs=SWEEP_VERBS,
    ),
    _list("frameworks", "frameworks", "onnxruntime,openvino"),
    _list(
        "precisions",
        "precisions",
        "fp32,int8_dynamic,int8_static,int8_static_rr,int8_nncf,bf16",
    ),
    _list(
        "threads",
        "thread counts",
        "numbers, 'auto' (the article's formula), 'all' (1..cores), 'cores'",
    ),
    _list(
        "numa-nodes",
        "nodes",
        "node numbers, 'all', 'none' for no binding, 'shards' (a bound worker per node, "
        "throughput summed) or 'l3-shards' (one per L3 domain)",
    ),
    _list("batch", "batch sizes", "batch sizes"),
    _list(
        "mode",
        "modes",
        "latency, throughput, LoadGen's single_stream, multi_stream, server, offline, or "
        "llama-bench's pp<N>/tg<N> (LLM models)",
    ),
    _profiled(
        "min-time",
        "seconds of measurement per point",
        type=positive_float,
        verbs=SWEEP_VERBS,
        per_face={"ab": _profile_default("seconds per measurement with --turns 0")},
    ),
    _profiled(
        "sessions",
        "fresh framework sessions per point, measured in turn and pooled; their medians show "
        "run-to-run spread to the gate",
        type=positive_int,
    ),
    _profiled(
        "spark",
        "Spark points: 'none' (single-process points), 'partition' or 'rdd_map' (one 1-CPU "
        "slot per core), or '<pattern>:<slots>x<cpus per task>'",
        type=csv("Spark specs"),
    ),
    _profiled("spark-items", "images in a Spark point's dataset", type=positive_int),
    _option(
        "icount",
        profile_key=True,
        action="store_true",
        help="also count the kernel points' instructions under valgrind (exact; saved in "
        "the baseline and gated at 1%%); the profile's `icount` key turns it on too",
    ),
    _option(
        "spark-master",
        metavar="URL",
        help="Spark master URL for Spark points: spark://host:7077, yarn, k8s://... "
        "(default: $PERFSUITE_SPARK_MASTER, else local[<cores>])",
        verbs=FLEET_VERBS,
        per_face={
            "qualify": {
                "help": "qualify the executor hosts of this Spark cluster instead of this "
                "machine (spark://host:7077, yarn, k8s://...) (default: off)"
            },
            "sweep": {"required": True, "help": "the cluster: spark://host:7077, yarn, k8s://..."},
        },
    ),
    _option(
        "executor",
        choices=EXECUTORS,  # the registry itself: checked and listed when used
        default=DEFAULT_EXECUTOR,
        help="how points run: a fresh process for each session of every point (worker), "
        "in the pytest process (in-process, for debugging; cannot bind), or worker for "
        f"NUMA-bound points only (auto) (default: {DEFAULT_EXECUTOR})",
    ),
    _profiled("timeout", "seconds before a worker point is killed", type=positive_float),
    _option(
        "out",
        type=Path,  # checked before measuring: the plugin's _check_outputs, the verbs' own
        default=Path("perf-results"),
        help="directory for result records (default: perf-results)",
        verbs=("ab", "sweep"),
        per_face={
            "sweep": {
                "default": Path("perf-results") / "fleet",
                "help": "a run directory per host goes under OUT/<host>/ "
                "(default: perf-results/fleet)",
            }
        },
    ),
    _option(
        "baseline",
        default="baselines",
        metavar="DIR_OR_URL",
        help="where baselines are kept: a directory (<dir>/<hardware-class>/<profile>.json)"
        ", file://DIR, sqlite:///FILE or postgresql+psycopg://... (default: baselines)",
        verbs=("qualify",),
        aliases=("--baselines",),
        per_face={"qualify": {"help": "baseline directory for --inference (default: baselines)"}},
    ),
    _flag(
        "save-baseline",
        "add this run's points to the baseline (refuses to replace entries) (default: off)",
    ),
    _flag(
        "update-baseline",
        "with --perf-save-baseline: replace existing entries (default: off)",
    ),
    _flag(
        "add-baseline-run",
        "with --perf-save-baseline: add this run to existing entries' run history, "
        "from which the gate learns between-run noise (default: off)",
    ),
    # The gate's options: defaults None so that [tool.perfsuite.gate] applies unless given.
    _option(
        "fail-on",
        choices=FAIL_ON,
        help=FAIL_ON_HELP.format("regression under --benchmark-only, else never"),
        verbs=("compare",),
        per_face={"compare": {"default": "regression", "help": FAIL_ON_HELP.format("regression")}},
    ),
    _option(
        "threshold",
        type=positive_float,
        help="practical threshold, relative (default: [tool.perfsuite.gate] threshold, or 0.05)",
        verbs=("compare", "ab"),
        per_face={
            "ab": {
                "default": 0.02,
                "help": "relative change that counts; paired rounds cancel host drift, so it "
                "can be tighter than the baseline gate's (default: 0.02)",
            }
        },
    ),
    _option(
        "alpha",
        type=fraction,
        help="family-wise significance level, Holm (default: [tool.perfsuite.gate] alpha, or 0.01)",
        verbs=("compare", "ab"),
        per_face={"ab": {"default": 0.01, "help": "family-wise error rate, Holm (default: 0.01)"}},
    ),
    _option(
        "store",
        type=store_url,
        metavar="URL",
        help="results history database, a SQLAlchemy URL: sqlite:///FILE or "
        "postgresql+psycopg://USER@HOST/DB (default: $PERFSUITE_STORE, else a SQLite file "
        "in the user's data directory)",
        verbs=("qualify", "sweep", "db"),
    ),
    *(
        _option(
            name,
            metavar=metavar,
            help=f"the {name} this run measured, recorded in its summary and results "
            f"(default: {default})",
        )
        for name, metavar, default in (
            ("commit", "SHA", "$GITHUB_SHA in Actions, else git's HEAD"),
            ("branch", "NAME", "$GITHUB_HEAD_REF or $GITHUB_REF_NAME, else git's branch"),
            ("repository", "URL", "$GITHUB_REPOSITORY, else git's origin"),
        )
    ),
    _flag(
        "counters",
        "perf stat (cycles, instructions, cache misses) around each measurement "
        "window; unsupported events are recorded with the reason (default: off)",
    ),
    _flag("plan", "print the sweep plan (points and skip reasons) and exit"),
    _option(
        "hosts",
        type=int,
        default=2,
        help="hosts to run on, one task each (default: 2)",
        plugin=False,
        verbs=FLEET_VERBS,
    ),
    _option(
        "host-cores",
        type=int,
        default=1,
        help="cores of each executor; a task takes them all so no two tasks share a "
        "host (spark.task.cpus) (default: 1)",
        plugin=False,
        verbs=FLEET_VERBS,
    ),
)


def add_options(add: Callable[..., Any], face: str) -> None:
    """Register ``face``'s options, in table order: ``add`` is pytest's ``group.addoption``
    (face ``PLUGIN``) or a verb's ``ArgumentParser.add_argument`` (face: the verb)."""
    for option in OPTIONS:
        if face in option.faces:
            add(*option.flags(face), **{**option.kwargs, **option.per_face.get(face, {})})


def profile_overrides(get: Callable[[str], Any], face: str) -> dict[str, Any]:
    """The profile keys ``face``'s options override, each read with ``get(key)`` (None keeps
    the profile's value)."""
    keys = [o.name.replace("-", "_") for o in OPTIONS if o.profile_key and face in o.faces]
    return {key: get(key) for key in keys}
