"""Find the highest Poisson rate LoadGen's Server scenario calls VALID.

Every step is a full LoadGen server run (its own log directory), because only LoadGen's
verdict (p99 bound *and* early stopping) decides. The rates tried lie on one grid anchored at
1 query/s, (1 + rel_precision)^k, whatever the start: two searches of the same system land on
the same rates, so their results differ by whole grid steps or not at all. (Rates grown from
a start estimated anew each time gave results anywhere inside a bracket as wide as the
precision: docs/measurements/2026-12-07-zen5-served-rate.md.) From a VALID start the index
moves up 1, 2, 4, ... steps while the verdict stays VALID; from an INVALID one down to half the
rate, then twice that, ...; then it bisects the VALID/INVALID bracket down to neighbouring
grid rates.

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
    SUTError,
    Worker,
    run_scenario,
)

# Poisson arrivals queue up well below capacity: start the search a little under it (a
# 100 ms p99 bound over 6-7 ms queries on one session held up to ~0.8-0.85 of it, Zen 5).
_START_FRACTION = 0.8


@dataclass(frozen=True)
class ServerSearch:
    steps: list[ScenarioRun]  # every run in order, INVALID ones with LoadGen's reasons
    best: ScenarioRun | None  # the highest VALID rate
    converged: bool  # bracket within rel_precision, or VALID at hi_qps
    bracket: tuple[float | None, float | None]  # (highest VALID qps, lowest INVALID qps)
    failed_step: str | None = None  # the step whose worker raised; the steps before are kept

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
    step = math.log1p(rel_precision)
    k_lo = math.ceil(math.log(lo_limit) / step - 1e-9) if lo_limit > 0 else -(10**6)
    k_hi = math.floor(math.log(hi_limit) / step + 1e-9)
    if k_hi < k_lo:  # no grid rate between the limits: the limits themselves are tried
        k_lo = k_hi
    k = min(max(round(math.log(rate) / step), k_lo), k_hi)
    halving = max(1, round(math.log(2) / step))

    steps: list[ScenarioRun] = []
    at: list[int] = []  # each step's grid index
    verdicts: dict[int, bool] = {}  # grid index -> the latest verdict there
    jump, direction, converged, failed = 1, 0, False, None
    for n in range(max_steps):
        rate = min(max(math.exp(k * step), lo_limit), hi_limit)
        try:
            run = run_scenario(
                replace(settings, target_qps=rate),
                workers,
                n_samples,
                Path(log_root) / f"step-{n}-{rate:.1f}",
            )
        except SUTError as exc:  # keep what was measured; the record says where it stopped
            failed = f"step {n} ({rate:.4g} queries/s): {exc}"
            break
        steps.append(run)
        at.append(k)
        verdicts[k] = run.valid
        # the latest verdict wins where noise made them disagree: a VALID k clears INVALID
        # verdicts at or below it, an INVALID k clears VALID ones at or above it
        for other in list(verdicts):
            if (run.valid and other <= k and not verdicts[other]) or (
                not run.valid and other >= k and verdicts[other]
            ):
                del verdicts[other]
        valid_k = max((i for i, ok in verdicts.items() if ok), default=None)
        invalid_k = min((i for i, ok in verdicts.items() if not ok), default=None)
        if valid_k is not None and invalid_k is not None:
            if invalid_k - valid_k <= 1:
                converged = True
                break
            k = (valid_k + invalid_k) // 2
            continue
        if run.valid and k >= k_hi:
            converged = True  # VALID at the cap: nothing higher to look for
            break
        if not run.valid and k <= k_lo:
            break  # INVALID at the floor: nothing lower to try
        now = 1 if run.valid else -1
        # up from a VALID rate 1, 2, 4 grid steps; down from an INVALID one with nothing VALID
        # yet, half the rate first: past saturation a queue says little about how far below
        # the answer lies, and a search that finds no VALID rate has no figure at all
        jump = jump * 2 if now == direction else (1 if run.valid else halving)
        direction = now
        k = min(k + jump, k_hi) if run.valid else max(k - jump, k_lo)
    best = _best(steps, at, verdicts)
    valid_qps = best.settings.target_qps if best is not None else None
    invalid = [r.settings.target_qps for r in steps if not r.valid]
    invalid_qps = min((q for q in invalid if valid_qps is None or q > valid_qps), default=None)
    return ServerSearch(
        steps=steps, best=best, converged=converged, bracket=(valid_qps, invalid_qps),
        failed_step=failed,
    )  # fmt: skip


def _best(steps: list[ScenarioRun], at: list[int], verdicts: dict[int, bool]) -> ScenarioRun | None:
    """The latest run at the highest grid rate whose latest verdict is VALID."""
    valid = [i for i, ok in verdicts.items() if ok]
    if not valid:
        return None
    top = max(valid)
    return [run for run, k in zip(steps, at, strict=True) if k == top][-1]
