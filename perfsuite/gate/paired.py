"""Relative (interleaved A/B) verdicts: per point, rounds of A then B measured back to back
in fresh workers on the same machine, judged on the per-round ratios of B's median to A's.
Host drift moves both sides of a round together, so it cancels in the ratio; what is left
is the difference between A and B plus the noise within a round.

Per point: d_r = ln(median B_r / median A_r). The change is exp(mean d) - 1 with a Student t
interval; ``regressed`` when B is slower by more than the threshold and a one-sided t-test
on d gives p < alpha after Holm over the points (``improved`` symmetrically). Fewer than 3
rounds cannot be judged (``unstable``)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from perfsuite.gate.statistics import GateConfig, holm

MIN_ROUNDS = 3


@dataclass
class PairedVerdict:
    id: str
    verdict: str  # regressed | improved | unchanged | unstable | error
    change: float | None = None  # B / A - 1 (latency: > 0 is slower)
    ci: tuple[float, float] | None = None
    p: float | None = None
    rounds: int = 0
    ratios: list[float] | None = None
    threshold: float | None = None
    reason: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def judge(
    a_medians: dict[str, list[float]],
    b_medians: dict[str, list[float]],
    cfg: GateConfig | None = None,
    errors: dict[str, str] | None = None,
) -> list[PairedVerdict]:
    """``a_medians[id][r]`` and ``b_medians[id][r]``: median latency of round r on each side."""
    from scipy import stats

    cfg = cfg or GateConfig()
    errors = errors or {}
    out: dict[str, PairedVerdict] = {}
    tested: list[tuple[str, float, float]] = []  # id, p slower, p faster
    for pid in sorted(set(a_medians) | set(b_medians) | set(errors)):
        if pid in errors:
            out[pid] = PairedVerdict(pid, "error", reason=errors[pid])
            continue
        a = np.asarray(a_medians.get(pid, []), float)
        b = np.asarray(b_medians.get(pid, []), float)
        n = min(a.size, b.size)
        threshold = cfg.threshold_for(pid)
        if n < MIN_ROUNDS:
            out[pid] = PairedVerdict(
                pid, "unstable", rounds=n, threshold=threshold,
                reason=f"{n} paired round(s); at least {MIN_ROUNDS} are needed",
            )  # fmt: skip
            continue
        d = np.log(b[:n] / a[:n])
        mean, sd = float(d.mean()), float(d.std(ddof=1))
        half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n) if sd > 0 else 0.0
        if sd > 0:
            p_slower = float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
            p_faster = float(stats.ttest_1samp(d, 0.0, alternative="less").pvalue)
        else:  # identical ratios every round: the sign is certain
            p_slower, p_faster = (0.0, 1.0) if mean > 0 else (1.0, 0.0 if mean < 0 else 1.0)
        out[pid] = PairedVerdict(
            pid, "unchanged", change=math.exp(mean) - 1,
            ci=(math.exp(mean - half) - 1, math.exp(mean + half) - 1), rounds=n,
            ratios=[float(x) for x in np.exp(d)], threshold=threshold,
        )  # fmt: skip
        tested.append((pid, p_slower, p_faster))
    if tested:
        slower = holm([t[1] for t in tested])
        faster = holm([t[2] for t in tested])
        for (pid, _, _), ps, pf in zip(tested, slower, faster, strict=True):
            v = out[pid]
            if ps < cfg.alpha and v.change > v.threshold:
                v.verdict, v.p = "regressed", ps
            elif pf < cfg.alpha and v.change < -v.threshold:
                v.verdict, v.p = "improved", pf
            else:
                v.p = min(ps, pf)
    return [out[k] for k in sorted(out)]
