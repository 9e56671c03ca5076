"""Relative (interleaved A/B) verdicts: per point, rounds of A and B measured side by side
in fresh workers on the same machine, judged on the per-round ratios B / A
(``sweep.ab.round_ratio``). Host drift moves both sides of a round together, so it cancels
in the ratio; what is left is the difference between A and B plus the noise within a round.

Per point: d_r = ln(B / A of round r). The change is exp(mean d) - 1 with a Student t
interval; ``regressed`` when B is slower by more than the threshold and a one-sided t-test
on d gives p < alpha after Holm over the points (``improved`` symmetrically). Fewer than 3
rounds cannot be judged (``unstable``).

Sequential rounds (``looks``): a fixed number of rounds is either too few for a change
near the threshold or wasted on a clear one. The rounds are taken in groups, with a look
after each; a point stops as soon as it is decided (``regressed``/``improved``, or its
interval lies inside +/- threshold: ``unchanged``), and the others go on to the next look;
one still undecided at the last look is ``unstable``.
Each look k tests at alpha_k, the increment of the Pocock-type spending function
alpha * ln(1 + (e - 1) t) (Lan & DeMets 1983) at the information fraction t = rounds /
max rounds. The alpha_k sum to alpha and are spent by Bonferroni across looks (Holm across
points within a look), so the family-wise false-alarm rate stays <= alpha whatever the
correlation between looks."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from perfsuite.gate.statistics import GateConfig, holm
from perfsuite.records import Verdict

MIN_ROUNDS = 3


@dataclass(frozen=True)
class Looks:
    rounds: tuple[int, ...]  # rounds done at each look (cumulative)
    alphas: tuple[float, ...]  # alpha spent at each look; they sum to the family alpha


def looks(first: int, most: int, alpha: float) -> Looks:
    """A look after ``first`` rounds and after every ``first`` more, the last at ``most``.
    ``most <= first`` is the fixed design: one look at ``first`` with all of alpha."""
    if most <= first:
        return Looks((first,), (alpha,))
    at = [*range(first, most, first), most]
    spent = [alpha * math.log(1 + (math.e - 1) * n / most) for n in at]
    return Looks(tuple(at), tuple(b - a for a, b in zip([0.0, *spent], spent, strict=False)))


def judge(
    a_medians: dict[str, list[float]],
    b_medians: dict[str, list[float]],
    cfg: GateConfig | None = None,
    errors: dict[str, str] | None = None,
) -> list[Verdict]:
    """``a_medians[id][r]`` and ``b_medians[id][r]``: median latency of round r on each side;
    ``judge_ratios`` (one look) on their ratios."""
    ratios = {
        pid: [y / x for x, y in zip(a_medians.get(pid, []), b_medians.get(pid, []), strict=False)]
        for pid in set(a_medians) | set(b_medians)
    }
    return judge_ratios(ratios, cfg, errors)


def judge_ratios(
    ratios: dict[str, list[float]],
    cfg: GateConfig | None = None,
    errors: dict[str, str] | None = None,
    *,
    alpha: float | None = None,
    look: int = 1,
    final: bool = True,
    settled: dict[str, Verdict] | None = None,
) -> list[Verdict]:
    """``ratios[id][r]``: B / A of round r (latency: > 1 is slower).

    Sequential use: ``alpha`` is this look's share (default ``cfg.alpha``); ``settled`` holds
    the points decided at earlier looks, which are kept as they are. A point that is not
    decided at a look that is not ``final`` is ``pending``. Points settled ``unchanged``
    stay in the Holm family with their last p values; rejected ones leave it."""
    cfg = cfg or GateConfig()
    alpha = cfg.alpha if alpha is None else alpha
    errors = errors or {}
    settled = settled or {}
    out: dict[str, Verdict] = {}
    tested: list[tuple[str, float, float]] = []  # id, p slower, p faster
    for pid in sorted(set(ratios) | set(errors) | set(settled)):
        if pid in settled:
            out[pid] = settled[pid]
            if settled[pid].verdict == "unchanged" and settled[pid].p_sides:
                tested.append((pid, *settled[pid].p_sides))
            continue
        if pid in errors:
            out[pid] = Verdict(id=pid, verdict="error", reason=errors[pid], rounds=0)
            continue
        r = np.asarray(ratios.get(pid, []), float)
        n = r.size
        threshold = cfg.threshold_for(pid)
        if n < MIN_ROUNDS:
            out[pid] = Verdict(
                id=pid, verdict="unstable", rounds=n, threshold=threshold,
                reason=f"{n} paired round(s); at least {MIN_ROUNDS} are needed",
            )  # fmt: skip
            continue
        d = np.log(r)
        mean, sd = float(d.mean()), float(d.std(ddof=1))
        half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n) if sd > 0 else 0.0
        if sd > 0:
            p_slower = float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
            p_faster = float(stats.ttest_1samp(d, 0.0, alternative="less").pvalue)
        else:  # identical ratios every round: the sign is certain
            p_slower, p_faster = (0.0, 1.0) if mean > 0 else (1.0, 0.0 if mean < 0 else 1.0)
        out[pid] = Verdict(
            id=pid, verdict="unchanged", change=math.exp(mean) - 1,
            ci=(math.exp(mean - half) - 1, math.exp(mean + half) - 1), rounds=n,
            ratios=[float(x) for x in np.exp(d)], threshold=threshold, look=look, alpha=alpha,
            p_sides=(p_slower, p_faster),
        )  # fmt: skip
        tested.append((pid, p_slower, p_faster))
    slower = holm([t[1] for t in tested])
    faster = holm([t[2] for t in tested])
    for (pid, _, _), ps, pf in zip(tested, slower, faster, strict=True):
        if pid in settled:
            continue
        v = out[pid]
        if ps < alpha and v.change > v.threshold:
            out[pid] = v.model_copy(update={"verdict": "regressed", "p_value": ps})
        elif pf < alpha and v.change < -v.threshold:
            out[pid] = v.model_copy(update={"verdict": "improved", "p_value": pf})
        elif -v.threshold < v.ci[0] and v.ci[1] < v.threshold:
            out[pid] = v.model_copy(update={"p_value": min(ps, pf)})
        elif not final:
            out[pid] = v.model_copy(update={"verdict": "pending", "p_value": min(ps, pf)})
        else:  # neither shown nor ruled out: never "unchanged"
            out[pid] = v.model_copy(update={
                "verdict": "unstable", "p_value": min(ps, pf),
                "reason": f"undecided after {v.rounds} rounds: the 95% interval reaches past "
                f"+/-{v.threshold:.0%}; more rounds (--max-rounds) or quieter rounds can decide it",
            })  # fmt: skip
    return [out[k] for k in sorted(out)]
