"""Terminal report sections for benchmark runs."""

from __future__ import annotations

from collections.abc import Callable

from perfsuite.records import Point, Result, mode_kind

# The tuning article's claim, checked per host class, never assumed.
# What an OpenVINO point really ran at (its effective INFERENCE_PRECISION_HINT).
_RAN_AS = {"f32": "fp32", "bf16": "bf16", "f16": "f16"}


def precision_label(result: Result) -> str:
    """The point's precision, and what it really ran as when the framework says otherwise:
    a bf16 run must never read as fp32, nor an fp32 run as bf16."""
    prec = result.point.precision
    hint = result.settings.get("INFERENCE_PRECISION_HINT")
    ran = _RAN_AS.get(str(hint).lower()) if hint is not None else None
    # int8 runs its own kernels; weight-only int4/int8 compute in f32 by design
    if ran is None or ran == prec or prec.startswith("int"):
        return prec
    return f"{prec}(ran {ran})"


def table_key(p: Point, precision: str | None = None) -> tuple:
    """A point's row key: the same point at another precision shares all but that."""
    prec = p.precision if precision is None else precision
    return (p.model, p.framework, prec, p.threads, p.numa_node, p.batch, p.mode)


def run_label(point: Point) -> str:
    """How the point ran: batch and mode, or the Spark pattern and slots x CPUs per task."""
    spark = point.spark
    if spark:
        return f"spark {spark.pattern} {spark.slots}x{spark.cpus_per_task} b{point.batch}"
    label = f"b{point.batch}" + ("" if point.mode == "latency" else f" {point.mode}")
    label += f" {point.shards}-shards" if point.shards else ""
    return label + (f" s{point.streams}" if point.streams > 1 else "")


def _p99_ms(fields: dict) -> float | None:
    """LoadGen's p99 latency, in ms, from its summary fields (their labels vary by section)."""
    for key, value in fields.items():
        if key.startswith("99.0") and "percentile latency (ns)" in key:
            return float(value) / 1e6
    return None


def serving_lines(ok: list[Result]) -> list[str]:
    """Each LoadGen point's headline and verdict; a server point's search."""
    lines = []
    for r in sorted((r for r in ok if r.loadgen), key=lambda r: r.id):
        lg, h = r.loadgen, r.headline
        run = lg.runs[lg.best] if lg.best is not None else lg.runs[-1]
        figure = f"{h.name} {h.value:.4g} {h.unit}, " if h else ""
        text = f"{r.id}: {figure}{'VALID' if run.valid else 'INVALID'}"
        if not run.valid and run.reasons:
            text += f" ({run.reasons[0].lstrip('* ')})"
        if lg.scenario == "server":
            p99, bound = _p99_ms(run.fields), lg.latency_bound_ms
            lo, hi = lg.bracket_qps or (None, None)
            text += (
                (f"; p99 {p99:.1f} ms" if p99 is not None else "")
                + f" (bound {bound:g} ms); {len(lg.runs)} LoadGen runs, VALID up to "
                + (f"{lo:.4g}" if lo else "-")
                + (f", INVALID from {hi:.4g} queries/s" if hi else " queries/s")
                + ("" if lg.converged else "; not converged (search_steps ran out)")
            )
            if h is not None and len(h.runs) > 1:
                rates = ", ".join(f"{x:.4g}" for x in h.runs)
                text += f"; median of {len(h.runs)} searches ({rates}; spread {h.spread:.0%})"
            failed = [s.failed_step for s in lg.searches if s.failed_step]
            if failed:
                text += "; a search stopped at " + "; ".join(failed)
        lines.append(text)
        if run.timeline is not None:
            lines.append("  " + timeline_line(run.timeline))
    return lines


