"""Drive MLPerf LoadGen (``mlcommons-loadgen``) over plain inference callables.

A *worker* is ``Callable[[list[int]], None]``: it runs inference on the given sample indices
(one batch) and returns when done. One worker gives a single-session SUT; N workers give a
worker-per-stream SUT (N threads, each owning one worker, pulling from one shared queue), so
the caller builds one framework session per worker with the threads split between them.

LoadGen decides VALID/INVALID and writes ``mlperf_log_summary.txt`` / ``mlperf_log_detail.txt``
into the run's log directory; ``ScenarioRun`` carries its parsed verdict, fields and reasons
plus the per-query latencies the SUT measured itself.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfsuite.records import SCENARIOS, Headline, TimelineSummary
from perfsuite.serve import timeline
from perfsuite.serve.summary import FieldValue, parse_summary

Worker = Callable[[list[int]], None]

# MLPerf's latency percentiles per scenario (the server one is the p99 latency bound).
DEFAULT_PERCENTILE = {"single_stream": 90.0, "multi_stream": 99.0, "server": 99.0, "offline": 90.0}
# Logs LoadGen always creates; kept only when tiny (the trace is empty unless enabled).
_BULKY_LOGS = ("mlperf_log_trace.json", "mlperf_log_accuracy.json")
_TINY_BYTES = 64 * 1024
_POLL_S = 0.1


class SettingsError(ValueError):
    """A ScenarioSettings field is out of range (one line: field, allowed range, value)."""


class SUTError(RuntimeError):
    """A worker raised during a LoadGen run (one line: worker, exception)."""


def _check(ok: bool, name: str, allowed: str, value) -> None:
    if not ok:
        raise SettingsError(f"{name}: must be {allowed} (got {value!r})")


def _positive(value) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


# LoadGen generates a server or offline test's whole schedule before it starts, about 300
# bytes a query (a 100,000 queries/s x 5 s server test peaked at 190 MB): a rate times a
# minimum duration above this would take gigabytes before the first query is issued.
MAX_SCHEDULED_QUERIES = 2_000_000


@dataclass(frozen=True)
class ScenarioSettings:
    scenario: str
    latency_bound_ms: float | None = None  # server: the p99 bound (ResNet-50 15, BERT 130)
    target_qps: float | None = None  # server: Poisson rate; offline: expected samples/s
    min_duration_s: float = 10.0
    min_query_count: int = 100
    max_duration_s: float = 120.0  # safety cap on issuing, not on draining a backlog
    samples_per_query: int = 8  # multi_stream
    target_latency_percentile: float | None = None  # None: MLPerf's (DEFAULT_PERCENTILE)
    performance_sample_count: int = 1024
    seed: int = 0
    offline_batch: int = 1  # offline: the one big query is served in batches of this size
    # single/multi_stream: LoadGen pre-generates min_duration / expected queries; too high a
    # value runs out of queries before min_duration ("Decrease the expected latency ...").
    expected_latency_ms: float | None = None
    # per-query timeline (serve.timeline): LoadGen's trace read for scheduled times and
    # issue delays, then dropped; timeline.csv in the log folder (not for offline: one query)
    timeline: bool = False

    def __post_init__(self):
        if self.target_latency_percentile is None and self.scenario in DEFAULT_PERCENTILE:
            object.__setattr__(self, "target_latency_percentile", DEFAULT_PERCENTILE[self.scenario])
        self.validate()

    def validate(self) -> None:
        _check(
            self.scenario in SCENARIOS, "scenario", f"one of {', '.join(SCENARIOS)}", self.scenario
        )
        # None is allowed here (a server search estimates it) and refused by run_scenario.
        if self.target_qps is not None:
            _check(_positive(self.target_qps), "target_qps", "a finite number > 0", self.target_qps)
            _check(
                self.target_qps * self.min_duration_s <= MAX_SCHEDULED_QUERIES,
                "target_qps",
                f"at most {MAX_SCHEDULED_QUERIES:,} queries over min_duration_s "
                f"({self.min_duration_s:g} s): <= {MAX_SCHEDULED_QUERIES / self.min_duration_s:g}"
                "/s",
                self.target_qps,
            )
        if self.scenario == "server" or self.latency_bound_ms is not None:
            _check(
                _positive(self.latency_bound_ms),
                "latency_bound_ms",
                "a finite number > 0 (ms)",
                self.latency_bound_ms,
            )
        _check(
            _positive(self.min_duration_s),
            "min_duration_s",
            "a finite number > 0 (s)",
            self.min_duration_s,
        )
        _check(
            _positive(self.max_duration_s) and self.max_duration_s >= self.min_duration_s,
            "max_duration_s",
            f"finite and >= min_duration_s ({self.min_duration_s})",
            self.max_duration_s,
        )
        for name in (
            "min_query_count",
            "samples_per_query",
            "performance_sample_count",
            "offline_batch",
        ):
            value = getattr(self, name)
            _check(
                isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                name,
                "an integer >= 1",
                value,
            )
        _check(
            isinstance(self.seed, int) and 0 <= self.seed < 2**63,
            "seed",
            "an integer in [0, 2**63)",
            self.seed,
        )
        p = self.target_latency_percentile
        _check(
            isinstance(p, (int, float)) and 0 < p < 100,
            "target_latency_percentile",
            "in (0, 100)",
            p,
        )
        if self.expected_latency_ms is not None:
            _check(
                _positive(self.expected_latency_ms),
                "expected_latency_ms",
                "a finite number > 0 (ms)",
                self.expected_latency_ms,
            )


@dataclass(frozen=True)
class ScenarioRun:
    scenario: str
    valid: bool
    result: str  # LoadGen's "Result is": VALID / INVALID
    reasons: list[str]  # LoadGen's own lines for an INVALID result
    fields: dict[str, FieldValue]  # the summary, keyed by LoadGen's labels
    headline: Headline | None
    latencies_s: list[float]  # per query issue -> complete (offline: per-batch service time)
    duration_s: float
    summary_path: Path
    detail_path: Path
    settings: ScenarioSettings = field(repr=False)
    timeline: TimelineSummary | None = None


def run_scenario(
    settings: ScenarioSettings, workers: Sequence[Worker], n_samples: int, log_dir: Path
) -> ScenarioRun:
    """Run one LoadGen performance test of settings.scenario over the workers."""
    import mlperf_loadgen as lg  # optional dependency: only serving benchmarks need it

    if settings.scenario in ("server", "offline") and settings.target_qps is None:
        raise SettingsError(
            f"target_qps: must be a finite number > 0 for {settings.scenario} runs (got None)"
        )
    if not workers:
        raise SettingsError("workers: must be a non-empty list of callables (got [])")
    _check(isinstance(n_samples, int) and n_samples >= 1, "n_samples", "an integer >= 1", n_samples)
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)

    sut = _QueueSUT(
        lg, list(workers), split=settings.offline_batch if settings.scenario == "offline" else None
    )
    sut_handle = lg.ConstructSUT(sut.issue_queries, sut.flush_queries)
    qsl_handle = None
    started = time.perf_counter()
    try:
        qsl_handle = lg.ConstructQSL(
            n_samples, min(n_samples, settings.performance_sample_count), _no_op, _no_op
        )
        sut.start()
        _start_test(lg, sut, sut_handle, qsl_handle, settings, log_dir)
    finally:
        duration = time.perf_counter() - started
        sut.stop()
        if not sut.abandoned:  # destroying under a running StartTest segfaults
            if qsl_handle is not None:
                lg.DestroyQSL(qsl_handle)
            lg.DestroySUT(sut_handle)
    if sut.failure is not None:
        raise sut.failure
    found = _timeline(settings, log_dir, sut.served())
    _drop_bulky_logs(log_dir)
    run = _read_run(settings, log_dir, sut.latencies(), duration)
    return replace(run, timeline=found) if found is not None else run


def _timeline(settings: ScenarioSettings, log_dir: Path, served) -> TimelineSummary | None:
    if not settings.timeline or settings.scenario == "offline":
        return None
    trace_path = log_dir / "mlperf_log_trace.json"
    trace = timeline.read_trace(trace_path) if trace_path.exists() else []
    rows = timeline.build(served, trace)
    if not rows:
        return None
    timeline.write_csv(rows, log_dir / timeline.TIMELINE_FILE)
    trace_path.unlink(missing_ok=True)  # ~2 KB a query; the table keeps what it said
    return timeline.summarize(rows, timeline.TIMELINE_FILE)


def _no_op(_samples) -> None:
    pass


def _start_test(
    lg, sut: _QueueSUT, sut_handle, qsl_handle, settings: ScenarioSettings, log_dir: Path
) -> None:
    """StartTest in a helper thread so that Ctrl-C reaches us: on it the SUT drains
    (completes everything without inference) and we re-raise once LoadGen returns; a second
    Ctrl-C abandons LoadGen (its objects leak: the process is on its way out)."""
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(log_dir)
    log_settings.log_output.copy_summary_to_stdout = False
    log_settings.enable_trace = settings.timeline and settings.scenario != "offline"
    # An audit.config in the current directory would silently change the test: point away.
    audit = str(log_dir / "no-audit.config")
    test_settings = _test_settings(lg, settings)
    raised: list[BaseException] = []
    # Wait on an Event, not Thread.join: a KeyboardInterrupt inside join() makes Python 3.11
    # mark the still-running thread as finished (bpo-45274 workaround), and destroying the SUT
    # under a running StartTest segfaults.
    done = threading.Event()

    def start_test():
        try:
            lg.StartTestWithLogSettings(sut_handle, qsl_handle, test_settings, log_settings, audit)
        except BaseException as error:  # noqa: BLE001 - re-raised in the calling thread
            raised.append(error)
        finally:
            done.set()

    threading.Thread(target=start_test, name="loadgen-start-test", daemon=True).start()
    try:
        while not done.wait(_POLL_S):
            pass
    except KeyboardInterrupt:
        sut.drain()
        try:
            while not done.wait(_POLL_S):
                pass
        except KeyboardInterrupt:
            sut.abandoned = True
            raise
        raise
    if raised:
        raise raised[0]


def _test_settings(lg, s: ScenarioSettings):
    ts = lg.TestSettings()
    ts.scenario = {
        "single_stream": lg.TestScenario.SingleStream,
        "multi_stream": lg.TestScenario.MultiStream,
        "server": lg.TestScenario.Server,
        "offline": lg.TestScenario.Offline,
    }[s.scenario]
    ts.mode = lg.TestMode.PerformanceOnly
    ts.min_duration_ms = round(s.min_duration_s * 1000)
    ts.max_duration_ms = round(s.max_duration_s * 1000)
    ts.min_query_count = s.min_query_count
    ts.qsl_rng_seed, ts.sample_index_rng_seed, ts.schedule_rng_seed = s.seed, s.seed + 1, s.seed + 2
    fraction = s.target_latency_percentile / 100
    if s.scenario == "server":
        ts.server_target_qps = s.target_qps
        ts.server_target_latency_ns = round(s.latency_bound_ms * 1e6)
        ts.server_target_latency_percentile = fraction
    elif s.scenario == "offline":
        ts.offline_expected_qps = s.target_qps
    elif s.scenario == "single_stream":
        ts.single_stream_target_latency_percentile = fraction
        if s.expected_latency_ms is not None:
            ts.single_stream_expected_latency_ns = round(s.expected_latency_ms * 1e6)
    else:
        ts.multi_stream_samples_per_query = s.samples_per_query
        ts.multi_stream_target_latency_percentile = fraction
        if s.expected_latency_ms is not None:
            ts.multi_stream_expected_latency_ns = round(s.expected_latency_ms * 1e6)
    return ts


class _QueueSUT:
    """LoadGen's issue thread only enqueues; N threads, one per worker, serve the queue.
    After a worker raises (or on Ctrl-C) the threads *drain*: they complete every sample
    without inference, because LoadGen waits for all completions before StartTest returns."""

    def __init__(self, lg, workers: list[Worker], split: int | None):
        self._lg = lg
        self._workers = workers
        self._split = split
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._serve, args=(i,), daemon=True, name=f"loadgen-worker-{i}")
            for i in range(len(workers))
        ]
        self._lock = threading.Lock()
        self._latencies: list[float] = []
        self._served: list[timeline.Served] = []
        self._draining = threading.Event()
        self.failure: SUTError | None = None
        self.abandoned = False  # LoadGen may still be running: leave its objects alone

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self.drain()  # nothing new arrives once StartTest returned; this covers early exits
        for _ in self._threads:
            self._queue.put(None)
        if self.abandoned:
            return
        for thread in self._threads:
            thread.join()

    def drain(self) -> None:
        self._draining.set()

    def latencies(self) -> list[float]:
        with self._lock:
            return list(self._latencies)

    def served(self) -> list[timeline.Served]:
        with self._lock:
            return list(self._served)

    def issue_queries(self, samples) -> None:  # LoadGen's thread: must never raise
        issued = time.perf_counter()
        if self._split is None:
            self._queue.put((issued, samples))
        else:
            for i in range(0, len(samples), self._split):
                self._queue.put((issued, samples[i : i + self._split]))

    def flush_queries(self) -> None:
        pass

    def _serve(self, index: int) -> None:
        worker = self._workers[index]
        while (item := self._queue.get()) is not None:
            issued, samples = item
            if not self._draining.is_set():
                begun = time.perf_counter()
                try:
                    worker([s.index for s in samples])
                except BaseException as error:  # noqa: BLE001 - reported after StartTest
                    self._fail(index, error)
                else:
                    done = time.perf_counter()
                    seen = timeline.Served(issued, begun, done, index, timeline.current_cpu())
                    with self._lock:
                        self._latencies.append(done - (issued if self._split is None else begun))
                        self._served.append(seen)
            self._lg.QuerySamplesComplete(
                [self._lg.QuerySampleResponse(s.id, 0, 0) for s in samples]
            )

    def _fail(self, index: int, error: BaseException) -> None:
        with self._lock:
            if self.failure is None:
                message = str(error).strip().splitlines()
                detail = f": {message[0]}" if message else ""
                self.failure = SUTError(f"worker {index} raised {type(error).__name__}{detail}")
                self.failure.__cause__ = error
        self._draining.set()


def _drop_bulky_logs(log_dir: Path) -> None:
    for name in _BULKY_LOGS:
        path = log_dir / name
        if path.exists() and path.stat().st_size > _TINY_BYTES:
            path.unlink()


def _read_run(
    settings: ScenarioSettings, log_dir: Path, latencies: list[float], duration: float
) -> ScenarioRun:
    summary_path = log_dir / "mlperf_log_summary.txt"
    fields, valid, reasons = parse_summary(summary_path.read_text())
    return ScenarioRun(
        scenario=settings.scenario,
        valid=valid,
        result=str(fields["Result is"]),
        reasons=reasons,
        fields=fields,
        headline=headline(settings.scenario, fields),
        latencies_s=latencies,
        duration_s=duration,
        summary_path=summary_path,
        detail_path=log_dir / "mlperf_log_detail.txt",
        settings=settings,
    )


def _find(fields: dict[str, FieldValue], prefix: str, suffix: str) -> tuple[str, float] | None:
    for key, value in fields.items():
        if key.startswith(prefix) and key.endswith(suffix) and isinstance(value, float):
            return key, value
    return None


def headline(scenario: str, fields: dict[str, FieldValue]) -> Headline | None:
    """The scenario's MLPerf metric: server scheduled samples/s, offline samples/s, stream
    scenarios the early-stopping latency estimate in seconds (LoadGen's plain target
    percentile when too few queries ran for early stopping). Named after LoadGen's label."""
    if scenario in ("server", "offline"):
        key = "Scheduled samples per second" if scenario == "server" else "Samples per second"
        value = fields.get(key)
        return _headline(key, value, "samples/s", True) if isinstance(value, float) else None
    found = _find(fields, "Early stopping ", "percentile estimate") or _find(
        fields, "", "th percentile latency (ns)"
    )
    if found is None:
        return None
    key, nanoseconds = found
    return _headline(key.replace(" (ns)", "") + " (s)", nanoseconds / 1e9, "s", False)


def _headline(name: str, value: float, unit: str, higher_is_better: bool) -> Headline | None:
    """None where LoadGen printed no usable number (nan, 0): a headline is a rate or a
    latency > 0. Whether it is gated is the sweep's decision (``execute.serving``)."""
    if not (math.isfinite(value) and value > 0):
        return None
    return Headline(name=name, value=value, unit=unit, higher_is_better=higher_is_better)
