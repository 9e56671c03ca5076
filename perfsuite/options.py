"""Option definitions shared by the two faces, the pytest plugin and the ``perfsuite`` CLI
(pytest-benchmark's ``add_global_options`` pattern): one parser per kind of value and one
definition of each gate option, so ``--perf-threshold`` and ``perfsuite compare --threshold``
cannot drift apart. Both ``parser.addoption`` and ``ArgumentParser.add_argument`` take
these keyword arguments."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def csv(valid_hint: str) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {valid_hint}")
        return items

    return parse


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
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
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


FAIL_ON = ("regression", "unstable", "never")


def add_gate_options(add: Callable, prefix: str, fail_on_default: str | None) -> None:
    """The gate's options under ``prefix`` ("--perf-" for pytest, "--" for the CLI). Defaults
    are None so that [tool.perfsuite.gate] applies unless an option is given."""
    add(
        f"{prefix}fail-on",
        choices=FAIL_ON,
        default=fail_on_default,
        help="fail on confirmed regressions, also on unstable/incomparable, or never "
        f"(default: {fail_on_default or 'regression under --benchmark-only, else never'})",
    )
    add(
        f"{prefix}threshold",
        type=positive_float,
        default=None,
        help="practical threshold, relative (default: [tool.perfsuite.gate] threshold, or 0.05)",
    )
    add(
        f"{prefix}alpha",
        type=fraction,
        default=None,
        help="family-wise significance level, Holm (default: [tool.perfsuite.gate] alpha, or 0.01)",
    )


def add_store_option(add: Callable, prefix: str) -> None:
    """The results history's location: ``--perf-store`` (plugin), ``--store`` (perfsuite db)."""
    add(
        f"{prefix}store",
        default=None,
        metavar="URL",
        help="results history database, a SQLAlchemy URL: sqlite:///FILE or "
        "postgresql+psycopg://USER@HOST/DB (default: $PERFSUITE_STORE, else a SQLite file in "
        "the user's data directory)",
    )