def timeline_line(t) -> str:
    """Where a LoadGen run's latency went (``records.TimelineSummary``): the wait for a
    worker against the worker's own time, and LoadGen's issue delay."""
    delay = (
        f", LoadGen issue delay p99 {t.issue_delay_p99_ms:.2f} ms"
        if t.issue_delay_p99_ms is not None
        else ""
    )
    return (
        f"per query (p50/p99): latency {t.latency_p50_ms:.1f}/{t.latency_p99_ms:.1f} ms = "
        f"wait for a worker {t.wait_p50_ms:.1f}/{t.wait_p99_ms:.1f} + service "
        f"{t.service_p50_ms:.1f}/{t.service_p99_ms:.1f}{delay}; up to {t.max_in_system} "
        f"queries in the system ({t.file})"
    )


def shard_lines(ok: list[Result]) -> list[str]:
    """Each shards point: the shards' sum and spread, against one process on as many cores
    (the same point unbound, its threads the shards' total) when the run has it."""
    single = {table_key(r.point): r for r in ok if not r.point.shards}
    lines = []
    for r in sorted((r for r in ok if r.shards), key=lambda r: r.id):
        rates = [s.throughput_ips for s in r.shards]
        total = r.point.threads * len(rates)
        text = (
            f"{r.id}: {len(rates)} {r.point.shards} shard(s) of {r.point.threads} thread(s), "
            f"sum {r.stats.throughput_ips:.2f} items/s, per shard {min(rates):.2f}-"
            f"{max(rates):.2f} (slowest/fastest {min(rates) / max(rates):.2f})"
        )
        one = single.get(table_key(r.point.but(shards=None, threads=total)))
        if one is None:
            text += f"; no one-process point at {total} threads in this run to compare"
        else:
            ratio = r.stats.throughput_ips / one.stats.throughput_ips
            text += (
                f"; one process on {total} threads ({one.id}): "
                f"{one.stats.throughput_ips:.2f} items/s, shards/one {ratio:.2f}x"
            )
        lines.append(text)
    return lines


def llm_serving_lines(point_id: str, s) -> list[str]:
    """An llm_server point: the rate its search found, per-request p99s against the bounds,
    goodput, then static batching at the same rate."""

    def run_text(run) -> str:
        return (
            f"{run.batching} batching at {run.rate_rps:.3g} requests/s: p99 TTFT "
            f"{run.ttft_s.p99 * 1e3:.1f} ms, TPOT {run.tpot_s.p99 * 1e3:.2f} ms, ITL "
            f"{run.itl_s.p99 * 1e3:.2f} ms, e2e {run.e2e_s.p99 * 1e3:.0f} ms; "
            f"{run.output_tokens_per_s:.0f} output tokens/s, goodput {run.goodput_rps:.3g} "
            f"requests/s ({run.completed}/{run.requests} done"
            + (f", batch {run.max_batch})" if run.max_batch else ")")
        )

    bounds = f"p99 TTFT <= {s.ttft_bound_s * 1e3:g} ms, TPOT <= {s.tpot_bound_s * 1e3:g} ms"
    if s.best is None:
        return [f"{point_id}: no rate met {bounds}"]
    tried = ", ".join(f"{r.rate_rps:.3g}{'' if r.meets_slo else '!'}" for r in s.runs)
    out = [f"{point_id}: highest rate meeting {bounds} (tried {tried}; ! = missed"
           f"{'' if s.converged else '; not converged'}): " + run_text(s.runs[s.best])]  # fmt: skip
    if s.static is not None:
        out.append(f"  same rate, {run_text(s.static)}")
    elif s.static_why_not:
        out.append(f"  static batching not run: {s.static_why_not}")
    return out


