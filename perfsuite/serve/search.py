"""Find the highest Poisson rate LoadGen's Server scenario calls VALID.

Every step is a full LoadGen server run (its own log directory), because only LoadGen's
verdict (p99 bound *and* early stopping) decides. Rates grow (or shrink) geometrically until
a VALID/INVALID bracket is found, then the bracket is bisected geometrically.

Early stopping needs enough queries at any rate (about 460 at p99 with no query over the
bound), so settings.min_query_count should be several hundred; otherwise low rates come out
INVALID for want of queries, not for latency.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfsuite.serve.loadgen import (
    MAX_SCHEDULED_QUERIES,
    ScenarioRun,
    ScenarioSettings,
    SettingsError,
    Worker,
    run_scenario,
)

_GROWTH = 2.0
# Poisson arrivals queue up well below capacity: start the search a little under it.
_START_FRACTION = 0.7


@dataclass(frozen=True)
class ServerSearch:
    steps: list[ScenarioRun]  # every run in order, INVALID ones with LoadGen's reasons
    best: ScenarioRun | None  # the highest VALID rate
    converged: bool  # bracket within rel_precision, or VALID at hi_qps
    bracket: tuple[float | None, float | None]  # (highest VALID qps, lowest INVALID qps)

    @property
    def why_no_best(self) -> str:
        """One line: why no rate was VALID (LoadGen's reasons at the lowest rate tried)."""
        if self.best is not None or not self.steps:
            return ""
        lowest = min(self.steps, key=lambda run: run.settings.target_qps)
        reasons = "; ".join(lowest.reasons) or "no reason in the summary"
        return f"INVALID even at {lowest.settings.target_qps:.4g} qps: {reasons}"


def estimate_capacity_qps(workers: Sequence[Worker], n_samples: int, probes: int = 16) -> float:
    """Samples/s the workers sustain together: workers / mean single-sample service time of
    the first worker (after one warm-up call)."""
    worker = workers[0]
    worker([0])
    started = time.perf_counter()
    for i in range(probes):
        worker([(i + 1) % n_samples])
    mean_s = (time.perf_counter() - started) / probes
    return len(workers) / max(mean_s, 1e-9)


def search_server_rate(
    settings: ScenarioSettings,
    workers: Sequence[Worker],
    n_samples: int,
    log_root: Path,
    *,
    lo_qps: float | None = None,
    hi_qps: float | None = None,
    max_steps: int = 8,
    rel_precision: float = 0.05,
) -> ServerSearch:
    """Start at settings.target_qps (else ~0.7x the estimated capacity); lo_qps/hi_qps bound
    the rates tried."""
    if settings.scenario != "server":
        raise SettingsError(
            f"scenario: must be 'server' for a rate search (got {settings.scenario!r})"
        )
    if not (isinstance(max_steps, int) and max_steps >= 1):
        raise SettingsError(f"max_steps: must be an integer >= 1 (got {max_steps!r})")
    if not (math.isfinite(rel_precision) and rel_precision > 0):
        raise SettingsError(f"rel_precision: must be a finite number > 0 (got {rel_precision!r})")
    lo_limit = lo_qps if lo_qps is not None else 0.0
    hi_limit = hi_qps if hi_qps is not None else math.inf
    hi_limit = min(hi_limit, MAX_SCHEDULED_QUERIES / settings.min_duration_s)  # bounded memory
    if not (lo_limit >= 0 and hi_limit > 0 and hi_limit >= lo_limit):
        raise SettingsError(
            f"lo_qps/hi_qps: must satisfy 0 <= lo_qps <= hi_qps, hi_qps > 0 "
            f"(got {lo_qps!r}, {hi_qps!r})"
        )

    rate = settings.target_qps
    if rate is None:
        rate = _START_FRACTION * estimate_capacity_qps(workers, n_samples)
    rate = min(max(rate, lo_limit), hi_limit)

    steps: list[ScenarioRun] = []
    valid_qps: float | None = None
    invalid_qps: float | None = None
    best: ScenarioRun | None = None
    converged = False
    for k in range(max_steps):
        run = run_scenario(
            replace(settings, target_qps=rate),
            workers,
            n_samples,
            Path(log_root) / f"step-{k}-{rate:.1f}",
        )
        steps.append(run)
        if run.valid:
            valid_qps, best = rate, run
        else:
            invalid_qps = rate
        if valid_qps is not None and invalid_qps is not None:
            if invalid_qps <= valid_qps:
                # Noise: a higher rate passed before. Trust the latest verdict at this rate.
                if run.valid:
                    invalid_qps = None
                else:
                    valid_qps, best = _highest_valid_below(steps, rate)
            if valid_qps is not None and invalid_qps is not None:
                if invalid_qps / valid_qps - 1 <= rel_precision:
                    converged = True
                    break
                rate = math.sqrt(valid_qps * invalid_qps)
                continue
        if run.valid:
            if rate >= hi_limit:
                converged = True  # VALID at the cap: nothing higher to look for
                break
            rate = min(rate * _GROWTH, hi_limit)
        else:
            if rate <= lo_limit:
                break  # INVALID at the floor: nothing lower to try
            rate = max(rate / _GROWTH, lo_limit)
    return ServerSearch(
        steps=steps, best=best, converged=converged, bracket=(valid_qps, invalid_qps)
    )


def _highest_valid_below(
    steps: list[ScenarioRun], rate: float
) -> tuple[float | None, ScenarioRun | None]:
    below = [run for run in steps if run.valid and run.settings.target_qps < rate]
    if not below:
        return None, None
    run = max(below, key=lambda r: r.settings.target_qps)
    return run.settings.target_qps, run
