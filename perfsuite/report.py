"""Terminal report sections for benchmark runs."""

from __future__ import annotations

from collections.abc import Callable


def sweep_table(
    write: Callable[[str], None],
    records: list[dict],
    formula_threads: Callable[[str], int] | None = None,
) -> None:
    """framework | precision | threads | node | throughput | p50/p99 | spread, then INT8/FP32
    ratios per framework and the article's thread formula against the measured best."""
    ok = [r for r in records if r["status"] == "ok"]
    sessions = any("between_session_cv" in r["stats"] for r in ok)  # CV of session medians
    write(
        f"{'model':<12} {'framework':<12} {'precision':<15} {'thr':>3} {'node':>7} "
        f"{'items/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CV':>6}"
        + (f" {'sess CV':>7}" if sessions else "")
        + "  accuracy"
    )
    for r in sorted(records, key=lambda r: r["id"]):
        p = r["point"]
        node = "-" if p["numa_node"] is None else str(p["numa_node"])
        head = (
            f"{p['model']:<12} {p['framework']:<12} {p['precision']:<15} "
            f"{p['threads']:>3} {node:>7}"
        )
        if r["status"] != "ok":
            write(f"{head} ERROR: {r['error']}")
            continue
        s = r["stats"]
        p99 = f"{s['latency_p99_ms']:>8.2f}" + ("" if s["p99_reliable"] else "*")
        acc = r.get("accuracy")
        acc_txt = (
            f"{acc['metric']}={acc['value']:.2f} {'ok' if acc['passed'] else 'FAIL'}" if acc else ""
        )
        between_txt = ""
        if sessions:
            between = s.get("between_session_cv")
            between_txt = f" {between * 100:>6.1f}%" if between is not None else f" {'-':>7}"
        write(
            f"{head} {s['throughput_ips']:>9.2f} {s['latency_p50_ms']:>8.2f} {p99} "
            f"{s['cv'] * 100:>5.1f}%{between_txt}  {acc_txt}"
        )
    if any(not r["stats"]["p99_reliable"] for r in ok):
        write("* p99 rests on fewer than 100 samples: read it as 'about the max'")
    by_key = {
        (
            r["point"]["model"],
            r["point"]["framework"],
            r["point"]["precision"],
            r["point"]["threads"],
            r["point"]["numa_node"],
            r["point"]["batch"],
            r["point"]["mode"],
        ): r["stats"]["throughput_ips"]
        for r in ok
    }
    ratios = []
    for (m, fw, prec, t, n, b, mode), ips in sorted(by_key.items(), key=str):
        fp32 = by_key.get((m, fw, "fp32", t, n, b, mode))
        if prec != "fp32" and fp32:
            where = "unbound" if n is None else f"node{n}"
            extra = "" if (b, mode) == (1, "latency") else f" b{b} {mode}"
            ratios.append(f"{m} {fw} {prec} t{t} {where}{extra}: {ips / fp32:.2f}x")
    if ratios:
        write("INT8/FP32 throughput: " + "; ".join(ratios))
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
