"""The tuning article's claims, judged in one place from one run's results: each a row with
the host class, the measured figure, the verdict (confirmed, refuted, partly, untestable here,
not measured) with its reason, and the points it came from. The sweep report, ``perfsuite
qualify --inference`` and docs/guide/claims.md show the same rows.

- "INT8 is 3.8-5.2x faster than FP32": static INT8 points against their FP32 points, per
  model (dynamic quantization is a known slow path, reported apart; points with more threads
  than cores are left out: oversubscribed FP32 collapses, INT8 less).
- "NUMA binding (membind) gives ~15%": a point bound to a node against the same point
  unbound; needs 2 NUMA nodes or more, binding to a host's only node binds nothing.
- "threads = model size / (L3 / 2), at most 2 per core": the formula's pick against the best
  thread count measured for the same model, framework and precision.
- "a cliff at the L3 size (32 MB)": MB of weights streamed per second over the MLP ladder
  (mlpNmb models): the largest drop between neighbouring sizes, and whether it straddles the
  L3.
"""

from __future__ import annotations

from collections.abc import Callable

from perfsuite.records import ArticleClaim, Result, mode_kind

INT8_CLAIM = (3.8, 5.2)
MEMBIND_GAIN = 0.15  # the article's "~15%"
MEMBIND_CONFIRMED = 0.10  # a gain of 10% or more reads as the claim holding
FORMULA_WITHIN = 0.05  # the formula's pick within 5% of the best measured throughput
CLIFF_DROP = 0.30  # a drop of 30% or more between neighbouring ladder sizes is a cliff


def _claim(claim, host, measured, verdict, why, points=()) -> ArticleClaim:
    return ArticleClaim(claim=claim, host_class=host, measured=measured, verdict=verdict,
                        why=why, points=list(points))  # fmt: skip


def _windows(results: list[Result]) -> list[Result]:
    return [
        r
        for r in results
        if r.ok
        and not (r.point.spark or r.point.shards)
        and mode_kind(r.point.mode) == "window"
        and r.stats
    ]


def _key(r: Result, **but) -> tuple:
    p = r.point.but(**but) if but else r.point
    return (p.model, p.framework, p.precision, p.threads, p.numa_node, p.batch, p.mode)


def int8(
    results: list[Result], host: str, vnni: bool | None, cores: int | None
) -> list[ArticleClaim]:
    lo_claim, hi_claim = INT8_CLAIM
    text = f"INT8 is {lo_claim}-{hi_claim}x faster than FP32"
    by_key = {_key(r): r for r in _windows(results)}
    per_model: dict[str, list[tuple[float, str]]] = {}
    left_out: dict[str, int] = {}
    for key, r in by_key.items():
        prec, t = key[2], key[3]
        fp32 = by_key.get(_key(r, precision="fp32"))
        if fp32 is None or not prec.startswith("int8") or prec == "int8_dynamic":
            continue
        if cores is not None and t > cores:
            left_out[r.point.model] = left_out.get(r.point.model, 0) + 1
            continue
        ratio = r.stats.throughput_ips / fp32.stats.throughput_ips
        per_model.setdefault(r.point.model, []).append((ratio, r.id))
    isa = {True: "VNNI", False: "no VNNI", None: "VNNI unknown"}[vnni]
    out = []
    for model, ratios in sorted(per_model.items()):
        lo, hi = min(ratios)[0], max(ratios)[0]
        if hi < lo_claim:
            verdict, why = "refuted", "every static INT8 point below 3.8x"
        elif lo >= lo_claim:
            verdict, why = "confirmed", "every static INT8 point at 3.8x or more"
        else:
            verdict, why = "partly", "some static INT8 points reach 3.8x, others do not"
        if n_out := left_out.get(model):
            why += f" ({n_out} oversubscribed point(s), threads > {cores} cores, left out)"
        measured = f"{model} ({isa}): {lo:.2f}-{hi:.2f}x over {len(ratios)} static INT8 point(s)"
        out.append(_claim(text, host, measured, verdict, why, tuple(i for _, i in sorted(ratios))))
    if not out:
        out.append(_claim(text, host, "-", "not measured",
                         "no static INT8 point with its FP32 point in this run"))  # fmt: skip
    return out


def membind(results: list[Result], host: str, numa_nodes: int) -> ArticleClaim:
    text = f"NUMA binding (membind) gives ~{MEMBIND_GAIN:.0%}"
    if numa_nodes < 2:
        why = f"membind needs 2 NUMA nodes or more; this host has {numa_nodes}"
        return _claim(text, host, "-", "untestable here", why)
    by_key = {_key(r): r for r in _windows(results)}
    gains = []
    for key, r in by_key.items():
        unbound = by_key.get(_key(r, numa_node=None)) if key[4] is not None else None
        if unbound is not None:
            gains.append(
                (r.stats.throughput_ips / unbound.stats.throughput_ips - 1, r.id, unbound.id)
            )
    if not gains:
        why = 'no point ran both bound to a node and unbound (numa_nodes = ["none", "all"])'
        return _claim(text, host, "-", "not measured", why)
    lo, hi = min(gains)[0], max(gains)[0]
    verdict = (
        "confirmed"
        if lo >= MEMBIND_CONFIRMED
        else ("refuted" if hi < MEMBIND_CONFIRMED else "partly")
    )
    measured = f"bound vs unbound throughput {lo:+.1%} to {hi:+.1%} over {len(gains)} point(s)"
    why = f"a gain of {MEMBIND_CONFIRMED:.0%} or more counts as the claim holding"
    return _claim(text, host, measured, verdict, why, tuple(sorted({g[1] for g in gains})))


