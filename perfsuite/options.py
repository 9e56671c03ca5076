"""Every option the two faces share, defined once: the pytest plugin spells it ``--perf-<name>``,
each ``perfsuite`` verb that takes it ``--<name>`` (pytest-benchmark's ``add_global_options``
pattern). ``OPTIONS`` is the table; ``add_options(add, face)`` registers a face's options with
``parser.addoption`` or ``ArgumentParser.add_argument`` (both take the same keyword
arguments); ``option_table()`` lists each option per face for the reference docs.

An option's ``kwargs`` hold what every face shares (its type, choices, help); ``per_face``
holds only what one face sets differently, such as a verb's own default and the help that
states it. Options of a single verb stay in that verb's module (``perfsuite/cli/``)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfsuite.execute.executors import DEFAULT as DEFAULT_EXECUTOR
from perfsuite.execute.executors import EXECUTORS

PLUGIN = "plugin"  # the face name of the pytest plugin; a CLI face is named by its verb


# --------------------------------------------------------------------------- value parsers
def csv(valid_hint: str) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {valid_hint}")
        return items

    return parse


def _convert(text: str, to: Callable[[str], Any], what: str):
    try:
        return to(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def _number(text: str) -> float:
    value = _convert(text, float, "a number")
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def positive_float(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be > 0")
    return value


def fraction(text: str) -> float:
    """A probability such as alpha: strictly between 0 and 1."""
    value = _number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (exclusive)")
    return value


def positive_int(text: str) -> int:
    value = _convert(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


# --------------------------------------------------------------------------- the table
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

    @property
    def faces(self) -> tuple[str, ...]:
        return ((PLUGIN,) if self.plugin else ()) + self.verbs

    def flags(self, face: str) -> tuple[str, ...]:
        if face == PLUGIN:
            return (f"--perf-{self.name}",)
        return (f"--{self.name}", *self.aliases)

    def kwargs_for(self, face: str) -> dict[str, Any]:
        return {**self.kwargs, **self.per_face.get(face, {})}


def _profile_default(what: str) -> dict[str, Any]:
    return {"default": None, "help": f"{what} (default: the profile's)"}


FAIL_ON = ("regression", "unstable", "never")
SWEEP_VERBS = ("ab",)  # verbs that select sweep points as the plugin does
FLEET_VERBS = ("qualify", "sweep")  # verbs that run on the hosts of a Spark cluster


def _fail_on_help(default: str) -> str:
    return (
        "fail on confirmed regressions, also on unstable/incomparable, or never "
        f"(default: {default})"
    )


def _list(name: str, hint: str, what: str) -> Option:
    """A comma-separated sweep dimension that overrides the profile's."""
    return Option(name, {"type": csv(hint), **_profile_default(what)}, verbs=SWEEP_VERBS)


