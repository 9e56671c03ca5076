"""Fleet scoring of qualification reports from many hosts of one hardware class: per metric
the fleet's median and a robust z-score (median / MAD, Iglewicz-Hoaglin's 3.5 marks an
outlier), and rules in the style of superbench's data diagnosis (a rule file: metric regex,
which way is worse, allowed deviation from the fleet median, category; a missing metric
fails). A reference for the class is the median over the hosts that pass."""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from perfsuite.records import one_line

# The rule file scores qualification metrics, and is shipped beside them (package data)
RULES = Path(__file__).with_name("rules.toml")
OUTLIER_Z = 3.5
MAD_TO_SIGMA = 1.4826


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    metrics: str
    worse: Literal["lower", "higher"]
    max_deviation: float = Field(ge=0, le=10, allow_inf_nan=False)
    category: str

    def covers(self, metric: str) -> bool:
        return re.search(self.metrics, metric) is not None


class RuleFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    rules: list[Rule] = Field(min_length=1)


class FleetError(ValueError):
    """A rule file or fleet that cannot be scored (exit 2)."""


def load_rules(path: Path | None = None) -> list[Rule]:
    path = Path(path) if path else RULES
    try:
        data = tomllib.loads(path.read_text())
        for r in data.get("rules", []):
            re.compile(r.get("metrics", ""))
        return RuleFile.model_validate(data).rules
    except OSError as exc:
        raise FleetError(f"rule file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, re.error) as exc:
        raise FleetError(f"rule file {path}: {exc}") from None
    except ValidationError as exc:
        raise FleetError(f"rule file {path}: {one_line(exc)}") from None


def metrics(measurements: dict) -> dict[str, float]:
    """The numbers a qualification measured, flattened (``bandwidth_gbs.0``, ``fma_per_core``)."""
    out: dict[str, float] = {}
    for key, value in measurements.items():
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for k, v in items:
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[key if k is None else f"{key}.{k}"] = float(v)
    return out


@dataclass
class Failure:
    metric: str
    rule: str
    category: str
    value: float | None  # None (and deviation None): the host did not report the metric
    fleet_median: float
    deviation: float | None = None


@dataclass
class HostScore:
    host: str
    hardware_class: str
    verdict: str  # PASS | FAIL
    failures: list[Failure] = field(default_factory=list)  # in report order
    outliers: list[str] = field(default_factory=list)
    z: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """The JSON form: a z that is infinite (most hosts identical, this one not; it is in
        ``outliers``) is null, since JSON has no infinity."""
        out = asdict(self)
        out["z"] = {m: z if math.isfinite(z) else None for m, z in self.z.items()}
        return out


def robust_z(values: np.ndarray) -> np.ndarray:
    centre = np.median(values)
    mad = np.median(np.abs(values - centre)) * MAD_TO_SIGMA
    if mad == 0:  # most hosts identical: any other value is infinitely far out
        z = np.zeros_like(values, dtype=float)
        z[values > centre], z[values < centre] = np.inf, -np.inf
        return z
    return (values - centre) / mad


def score(hosts: dict[str, dict], rules: list[Rule], hardware_class: str) -> list[HostScore]:
    """``hosts``: host name -> flattened metrics. Every metric some rule covers and some host
    reported is judged on every host."""
    names = sorted(hosts)
    if len(names) < 2:
        raise FleetError(f"fleet of {hardware_class}: {len(names)} host(s); scoring needs 2+")
    judged = sorted({m for h in hosts.values() for m in h if any(r.covers(m) for r in rules)})
    scores = {n: HostScore(n, hardware_class, "PASS") for n in names}
    for m in judged:
        rule = next(r for r in rules if r.covers(m))
        have = [n for n in names if m in hosts[n]]
        values = np.array([hosts[n][m] for n in have])
        centre = float(np.median(values))
        missing = Failure(m, rule.name, rule.category, None, centre)
        for n, z in zip(have, robust_z(values), strict=True):
            scores[n].z[m] = float(z)
            if abs(z) > OUTLIER_Z:
                scores[n].outliers.append(m)
            dev = hosts[n][m] / centre - 1 if centre else 0.0
            bad = -dev if rule.worse == "lower" else dev
            if bad > rule.max_deviation:
                scores[n].failures.append(replace(missing, value=hosts[n][m], deviation=dev))
        for n in names:
            if m not in hosts[n]:
                scores[n].failures.append(missing)
    for s in scores.values():
        s.verdict = "FAIL" if s.failures else "PASS"
    return [scores[n] for n in names]
