"""``perfsuite db``: the results history (import, runs, history, changes, annotate, exclude,
export, trends, fleet). Exit codes as the rest of the CLI: 0 done; 1 ``changes
--fail-on-change`` found one, or ``fleet`` has a failing host; 2 bad input or a store that
cannot be opened."""

from __future__ import annotations

import datetime
import sys
from dataclasses import asdict
from pathlib import Path

from perfsuite import records
from perfsuite.cli import EXIT_FAIL, EXIT_OK, EXIT_USAGE, add_verb
from perfsuite.cli.tables import fleet_table, table
from perfsuite.fleet import scoring as fleet
from perfsuite.gate.config import GateConfigError, load_gate_config
from perfsuite.history.changes import detect
from perfsuite.history.gate import CONFIRM_RUNS, LAST_RUNS, MIN_RUNS, RECENT, gate_history
from perfsuite.history.gate import as_json as history_json
from perfsuite.history.gate import lines as history_lines
from perfsuite.history.gate import markdown as history_markdown
from perfsuite.history.trends import render
from perfsuite.options import (
    add_options,
    fraction,
    output_dir,
    output_file,
    positive_float,
    positive_int,
)
from perfsuite.qualify.checks import make_reference
from perfsuite.store import (
    METRICS,
    HistoryQueries,
    StoreError,
    open_annotations,
    open_importer,
    open_queries,
)
from perfsuite.store.baseline import BaselineError
from perfsuite.text import finite_json, terminal_line
from perfsuite.writing import append_text, atomic_write_text


def _print_json(data) -> None:
    sys.stdout.write(finite_json(data, indent=1, default=str) + "\n")
    sys.stdout.write("\n")


def cmd_import(args) -> int:
    store = open_importer(args.store)
    added = 0
    for path in args.paths:
        if not Path(path).exists():
            print(f"perfsuite db import: {path}: no such file or directory", file=sys.stderr)
            return EXIT_USAGE
    for path in args.paths:
        done = store.import_path(Path(path), commit=args.commit)
        added += done.added
        print(f"{'added' if done.added else 'already stored'}: {done.kind} {done.source}")
    print(f"{added} added, {len(args.paths) - added} already stored ({store.safe_url})")
    return EXIT_OK


def cmd_runs(args) -> int:
    rows = open_queries(args.store).runs(limit=args.limit)
    if args.json:
        _print_json([asdict(r) for r in rows])
        return EXIT_OK
    table(
        "runs, newest first",
        ["id", "key", "time (UTC)", "kind", "class", "profile", "points", "excluded"],
        [[r.id, r.run_key[:10], f"{r.started_at:%Y-%m-%d %H:%M:%S}", r.kind, r.hardware_class,
          r.profile, r.points, r.excluded_reason if r.excluded else ""] for r in rows],
    )  # fmt: skip
    return EXIT_OK


class NoMatch(LookupError):
    """A benchmark pattern that matches nothing in the store: bad input (exit 2), the same
    for every verb that takes one."""


INPUT_ERRORS: tuple[type[Exception], ...] = (StoreError, fleet.FleetError, NoMatch)


def _matched(store: HistoryQueries, pattern: str) -> HistoryQueries:
    """``store``, or NoMatch when a pattern the user gave matches no benchmark ("*", the
    default, on a history with no runs yet is not an error: there is nothing yet)."""
    if pattern != "*" and not store.benchmark_names(pattern):
        raise NoMatch(f"no benchmark matches {pattern!r} in {store.safe_url}")
    return store


def cmd_history(args) -> int:
    series = _matched(open_queries(args.store), args.pattern).series(
        args.pattern, metric=args.metric, hardware_class=args.hw_class
    )
    if not series:
        raise NoMatch(f"no benchmark matches {args.pattern!r} in class {args.hw_class!r}")
    if args.json:
        _print_json([
            {"benchmark": n, "hardware_class": hw, "metric": args.metric,
             "runs": [{"run_id": p.run_id, "run_key": p.run_key,
                       "started_at": p.started_at.isoformat(), "value": p.value,
                       "q1": p.low, "q3": p.high} for p in s]}
            for (n, hw), s in sorted(series.items())
        ])  # fmt: skip
        return EXIT_OK
    rows = [
        [n, hw, p.run_id, f"{p.started_at:%Y-%m-%d %H:%M}", f"{p.value:.4g}"]
        for (n, hw), s in sorted(series.items())
        for p in s
    ]
    table(f"history of {args.metric}", ["benchmark", "class", "run", "time (UTC)", "value"], rows)
    return EXIT_OK


