"""A LoadGen point: MLPerf LoadGen drives the point's framework sessions under one of its
scenarios (``perfsuite.serve``). ``streams`` sessions serve the queries, the point's threads
split evenly between them and, when the point is bound, its CPUs too (worker-per-stream);
one stream is the single-session SUT.

The record's samples are the per-query latencies the SUT saw in the reported LoadGen run
(issue to completion, queueing included), so the report's percentiles are real; what the
gate compares is the scenario's headline (``records.Headline``): a server search's rate
and an offline rate on their own (``gated``), single- and multi-stream on the samples.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import numpy as np

from perfsuite import records, serve
from perfsuite.execute import calibration, faults
from perfsuite.execute.interference import Sampler
from perfsuite.execute.measure import one_window, warm_up
from perfsuite.prepare.backends import RunConfig
from perfsuite.records import Point

# Distinct inputs LoadGen's sample indices map to (its performance sample count): enough
# that a query does not always see the cache state of the one before.
SAMPLES = 16


def loadgen_missing() -> str | None:
    """Why LoadGen points cannot run here (a skip), or None."""
    if importlib.util.find_spec("mlperf_loadgen") is None:
        return "mlcommons-loadgen is not installed (pip install perfsuite[frameworks])"
    return None


# The fewest queries whose run LoadGen's early stopping can call VALID at the scenario's
# percentile when no query is late (found on LoadGen 6.0.17: server p99 ~460, multi-stream
# p99 662), rounded up; fewer make every run INVALID for its count, not its latency.
EARLY_STOPPING_QUERIES = {"single_stream": 100, "multi_stream": 700, "server": 600, "offline": 1}


class ServingError(RuntimeError):
    """A LoadGen point that cannot run as set up: one line, an error for the point."""


def settings_for(point: Point, loadgen: records.LoadGenSettings) -> serve.ScenarioSettings:
    """The point's LoadGen settings from the profile's (``Profile.loadgen``)."""
    try:
        return serve.ScenarioSettings(
            scenario=point.mode,
            latency_bound_ms=loadgen.latency_bound_ms,
            target_qps=loadgen.target_qps or None,
            min_duration_s=loadgen.min_duration_s,
            min_query_count=loadgen.min_query_count or EARLY_STOPPING_QUERIES[point.mode],
            performance_sample_count=SAMPLES,
            # LoadGen stops issuing here even before min_duration: room for the server search
            # to go down to ~4 queries/s with 600 queries (a slowed SUT still gets a rate)
            max_duration_s=max(2 * loadgen.min_duration_s + 60, 180.0),
            timeline=point.mode != "offline",  # per-query table beside the logs
        )
    except serve.SettingsError as exc:
        raise ServingError(f"{point.id}: {exc}") from None


def per_search(protocol: records.MeasureProtocol) -> list[records.MeasureProtocol]:
    """A one-search protocol for each of a server point's searches (``protocol.sessions``),
    each with its own log folder (search-1, search-2, ...) when there are several."""
    one = protocol.model_copy(update={"sessions": 1})
    if protocol.sessions == 1 or protocol.log_dir is None:
        return [one] * protocol.sessions
    out = []
    for i in range(protocol.sessions):
        # the unloaded service time once: the first search's (each costs a LoadGen run)
        loadgen = one.loadgen and one.loadgen.model_copy(update={"unloaded": i == 0})
        where = str(Path(protocol.log_dir) / f"search-{i + 1}")
        out.append(one.model_copy(update={"log_dir": where, "loadgen": loadgen}))
    return out


def split_cpus(cpus, streams: int) -> list[tuple[int, ...] | None]:
    """Each stream's CPUs: consecutive equal shares of a bound point's, else unpinned."""
    if not cpus:
        return [None] * streams
    share = max(1, len(cpus) // streams)
    return [tuple(cpus[i * share : (i + 1) * share]) or tuple(cpus) for i in range(streams)]


def measure(
    point: Point, protocol: records.MeasureProtocol, opened, about, binding, cpus, t_setup: float
):
    """Open ``point.streams`` sessions of ``opened`` (``runner.open_point``), warm each up,
    run LoadGen (a server point: the rate search) with its logs under ``protocol.log_dir``."""
    model, variant, cfg, backend, _ = opened
    loadgen = protocol.loadgen
    if loadgen is None or protocol.log_dir is None:
        raise ServingError(f"{point.id}: a LoadGen point needs its settings and log directory")
    settings = settings_for(point, loadgen)
    log_dir = Path(protocol.log_dir)
    inputs = [model.inputs(point.batch, seed=i) for i in range(SAMPLES)]
    per_stream = point.threads // point.streams
    with ExitStack() as stack:
        sessions = [
            stack.enter_context(
                backend.prepare(
                    variant.path,
                    RunConfig.for_point(
                        point, chunk, cfg.options, threads=per_stream, inputs=inputs[0]
                    ),
                )
            )
            for chunk in split_cpus(cpus, point.streams)
        ]
        call_s = [_warmed_call_s(s, inputs, protocol) for s in sessions]
        if point.mode in ("single_stream", "multi_stream"):
            # LoadGen pre-generates min_duration / expected latency queries: a guess too high
            # runs out of queries before min_duration and the run is INVALID for it; too low
            # only pre-generates more, so guess half the warm-up's time
            per_sample_ms = float(np.median(call_s)) * 1e3 / 2
            per_query = settings.samples_per_query if point.mode == "multi_stream" else 1
            expected_ms = per_sample_ms * per_query
            # and it stops issuing at max_duration: room for twice the queries' expected time
            needed_s = 4 * settings.min_query_count * expected_ms / 1e3
            settings = replace(
                settings,
                expected_latency_ms=expected_ms,
                max_duration_s=max(settings.max_duration_s, needed_s),
            )
        setup_s = time.perf_counter() - t_setup
        delay = faults.query_delay_s(point.id)
        workers = [_worker(faults.slowed(s.infer, point.id), inputs, delay) for s in sessions]
        unloaded = _unloaded(
            point, loadgen, settings, workers[0], log_dir, float(np.median(call_s))
        )
        before = calibration.probe()
        with Sampler() as sampler:
            runs, best, search = _run(point, settings, workers, log_dir, loadgen)
        speed = records.SpeedAround(before=before, after=calibration.probe())
        settings_seen = dict(sessions[0].settings)
    if search is not None and search.best is None:  # no rate to report: an error, logs kept
        why = search.why_no_best or "no step completed"
        if search.failed_step:
            why = f"the search stopped at {search.failed_step}" + (
                f" ({why})" if search.steps else ""
            )
        raise ServingError(f"{point.id}: no VALID server rate; {why}")
    reported = runs[best] if best is not None else runs[-1]
    latencies = [float(x) for x in reported.latencies_s if x > 0]
    if not latencies:
        raise ServingError(f"{point.id}: LoadGen completed no queries")
    record = records.LoadGenRecord(
        scenario=point.mode,
        settings={**records.dump(loadgen), "performance_sample_count": SAMPLES},
        workers=point.streams,
        runs=[_run_record(r, log_dir) for r in runs],
        best=best,
        converged=None if search is None else search.converged,
        bracket_qps=None if search is None else search.bracket,
        searches=[] if search is None else [_search_record(search, best)],
        unloaded=None if unloaded is None else _run_record(unloaded, log_dir),
    )
    headline = record.runs[runs.index(reported)].headline  # INVALID ones say so in the record
    per_query = settings.samples_per_query if point.mode == "multi_stream" else 1
    return one_window(
        latencies,
        point.batch * per_query,
        sampler.result,
        speed,
        # throughput: what completed over the reported run, not 1/p50 of a loaded session
        window_s=reported.duration_s,
        protocol=records.RunProtocol(
            window_s=sum(r.duration_s for r in runs), items=len(latencies)
        ),
        settings={**settings_seen, "threads_per_stream": per_stream},
        binding=binding,
        setup_s=setup_s,
        model=about,
        headline=headline,
        loadgen=record,
    )


def _unloaded(point: Point, loadgen, settings, worker, log_dir: Path, call_s: float):
    """A server point's service time with no queueing, before its search: a SingleStream
    run of one of its sessions (each query issued when the last completed), its timeline
    beside the search's, so the report shows how much of the server p99 is waiting."""
    if point.mode != "server" or not loadgen.unloaded:
        return None
    single = serve.ScenarioSettings(
        scenario="single_stream",
        min_duration_s=settings.min_duration_s,
        min_query_count=EARLY_STOPPING_QUERIES["single_stream"],
        performance_sample_count=SAMPLES,
        expected_latency_ms=call_s * 1e3 / 2,  # too low only pre-generates more queries
        max_duration_s=settings.max_duration_s,
        timeline=True,
    )
    return serve.run_scenario(single, [worker], SAMPLES, log_dir / "unloaded")