def decode_lines(ok: list[Result]) -> list[str]:
    """Each decode point against its memory-bandwidth roofline, then the weight-only/fp32
    tokens/s ratios measured in this run."""
    lines, speed = [], {}
    for r in sorted((r for r in ok if r.decode), key=lambda r: r.id):
        d, p = r.decode, r.point
        if d.serving is not None:
            lines += llm_serving_lines(r.id, d.serving)
            continue
        speed[(p.model, p.framework, p.precision, p.threads, p.mode)] = d.tokens_per_s
        text = f"{r.id}: {d.tokens_per_s:.1f} tokens/s"
        if d.ttft_s and d.tpot_s:
            text += f" (TTFT {d.ttft_s * 1e3:.1f} ms, TPOT {d.tpot_s * 1e3:.2f} ms)"
        if d.roofline_tokens_per_s:
            text += (
                f" = {d.roofline_fraction:.0%} of the roofline {d.roofline_tokens_per_s:.1f} "
                f"tokens/s ({d.triad_gbs:.1f} GB/s triad / "
                f"{d.weight_bytes_per_token / 1e6:.1f} MB of weights per token)"
            )
        if d.cache_resident:
            text += "; weights fit the L3: cache-resident, the roofline does not bind"
        lines.append(text)
    ratios = [
        f"{m} {fw} {prec} t{t} {test}: {tps / speed[(m, fw, 'fp32', t, test)]:.2f}x"
        for (m, fw, prec, t, test), tps in sorted(speed.items())
        if prec != "fp32" and (m, fw, "fp32", t, test) in speed
    ]
    if ratios:
        lines.append("weight-only/FP32 tokens/s: " + "; ".join(ratios))
    return lines


def spark_lines(write: Callable[[str], None], ok: list[Result]) -> None:
    """Each Spark point against the best single-process throughput at the same total threads
    (model, framework, precision, node): the Spark overhead, measured in the same run."""
    best: dict = {}
    for r in ok:
        key = table_key(r.point)[:5]  # model, framework, precision, threads, node
        single = not r.point.spark and not r.point.shards
        if single and r.stats.throughput_ips > best.get(key, (0,))[0]:
            best[key] = (r.stats.throughput_ips, run_label(r.point))
    for r in sorted((r for r in ok if r.point.spark), key=lambda r: r.id):
        p, ips = r.point, r.stats.throughput_ips
        what = f"{p.model} {p.framework} {p.precision} {run_label(p)}"
        cost = ""
        if r.spark and r.spark.session_build_s:
            cost = f"; session build {max(r.spark.session_build_s):.2f} s per worker (warm-up pass)"
        if table_key(p)[:5] in best:
            ref, how = best[table_key(p)[:5]]
            write(
                f"Spark/single-process {what}: {ips:.2f} / {ref:.2f} items/s = {ips / ref:.2f}x "
                f"of the best single-process t{p.threads} ({how}){cost}"
            )
        else:
            write(
                f"Spark {what}: {ips:.2f} items/s (no single-process point at t{p.threads} to "
                f"compare){cost}"
            )