def cmd_changes(args) -> int:
    store = _matched(open_queries(args.store), args.pattern)
    found = detect(store, args.pattern, metric=args.metric,
                   hardware_class=args.hw_class, window=args.window, max_pvalue=args.max_pvalue,
                   min_magnitude=args.min_magnitude)  # fmt: skip
    if args.json:
        _print_json([c.as_dict() for c in found])
    elif found:
        table(
            f"change points in {args.metric}",
            ["benchmark", "class", "index", "run", "time (UTC)", "before", "after", "change", "p"],
            [[c.benchmark, c.hardware_class, c.index, c.run_id, f"{c.started_at:%Y-%m-%d %H:%M}",
              f"{c.before:.4g}", f"{c.after:.4g}", f"{c.change:+.1%}", f"{c.p_value:.1e}"]
             for c in found],
        )  # fmt: skip
    else:
        print("no change points")
    return EXIT_FAIL if (found and args.fail_on_change) else EXIT_OK


def cmd_annotate(args) -> int:
    n = open_annotations(args.store).annotate(
        args.pattern, args.run, args.text, accepted=args.accept, hardware_class=args.hw_class
    )
    kind = "accepted change" if args.accept else "note"
    print(f"annotation {n}: {kind} for {args.pattern} from run {args.run}")
    return EXIT_OK


def cmd_exclude(args) -> int:
    run_id = open_annotations(args.store).exclude(args.run, args.reason)
    print(f"run {run_id} excluded: {args.reason}")
    return EXIT_OK


def cmd_export(args) -> int:
    runs = open_queries(args.store).export(args.run)
    doc = {"schema": "perfsuite.history-export/1", "runs": runs}
    text = finite_json(doc, indent=1, default=str)
    if args.out:
        atomic_write_text(args.out, text + "\n")
        print(f"{len(runs)} runs written to {args.out}")
    else:
        sys.stdout.write(text + "\n")
    return EXIT_OK