def _warmed_call_s(session, inputs, protocol: records.MeasureProtocol) -> float:
    """Warm ``session`` up with ``protocol.warmup_calls`` calls, at least 3 (LoadGen's first
    queries must not pay for it); the median time of its last 3 calls, in seconds."""
    times: list[float] = []
    queries = itertools.cycle(inputs)
    calls = max(3, int(protocol.warmup_calls))
    warm_up(lambda: session.infer(next(queries)), protocol, calls=calls, times=times)
    return float(np.median(times[-3:]))


def _worker(infer, inputs, delay_s: float = 0.0):
    def serve_samples(indices: list[int]) -> None:
        for i in indices:
            infer(inputs[i % SAMPLES])
            if delay_s:
                time.sleep(delay_s)

    return serve_samples


def _run(point: Point, settings, workers, log_dir: Path, loadgen: records.LoadGenSettings):
    """(runs, index of the reported VALID one or None, the search or None)."""
    if point.mode == "server":
        search = serve.search_server_rate(
            settings,
            workers,
            SAMPLES,
            log_dir,
            # below this rate a run cannot issue its minimum queries before max_duration: it
            # would be INVALID for that, not for its latency
            lo_qps=settings.min_query_count / (0.9 * settings.max_duration_s),
            max_steps=loadgen.search_steps,
            rel_precision=loadgen.search_precision,
        )
        runs = list(search.steps)
        best = None if search.best is None else runs.index(search.best)
        return runs, best, search
    if point.mode == "offline" and settings.target_qps is None:  # LoadGen sizes its query by it
        settings = replace(settings, target_qps=serve.estimate_capacity_qps(workers, SAMPLES))
    run = serve.run_scenario(settings, workers, SAMPLES, log_dir)
    return [run], (0 if run.valid else None), None