def sweep_table(
    write: Callable[[str], None],
    records: list[Result],
    formula_threads: Callable[[str], int] | None = None,
) -> None:
    """framework | precision | threads | node | throughput | p50/p99 | spread, then INT8/FP32
    and BF16/FP32 ratios per framework and the article's thread formula against the measured
    best per group (the claims table, ``sweep.claims``, judges them)."""
    ok = [r for r in records if r.ok]
    sessions = any(r.stats.between_session_cv is not None for r in ok)  # of session medians
    write(
        f"{'model':<12} {'framework':<12} {'precision':<15} {'thr':>3} {'node':>7} "
        f"{'run':<24} {'items/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CV':>6}"
        + (f" {'sess CV':>7}" if sessions else "")
        + "  accuracy"
    )
    for r in sorted(records, key=lambda r: r.id):
        p = r.point
        node = "-" if p.numa_node is None else str(p.numa_node)
        head = (
            f"{p.model:<12} {p.framework:<12} {precision_label(r):<15} "
            f"{p.threads:>3} {node:>7} {run_label(p):<24}"
        )
        if not r.ok:
            write(f"{head} ERROR: {r.error}")
            continue
        s = r.stats
        p99 = f"{s.latency_p99_ms:>8.2f}" + ("" if s.p99_reliable else "*")
        acc = r.accuracy
        acc_txt = f"{acc.metric}={acc.value:.2f} {'ok' if acc.passed else 'FAIL'}" if acc else ""
        between_txt = ""
        if sessions:
            between = s.between_session_cv
            between_txt = f" {between * 100:>6.1f}%" if between is not None else f" {'-':>7}"
        flag = "!" if r.contaminated else " "
        write(
            f"{head} {s.throughput_ips:>9.2f}{flag}{s.latency_p50_ms:>8.2f} {p99} "
            f"{s.cv * 100:>5.1f}%{between_txt}  {acc_txt}"
        )
    if any(not r.stats.p99_reliable for r in ok):
        write("* p99 rests on fewer than 100 samples: read it as 'about the max'")
    for r in ok:
        if r.contaminated:
            w = r.interference.sessions[-1]
            write(
                f"! {r.id}: measured while other processes used {w.foreign_share:.0%} of "
                f"the CPUs (steal {w.steal_share:.0%}) even after "
                f"{r.interference.retries} re-measure(s): not a reliable figure"
            )
    for line in speed_lines(ok):
        write(line)
    spark_lines(write, ok)
    for line in shard_lines(ok) + serving_lines(ok) + decode_lines(ok):
        write(line)
    # one process per point: Spark and shards points have their own lines
    windows = [r for r in ok if not (r.point.spark or r.point.shards)
               and mode_kind(r.point.mode) == "window"]  # fmt: skip
    by_key = {table_key(r.point): r.stats.throughput_ips for r in windows}
    ratios: dict[str, list[str]] = {"INT8": [], "BF16": []}
    for (m, fw, prec, t, n, b, mode), ips in sorted(by_key.items(), key=str):
        fp32 = by_key.get((m, fw, "fp32", t, n, b, mode))
        if prec != "fp32" and fp32:
            where = "unbound" if n is None else f"node{n}"
            extra = "" if (b, mode) == (1, "latency") else f" b{b} {mode}"
            kind = "BF16" if prec == "bf16" else "INT8"
            ratios[kind].append(f"{m} {fw} {prec} t{t} {where}{extra}: {ips / fp32:.2f}x")
    for kind, lines in ratios.items():
        if lines:
            write(f"{kind}/FP32 throughput: " + "; ".join(lines))
    if formula_threads:
        groups: dict = {}
        for (m, fw, prec, t, n, b, mode), ips in by_key.items():
            groups.setdefault((m, fw, prec, n, b, mode), {})[t] = ips
        for (m, fw, prec, n, _b, _mode), per_t in sorted(groups.items(), key=str):
            if len(per_t) < 2:
                continue
            best = max(per_t, key=per_t.get)
            pick = formula_threads(m)
            if pick in per_t:
                lost = f"{(1 - per_t[pick] / per_t[best]) * 100:.1f}% of the best throughput lost"
            else:
                lost = "its pick was not measured in this sweep"
            where = "unbound" if n is None else f"node{n}"
            write(
                f"thread formula vs measured, {m} {fw} {prec} {where}: formula picks {pick}, "
                f"best measured {best} ({per_t[best]:.2f} items/s); {lost}"
            )


def speed_lines(records: list[Result]) -> list[str]:
    """The range of the calibration probes (1 thread, before and after each window) over the
    run: how much the machine's speed moved while it was measured."""
    probes = [
        x
        for r in records
        for s in (r.calibration.sessions if r.calibration else [])
        for x in (s.before, s.after)
    ]
    if not probes:
        return []
    fma = [x.fma_gflops for x in probes]
    bw = [x.triad_gbs for x in probes]
    return [
        f"machine speed (calibration probes, 1 thread): FMA {min(fma):.1f}-{max(fma):.1f} "
        f"GFLOP/s, triad {min(bw):.1f}-{max(bw):.1f} GB/s over {len(probes)} probes"
    ]