OPTIONS: tuple[Option, ...] = (
    Option(
        "profile",
        {"default": "default", "help": "sweep profile (default: default)"},
        verbs=("ab", "sweep"),
        per_face={
            PLUGIN: {
                "default": None,
                "help": "sweep profile (default: smoke; default under --benchmark-only)",
            }
        },
    ),
    Option(
        "config",
        {
            "type": Path,
            "default": None,
            "help": "TOML file overriding/adding profiles (default: none)",
        },
        verbs=("ab", "sweep"),
    ),
    _list("models", "model names", "models, comma-separated"),
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
    _list("numa-nodes", "nodes", "node numbers, 'all', or 'none' for no binding"),
    _list("batch", "batch sizes", "batch sizes"),
    Option(
        "mode",
        {
            "choices": ("latency", "throughput"),
            **_profile_default("latency (one request at a time) or throughput"),
        },
        verbs=SWEEP_VERBS,
    ),
    Option(
        "min-time",
        {"type": positive_float, **_profile_default("seconds of measurement per point")},
        verbs=SWEEP_VERBS,
        per_face={"ab": _profile_default("seconds per measurement with --turns 0")},
    ),
    Option(
        "sessions",
        {
            "type": positive_int,
            **_profile_default(
                "fresh framework sessions per point, measured in turn and pooled; their "
                "medians show run-to-run spread to the gate"
            ),
        },
    ),
    Option(
        "spark",
        {
            "type": csv("Spark specs"),
            **_profile_default(
                "Spark points: 'none' (single-process points), 'partition' or 'rdd_map' (one "
                "1-CPU slot per core), or '<pattern>:<slots>x<cpus per task>'"
            ),
        },
    ),
    Option(
        "spark-items",
        {"type": positive_int, **_profile_default("images in a Spark point's dataset")},
    ),
    Option(
        "icount",
        {
            "action": "store_true",
            "default": None,
            "help": "also count the kernel points' instructions under valgrind (exact; saved in "
            "the baseline and gated at 1%%); the profile's `icount` key turns it on too",
        },
    ),
    Option(
        "spark-master",
        {
            "default": None,
            "metavar": "URL",
            "help": "Spark master URL for Spark points: spark://host:7077, yarn, k8s://... "
            "(default: $PERFSUITE_SPARK_MASTER, else local[<cores>])",
        },
        verbs=FLEET_VERBS,
        per_face={
            "qualify": {
                "help": "qualify the executor hosts of this Spark cluster instead of this "
                "machine (spark://host:7077, yarn, k8s://...) (default: off)"
            },
            "sweep": {"required": True, "help": "the cluster: spark://host:7077, yarn, k8s://..."},
        },
    ),
    Option(
        "executor",
        {
            "choices": EXECUTORS,  # the registry itself: checked and listed when used
            "default": DEFAULT_EXECUTOR,
            "help": "how points run: a fresh process for each session of every point (worker), "
            "in the pytest process (in-process, for debugging; cannot bind), or worker for "
            f"NUMA-bound points only (auto) (default: {DEFAULT_EXECUTOR})",
        },
    ),
    Option(
        "timeout",
        {"type": positive_float, **_profile_default("seconds before a worker point is killed")},
    ),
    Option(
        "out",
        {
            "type": Path,
            "default": Path("perf-results"),
            "help": "directory for result records (default: perf-results)",
        },
        verbs=("ab", "sweep"),
        per_face={
            "sweep": {
                "default": Path("perf-results") / "fleet",
                "help": "a run directory per host goes under OUT/<host>/ "
                "(default: perf-results/fleet)",
            }
        },
    ),
    Option(
        "baseline",
        {
            "default": "baselines",
            "metavar": "DIR_OR_URL",
            "help": "where baselines are kept: a directory (<dir>/<hardware-class>/<profile>.json)"
            ", file://DIR, sqlite:///FILE or postgresql+psycopg://... (default: baselines)",
        },
        verbs=("qualify",),
        aliases=("--baselines",),
        per_face={"qualify": {"help": "baseline directory for --inference (default: baselines)"}},
    ),
    Option(
        "save-baseline",
        {
            "action": "store_true",
            "default": False,
            "help": "add this run's points to the baseline (refuses to replace entries) "
            "(default: off)",
        },
    ),
    Option(
        "update-baseline",
        {
            "action": "store_true",
            "default": False,
            "help": "with --perf-save-baseline: replace existing entries (default: off)",
        },
    ),
    Option(
        "add-baseline-run",
        {
            "action": "store_true",
            "default": False,
            "help": "with --perf-save-baseline: add this run to existing entries' run history, "
            "from which the gate learns between-run noise (default: off)",
        },
    ),
    # The gate's options: defaults None so that [tool.perfsuite.gate] applies unless given.
    Option(
        "fail-on",
        {
            "choices": FAIL_ON,
            "default": None,
            "help": _fail_on_help("regression under --benchmark-only, else never"),
        },
        verbs=("compare",),
        per_face={"compare": {"default": "regression", "help": _fail_on_help("regression")}},
    ),
    Option(
        "threshold",
        {
            "type": positive_float,
            "default": None,
            "help": "practical threshold, relative (default: [tool.perfsuite.gate] threshold, "
            "or 0.05)",
        },
        verbs=("compare", "ab"),
        per_face={
            "ab": {
                "default": 0.02,
                "help": "relative change that counts; paired rounds cancel host drift, so it "
                "can be tighter than the baseline gate's (default: 0.02)",
            }
        },
    ),
    Option(
        "alpha",
        {
            "type": fraction,
            "default": None,
            "help": "family-wise significance level, Holm (default: [tool.perfsuite.gate] "
            "alpha, or 0.01)",
        },
        verbs=("compare", "ab"),
        per_face={"ab": {"default": 0.01, "help": "family-wise error rate, Holm (default: 0.01)"}},
    ),
    Option(
        "store",
        {
            "default": None,
            "metavar": "URL",
            "help": "results history database, a SQLAlchemy URL: sqlite:///FILE or "
            "postgresql+psycopg://USER@HOST/DB (default: $PERFSUITE_STORE, else a SQLite file "
            "in the user's data directory)",
        },
        verbs=("qualify", "sweep", "db"),
    ),
    Option(
        "counters",
        {
            "action": "store_true",
            "default": False,
            "help": "perf stat (cycles, instructions, cache misses) around each measurement "
            "window; unsupported events are recorded with the reason (default: off)",
        },
    ),
    Option(
        "plan",
        {
            "action": "store_true",
            "default": False,
            "help": "print the sweep plan (points and skip reasons) and exit",
        },
    ),
    Option(
        "hosts",
        {"type": int, "default": 2, "help": "hosts to run on, one task each (default: 2)"},
        plugin=False,
        verbs=FLEET_VERBS,
    ),
    Option(
        "host-cores",
        {
            "type": int,
            "default": 1,
            "help": "cores of each executor; a task takes them all so no two tasks share a "
            "host (spark.task.cpus) (default: 1)",
        },
        plugin=False,
        verbs=FLEET_VERBS,
    ),
)


def add_options(add: Callable[..., Any], face: str) -> None:
    """Register ``face``'s options, in table order: ``add`` is pytest's ``group.addoption``
    (face ``PLUGIN``) or a verb's ``ArgumentParser.add_argument`` (face: the verb)."""
    for option in OPTIONS:
        if face in option.faces:
            add(*option.flags(face), **option.kwargs_for(face))


@dataclass(frozen=True)
class OptionRow:
    """One option as one face takes it, for the reference docs. ``help`` is as written for
    argparse (``%%`` for a percent sign)."""

    name: str
    face: str  # "plugin", or the CLI verb
    flags: tuple[str, ...]
    type: str | None  # the value parser's name (positive_float, parse for a csv list, Path)
    choices: tuple[str, ...] | None
    action: str | None  # store_true for a flag
    default: Any
    required: bool
    help: str


def option_table() -> list[OptionRow]:
    """Every shared option, once per face that takes it: the plugin's row first, then the
    verbs' in the order they are listed."""
    rows = []
    for option in OPTIONS:
        for face in option.faces:
            kw = option.kwargs_for(face)
            kind = kw.get("type")
            rows.append(
                OptionRow(
                    name=option.name,
                    face=face,
                    flags=option.flags(face),
                    type=getattr(kind, "__name__", None),
                    choices=tuple(kw["choices"]) if "choices" in kw else None,
                    action=kw.get("action"),
                    default=kw.get("default"),
                    required=bool(kw.get("required", False)),
                    help=kw["help"],
                )
            )
    return rows