def cmd_gate(args) -> int:
    """The nightly verdict over time: exit 1 when a point regressed against its history (or,
    with too little history, against --baseline), or stepped in its last runs."""
    config = args.config or (Path("pyproject.toml") if Path("pyproject.toml").is_file() else None)
    try:
        cfg = load_gate_config(config, args.threshold, None)
        result = gate_history(open_queries(args.store), run=args.run, config=cfg,
                              min_runs=args.min_runs, last=args.last, recent=args.recent,
                              baseline=args.baseline, confirm=args.confirm_runs)  # fmt: skip
    except (GateConfigError, BaselineError) as exc:
        print(f"perfsuite db gate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for line in history_lines(result):
        print(terminal_line(line))
    if args.summary:
        append_text(args.summary, history_markdown(result))  # GITHUB_STEP_SUMMARY appends
    if args.json:
        atomic_write_text(args.json, finite_json(history_json(result), indent=1) + "\n")
    return EXIT_FAIL if result.failing else EXIT_OK


def cmd_trends(args) -> int:
    store = _matched(open_queries(args.store), args.pattern)
    page = render(store, args.pattern, metric=args.metric, last=args.last)
    atomic_write_text(args.out, page)
    print(f"trend page: {args.out}")
    return EXIT_OK


def cmd_fleet(args) -> int:
    rules = fleet.load_rules(args.rules)
    stored = open_queries(args.store).qualifications(args.hw_class)
    classes = sorted({q.report.fingerprint.hardware_class for q in stored})
    if len(classes) != 1:
        why = "no qualification reports in the store"
        if classes:
            why = f"hosts of {len(classes)} classes ({', '.join(classes)}); pick one with --class"
        print(f"perfsuite db fleet: {why}", file=sys.stderr)
        return EXIT_USAGE
    hosts: dict[str, records.QualificationReport] = {}
    for q in stored:
        name = q.report.fingerprint.fields.get("os.hostname") or f"host{q.host_id}"
        hosts[name if name not in hosts else f"{name}#{q.host_id}"] = q.report
    measured = {n: fleet.metrics(records.dump(r.measurements)) for n, r in hosts.items()}
    scores = fleet.score(measured, rules, classes[0])
    if args.json:
        _print_json([s.as_dict() for s in scores])
    else:
        fleet_table(scores, {h: r.verdict for h, r in hosts.items()})
    if args.out:
        for s in scores:
            atomic_write_text(args.out / f"{s.host}.json", finite_json(s.as_dict(), indent=1))
        print(f"per-host verdicts: {args.out}/<host>.json")
    if args.save_reference:
        good = [hosts[s.host] for s in scores if s.verdict == "PASS"]
        if not good:
            print("perfsuite db fleet: no passing host to build a reference from", file=sys.stderr)
            return EXIT_FAIL
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
        note = f"; fleet median over {len(good)} passing hosts"
        ref = make_reference(
            good[0].fingerprint, [g.measurements for g in good], when=when, note=note
        )
        atomic_write_text(args.save_reference, finite_json(records.dump(ref), indent=1) + "\n")
        print(f"reference saved: {args.save_reference}")
    return EXIT_FAIL if any(s.verdict == "FAIL" for s in scores) else EXIT_OK


def add_parser(subparsers) -> None:
    db = add_verb(subparsers, "db")
    add_options(db.add_argument, "db")
    cmds = db.add_subparsers(dest="db_command", required=True)

    def command(name, func, help_):
        p = cmds.add_parser(name, help=help_)
        p.set_defaults(func=func)
        return p

    def pattern(p, required=True):
        kw = {} if required else {"nargs": "?", "default": "*"}
        p.add_argument("pattern", metavar="ID_GLOB", help="benchmark ids, fnmatch style", **kw)

    def metric(p):
        p.add_argument("--metric", choices=METRICS, default="latency_median_ms")
        p.add_argument("--class", dest="hw_class", help="one hardware class")

    p = command("import", cmd_import, "import run directories, baselines, qualification.json")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--commit", help="the commit the runs measured")
    p = command("runs", cmd_runs, "list the stored runs")
    p.add_argument("--limit", type=positive_int)
    p.add_argument("--json", action="store_true")
    p = command("history", cmd_history, "a metric's value per run")
    pattern(p)
    metric(p)
    p.add_argument("--json", action="store_true")
    p = command("changes", cmd_changes, "change points (E-divisive means + t-test)")
    pattern(p, required=False)
    metric(p)
    p.add_argument("--window", type=positive_int, default=50, help="runs per window (50)")
    p.add_argument("--max-pvalue", type=fraction, default=0.001, help="(0.001)")
    p.add_argument(
        "--min-magnitude",
        type=positive_float,
        help="smallest relative step (default: twice the series' noise)",
    )
    p.add_argument("--fail-on-change", action="store_true", help="exit 1 when one is found")
    p.add_argument("--json", action="store_true")
    p = command("annotate", cmd_annotate, "annotate benchmarks from a run on")
    pattern(p)
    p.add_argument("--run", required=True, help="run id or key prefix")
    p.add_argument("--text", required=True)
    p.add_argument(
        "--accept",
        action="store_true",
        help="an accepted change: detection starts anew at this run",
    )
    p.add_argument("--class", dest="hw_class")
    p = command("exclude", cmd_exclude, "leave a run out of every series")
    p.add_argument("run", help="run id or key prefix")
    p.add_argument("--reason", required=True)
    p = command("export", cmd_export, "runs and results as JSON")
    p.add_argument("--run", help="one run (id or key prefix)")
    p.add_argument("--out", type=output_file, help="file to write, - for stdout (default: stdout)")
    p = command("trends", cmd_trends, "a static HTML page of trend charts")
    pattern(p, required=False)
    p.add_argument("--metric", choices=METRICS, default="latency_median_ms")
    p.add_argument("--out", type=output_file, default=Path("trends.html"))
    p.add_argument("--last", type=positive_int, help="the last N runs (all)")
    p = command("gate", cmd_gate, "gate the newest run on the history (the nightly verdict)")
    p.add_argument("--run", help="run id or key prefix (default: the newest)")
    p.add_argument(
        "--min-runs",
        type=positive_int,
        default=MIN_RUNS,
        help=f"previous runs a point needs before the history gates it ({MIN_RUNS})",
    )
    p.add_argument(
        "--last", type=positive_int, default=LAST_RUNS, help=f"previous runs pooled ({LAST_RUNS})"
    )
    p.add_argument(
        "--confirm-runs",
        type=positive_int,
        default=CONFIRM_RUNS,
        help=f"runs in a row a point must regress in to fail ({CONFIRM_RUNS}; 1 on a quiet host)",
    )
    p.add_argument(
        "--recent",
        type=positive_int,
        default=RECENT,
        help=f"a change point in the last N runs fails the gate ({RECENT})",
    )
    p.add_argument(
        "--baseline",
        metavar="DIR_OR_URL",
        help="stored baselines for points with too little history (default: none)",
    )
    p.add_argument("--threshold", type=positive_float, help="practical threshold")
    p.add_argument("--config", type=Path, help="[tool.perfsuite.gate] TOML")
    p.add_argument("--summary", type=output_file, help="append Markdown here")
    p.add_argument("--json", type=output_file, help="write the verdicts here")
    p = command("fleet", cmd_fleet, "score stored qualification reports across hosts")
    p.add_argument("--class", dest="hw_class")
    p.add_argument("--rules", type=Path, help="rule file (TOML)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", type=output_dir, help="write <host>.json verdicts here")
    p.add_argument(
        "--save-reference",
        type=output_file,
        metavar="FILE",
        help="a reference for the class: median over the passing hosts",
    )
