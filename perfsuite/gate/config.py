"""The gate's configuration, read the same way by the plugin and by ``perfsuite compare``:
``[tool.perfsuite.gate]`` of a TOML file (alpha, threshold, cv_limit, burst_threshold,
burst_fraction, bootstrap_resamples, seed, rate_threshold, thresholds = {"id-glob" = value}),
then the command line's --threshold/--alpha. Same inputs, same verdicts, whichever face runs
them."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

from perfsuite.gate.statistics import GateConfig


class GateConfigError(ValueError):
    """A gate configuration that cannot be used; the message names the file and key."""


def read_gate_table(path: Path) -> dict:
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise GateConfigError(f"cannot read gate configuration {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise GateConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("perfsuite", {}).get("gate", {})
    if not isinstance(table, dict):
        raise GateConfigError(f"{path}: [tool.perfsuite.gate] must be a table")
    return dict(table)


def load_gate_config(
    path: Path | None, threshold: float | None = None, alpha: float | None = None
) -> GateConfig:
    """GateConfig from ``path`` (None or a missing pyproject: defaults), then overrides."""
    values = read_gate_table(path) if path is not None else {}
    known = {f.name for f in dataclasses.fields(GateConfig)}
    if unknown := set(values) - known:
        raise GateConfigError(
            f"{path}: unknown [tool.perfsuite.gate] key(s) {sorted(unknown)}; "
            f"valid: {', '.join(sorted(known))}"
        )
    values.update({k: v for k, v in (("threshold", threshold), ("alpha", alpha)) if v is not None})
    try:
        return GateConfig(**values)
    except ValueError as exc:
        raise GateConfigError(f"{path or 'gate options'}: {exc}") from None