def _search_record(search: serve.ServerSearch, best: int | None) -> records.LoadGenSearch:
    rate = search.best.headline.value if search.best and search.best.headline else None
    return records.LoadGenSearch(
        first_run=0, steps=len(search.steps), best=best, rate=rate,
        converged=search.converged, bracket_qps=search.bracket, failed_step=search.failed_step,
    )  # fmt: skip


def pool_searches(parts: list[records.Measurement]) -> records.Measurement:
    """One server point from its rate searches (each a fresh process or session): the
    headline is their median and carries every search's rate (``Headline.runs``, the spread
    the gate reads); the samples, and the reported run, are the median search's (the lower
    of the middle two for an even count); every search's runs stay in the record. What any
    pooled measurement pools (interference, calibration, set-up) is runner.pool_sessions'."""
    rates = [p.headline.value for p in parts]
    middle = sorted(range(len(parts)), key=lambda i: rates[i])[(len(parts) - 1) // 2]
    chosen = parts[middle]
    runs, searches = [], []
    for i, part in enumerate(parts):
        offset = len(runs)
        runs += part.loadgen.runs
        for found in part.loadgen.searches:
            shift = {"first_run": offset + found.first_run}
            if found.best is not None:
                shift["best"] = offset + found.best
            searches.append(found.model_copy(update=shift))
        if i == middle:
            best = None if part.loadgen.best is None else offset + part.loadgen.best
    unloaded = next((p.loadgen.unloaded for p in parts if p.loadgen.unloaded), None)
    loadgen = chosen.loadgen.model_copy(
        update={"runs": runs, "best": best, "searches": searches, "unloaded": unloaded}
    )
    headline = chosen.headline.model_copy(update={"value": float(np.median(rates)), "runs": rates})
    return chosen.model_copy(update={"headline": headline, "loadgen": loadgen})


def _run_record(run, log_dir: Path) -> records.LoadGenRun:
    """A ``serve.ScenarioRun`` as the result record keeps it (logs relative to the run)."""
    gated = run.valid and run.scenario in ("server", "offline")  # an INVALID rate is no rate
    headline = run.headline and run.headline.model_copy(update={"gated": gated, "valid": run.valid})
    fields = {  # JSON has no NaN: a field LoadGen printed as nan stays text
        k: v if not isinstance(v, float) or math.isfinite(v) else str(v)
        for k, v in run.fields.items()
    }
    return records.LoadGenRun(
        scenario=run.scenario,
        target_qps=run.settings.target_qps,
        valid=run.valid,
        reasons=list(run.reasons),
        fields=fields,
        headline=headline or None,
        duration_s=run.duration_s,
        log_dir=_relative(Path(run.summary_path).parent, log_dir),
        timeline=run.timeline,
    )  # fmt: skip


def _relative(path: Path, log_dir: Path) -> str:
    """The log folder relative to the run directory: log_dir is <run>/loadgen/<point id>,
    then /search-<i> for one of several searches or /remeasure-<ns> for a re-measure."""
    here = log_dir.resolve()
    run = next((p.parent for p in (here, *here.parents) if p.name == "loadgen"), here.parent.parent)
    try:
        return str(path.resolve().relative_to(run))
    except ValueError:
        return str(path)