def thread_formula(
    results: list[Result], host: str, pick: Callable[[str], int] | None
) -> ArticleClaim:
    text = "threads = model MB / (L3 MB / 2), at most 2 per core"
    if pick is None:
        why = "judged in a sweep's report, where the formula's pick is known"
        return _claim(text, host, "-", "not measured", why)
    groups: dict[tuple, dict[int, Result]] = {}
    for r in _windows(results):
        p = r.point
        group = (p.model, p.framework, p.precision, p.numa_node, p.batch, p.mode)
        groups.setdefault(group, {})[p.threads] = r
    held, lost_most, used = 0, [], []
    for (model, *_rest), per_t in sorted(groups.items(), key=str):
        chosen = pick(model)
        if len(per_t) < 2 or chosen not in per_t:
            continue
        best = max(per_t.values(), key=lambda r: r.stats.throughput_ips)
        lost = 1 - per_t[chosen].stats.throughput_ips / best.stats.throughput_ips
        held += lost <= FORMULA_WITHIN
        lost_most.append(lost)
        used.append(per_t[chosen].id)
    if not lost_most:
        return _claim(
            text,
            host,
            "-",
            "not measured",
            "no group measured the formula's pick beside other thread counts",
        )
    n = len(lost_most)
    verdict = "confirmed" if held == n else ("refuted" if held == 0 else "partly")
    measured = (
        f"the pick within {FORMULA_WITHIN:.0%} of the best in {held} of {n} group(s); at "
        f"worst {max(lost_most):.1%} of the best throughput lost"
    )
    return _claim(
        text,
        host,
        measured,
        verdict,
        "best = the measured thread count with the most throughput",
        tuple(used),
    )


def l3_cliff(results: list[Result], host: str, l3_mb: float | None) -> ArticleClaim:
    text = "throughput falls off a cliff past the L3 (32 MB on the article's parts)"
    ladder: dict[tuple, list[tuple[float, float, str]]] = {}
    for r in _windows(results):
        p = r.point
        if (
            p.model.startswith("mlp")
            and p.model.endswith("mb")
            and r.model
            and r.model.weight_bytes
        ):
            mb = r.model.weight_bytes / 2**20
            rate = mb * r.stats.throughput_ips / p.batch  # MB of weights streamed per second
            ladder.setdefault((p.framework, p.precision, p.threads, p.numa_node), []).append(
                (mb, rate, r.id)
            )
    ladder = {k: sorted(v) for k, v in ladder.items() if len(v) >= 3}
    if not ladder or not l3_mb:
        why = "needs the MLP ladder (3 or more mlpNmb sizes, the nightly profile) and the L3 size"
        return _claim(text, host, "-", "not measured", why)
    found, used = [], []
    for sizes in ladder.values():
        drops = [(1 - b[1] / a[1], a, b) for a, b in zip(sizes, sizes[1:], strict=False)]
        drop, a, b = max(drops)
        found.append((drop, a[0] <= l3_mb <= b[0], a[0], b[0]))  # it straddles the L3
        used += [x[2] for x in sizes]
    cliffs = [f for f in found if f[0] >= CLIFF_DROP]
    at_l3 = [f for f in cliffs if f[1]]
    if at_l3 and len(at_l3) == len(found):
        verdict = "confirmed"
    elif not cliffs:
        verdict = "refuted"
    else:
        verdict = "partly"
    worst = max(found)
    measured = (
        f"largest drop {worst[0]:.0%} between {worst[2]:.0f} and {worst[3]:.0f} MB (L3 "
        f"{l3_mb:.0f} MB); {len(cliffs)} of {len(found)} ladder(s) drop {CLIFF_DROP:.0%} or more"
    )
    why = "a cliff is a drop of 30% or more in MB/s between neighbouring sizes across the L3"
    return _claim(text, host, measured, verdict, why, tuple(used))


def judge(
    results: list[Result],
    host: str,
    *,
    numa_nodes: int,
    l3_mb: float | None,
    vnni: bool | None = None,
    cores: int | None = None,
    formula_threads: Callable[[str], int] | None = None,
) -> list[ArticleClaim]:
    """Every claim, from this run's results on this host."""
    return [
        *int8(results, host, vnni, cores),
        membind(results, host, numa_nodes),
        thread_formula(results, host, formula_threads),
        l3_cliff(results, host, l3_mb),
    ]


def table(claims: list[ArticleClaim]) -> list[str]:
    """The claims as report lines, under one heading."""
    return ["article claims, measured here:", *(f"  {c.line()}" for c in claims)]
