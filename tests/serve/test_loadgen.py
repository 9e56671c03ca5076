"""perfsuite.serve over MLPerf LoadGen with sleep-based fake SUTs (no models, little CPU):
each LoadGen run is ~1 s, so LoadGen's early stopping decides on a few hundred queries."""

from __future__ import annotations

import _thread
import math
import threading
import time
from pathlib import Path

import pytest

from perfsuite.records import Headline
from perfsuite.serve import (
    ScenarioRun,
    ScenarioSettings,
    SettingsError,
    SUTError,
    parse_summary,
    run_scenario,
    search_server_rate,
)

pytest.importorskip("mlperf_loadgen")

N_SAMPLES = 64
BOUND_MS = 15.0  # ResNet-50's server p99 bound


def sleeper(seconds_per_sample: float, calls: list | None = None):
    def worker(indices: list[int]) -> None:
        if calls is not None:
            calls.append(len(indices))
        time.sleep(seconds_per_sample * len(indices))

    return worker


def quick(scenario: str, **overrides) -> ScenarioSettings:
    values = dict(min_duration_s=1.0, min_query_count=10, max_duration_s=10.0)
    values.update(overrides)
    return ScenarioSettings(scenario, **values)


# --- the summary parser, on summaries captured from real LoadGen 6.0.17 runs (trimmed) ---

SERVER_INVALID = """\
================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : Server
Mode     : PerformanceOnly
Completed samples per second    : 853.83
Result is : INVALID
  Performance constraints satisfied : NO
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: NO
Recommendations:
 * Reduce target QPS to improve latency.
Early Stopping Result:
 * Run unsuccessful.
 * Processed 883 queries.
 * Would need to run at least 60216 more queries,
 with the run being successful if every additional
 query were under latency.

================================================
Additional Stats
================================================
Scheduled samples per second : 878.45
Min latency (ns)                : 1160238
Mean latency (ns)               : 19326308
99.00 percentile latency (ns)   : 37717080

================================================
Test Parameters Used
================================================
samples_per_query : 1
target_qps : 850
target_latency (ns): 15000000

No warnings encountered during test.

No errors encountered during test.
"""

SINGLE_STREAM_VALID = """\
================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : SingleStream
Mode     : PerformanceOnly
90.0th percentile latency (ns) : 2261671
Result is : VALID
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: Yes
Early Stopping Result:
 * Processed at least 64 queries (444).
 * Would discard 28 highest latency queries.
 * Early stopping 90.0th percentile estimate: 2302202
 * Not enough queries processed for 99.0th percentile
 early stopping estimate (would need to process at
 least 662 total queries).

================================================
Additional Stats
================================================
QPS w/ loadgen overhead         : 442.60
Mean latency (ns)               : 2224461
90.00 percentile latency (ns)   : 2261671

No warnings encountered during test.

No errors encountered during test.
"""


def test_parse_server_invalid_keeps_loadgen_reasons():
    fields, valid, reasons = parse_summary(SERVER_INVALID)
    assert not valid and fields["Result is"] == "INVALID"
    assert fields["Scheduled samples per second"] == 878.45
    assert fields["Completed samples per second"] == 853.83
    assert fields["99.00 percentile latency (ns)"] == 37717080.0
    assert fields["Performance constraints satisfied"] is False
    assert fields["Min duration satisfied"] is True
    assert fields["Early stopping satisfied"] is False
    assert fields["target_latency (ns)"] == 15e6
    assert reasons == [
        "* Reduce target QPS to improve latency.",
        "* Run unsuccessful.",
        "* Processed 883 queries.",
        "* Would need to run at least 60216 more queries, with the run being successful if "
        "every additional query were under latency.",
    ]


def test_parse_single_stream_valid_has_early_stopping_estimate_and_no_reasons():
    fields, valid, reasons = parse_summary(SINGLE_STREAM_VALID)
    assert valid and reasons == []
    assert fields["Early stopping 90.0th percentile estimate"] == 2302202.0
    assert fields["90.0th percentile latency (ns)"] == 2261671.0
    assert fields["Scenario"] == "SingleStream"


def test_parse_keeps_warnings_of_a_valid_run_out_of_its_reasons():
    """LoadGen can close a VALID run with "N warnings encountered": no reason (a reason
    explains an INVALID result), kept as a field; an ERRORS line stays a reason."""
    warned = SINGLE_STREAM_VALID.replace(
        "No warnings encountered during test.", "2 warnings encountered. See detailed log."
    )
    fields, valid, reasons = parse_summary(warned)
    assert valid and reasons == [] and fields["Warnings"].startswith("2 warnings")
    failed = warned.replace("No errors encountered during test.", "3 ERRORS encountered.")
    assert parse_summary(failed)[2] == ["3 ERRORS encountered."]


def test_parse_rejects_other_text():
    with pytest.raises(ValueError, match="not a LoadGen summary"):
        parse_summary("hello: world\n")


# --- settings ---


@pytest.mark.parametrize(
    "overrides, field",
    [
        (dict(scenario="server", target_qps=float("nan"), latency_bound_ms=15), "target_qps"),
        (dict(scenario="server", target_qps=float("inf"), latency_bound_ms=15), "target_qps"),
        (dict(scenario="server", target_qps=-5.0, latency_bound_ms=15), "target_qps"),
        (dict(scenario="offline", target_qps=0), "target_qps"),
        (dict(scenario="server", target_qps=100, latency_bound_ms=0), "latency_bound_ms"),
        (dict(scenario="server", target_qps=100), "latency_bound_ms"),
        (dict(scenario="single_stream", min_duration_s=0), "min_duration_s"),
        (dict(scenario="single_stream", max_duration_s=0.5), "max_duration_s"),
        (dict(scenario="multi_stream", samples_per_query=0), "samples_per_query"),
        (
            dict(scenario="single_stream", target_latency_percentile=100),
            "target_latency_percentile",
        ),
        (dict(scenario="streaming"), "scenario"),
    ],
)
def test_bad_settings_are_one_line_naming_the_field(overrides, field):
    with pytest.raises(SettingsError) as caught:
        ScenarioSettings(**overrides)
    message = str(caught.value)
    assert message.startswith(f"{field}: must be") and "\n" not in message


def test_server_and_offline_runs_need_a_target_rate(tmp_path):
    with pytest.raises(SettingsError, match=r"^target_qps: must be .* for offline runs"):
        run_scenario(ScenarioSettings("offline"), [sleeper(0.001)], N_SAMPLES, tmp_path)


def test_default_percentiles_follow_mlperf():
    assert ScenarioSettings("single_stream").target_latency_percentile == 90
    assert ScenarioSettings("multi_stream").target_latency_percentile == 99
    assert (
        ScenarioSettings("server", latency_bound_ms=15, target_qps=1).target_latency_percentile
        == 99
    )


# --- the four scenarios on a fake SUT ---


@pytest.mark.serial  # wall-clock bounds on 1-2 ms sleeps: an idle host
def test_single_stream_p90_is_the_service_time(tmp_path):
    run = run_scenario(quick("single_stream"), [sleeper(0.002)], N_SAMPLES, tmp_path)
    assert run.valid, run.reasons
    assert run.headline.name == "Early stopping 90.0th percentile estimate (s)"
    assert 0.0019 < run.headline.value < 0.006 and not run.headline.higher_is_better
    assert run.summary_path.exists() and run.detail_path.exists()
    assert len(run.latencies_s) > 100 and min(run.latencies_s) >= 0.0019


@pytest.mark.serial  # wall-clock bounds on 1-2 ms sleeps: an idle host
def test_multi_stream_headline_is_per_query_latency(tmp_path):
    # 2 samples of 1 ms per query; p99 early stopping needs >= 662 queries.
    settings = quick(
        "multi_stream", samples_per_query=2, min_query_count=700, expected_latency_ms=1.0
    )
    calls: list[int] = []
    run = run_scenario(settings, [sleeper(0.001, calls)], N_SAMPLES, tmp_path)
    assert run.valid, run.reasons
    assert set(calls) == {2}  # one batch per query
    assert run.headline.name == "Early stopping 99.0th percentile estimate (s)"
    # per query: both samples (>= 2 ms). The upper bound catches a wrong unit or a total, not
    # speed: on the shared Zen 5 VM this p99 read 8.3 ms alone and 9.5 ms beside another
    # test run, past the 8 ms bound it had (docs/measurements/2026-12-07-zen5-test-suite.md)
    assert 0.0019 < run.headline.value < 0.05


@pytest.mark.serial  # wall-clock bounds on 1-2 ms sleeps: an idle host
def test_server_below_capacity_is_valid_at_the_target_rate(tmp_path):
    settings = quick("server", target_qps=500, latency_bound_ms=BOUND_MS, min_query_count=600)
    run = run_scenario(settings, [sleeper(0.001)], N_SAMPLES, tmp_path)
    assert run.valid, run.reasons
    assert run.headline.name == "Scheduled samples per second"
    assert 400 < run.headline.value < 600


def test_overloaded_server_is_invalid_with_loadgens_reason(tmp_path):
    # 2x the 1 ms worker's capacity for 0.5 s: the backlog drains in about another 0.5 s.
    settings = quick("server", target_qps=2000, latency_bound_ms=BOUND_MS, min_duration_s=0.5)
    run = run_scenario(settings, [sleeper(0.001)], N_SAMPLES, tmp_path)
    assert not run.valid and run.result == "INVALID"
    assert "* Reduce target QPS to improve latency." in run.reasons
    assert run.fields["Performance constraints satisfied"] is False


@pytest.mark.serial  # wall-clock bounds on 1-2 ms sleeps: an idle host
def test_offline_rate_scales_with_workers(tmp_path):
    one = run_scenario(
        quick("offline", target_qps=500), [sleeper(0.002)], N_SAMPLES, tmp_path / "one"
    )
    calls_a, calls_b = [], []
    two = run_scenario(
        quick("offline", target_qps=1000),
        [sleeper(0.002, calls_a), sleeper(0.002, calls_b)],
        N_SAMPLES,
        tmp_path / "two",
    )
    assert one.valid and two.valid, (one.reasons, two.reasons)
    assert one.headline.name == "Samples per second"
    assert 300 < one.headline.value < 520  # 1 / 2 ms
    assert calls_a and calls_b  # worker-per-stream: both sessions served
    assert two.headline.value > 1.5 * one.headline.value


# --- failures ---


def test_raising_worker_ends_the_run_with_one_line_error(tmp_path):
    calls: list[int] = []

    def flaky(indices):
        calls.append(1)
        if len(calls) == 20:
            raise ValueError("session exploded\nwith a second line")
        time.sleep(0.001)

    outcome: list[BaseException] = []

    def run():
        try:
            run_scenario(
                quick("server", target_qps=200, latency_bound_ms=BOUND_MS, min_duration_s=0.5),
                [flaky],
                N_SAMPLES,
                tmp_path,
            )
        except BaseException as error:  # noqa: BLE001 - inspected below
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "LoadGen hung after a worker raised"
    assert len(outcome) == 1 and isinstance(outcome[0], SUTError)
    assert str(outcome[0]) == "worker 0 raised ValueError: session exploded"
    # LoadGen's state was torn down: the next run works.
    again = run_scenario(
        quick("offline", target_qps=500, min_duration_s=0.2),
        [sleeper(0.001)],
        N_SAMPLES,
        tmp_path / "again",
    )
    assert again.result in ("VALID", "INVALID")


def test_ctrl_c_drains_and_reraises_instead_of_deadlocking(tmp_path):
    # KeyboardInterrupt in the main thread 0.3 s into a 1 s server run: the SUT completes the
    # rest without inference, LoadGen returns at its min_duration, the interrupt propagates.
    settings = quick("server", target_qps=200, latency_bound_ms=BOUND_MS)
    calls: list[int] = []
    timer = threading.Timer(0.3, _thread.interrupt_main)
    started = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_scenario(settings, [sleeper(0.001, calls)], N_SAMPLES, tmp_path)
    finally:
        timer.cancel()
    assert time.perf_counter() - started < 5
    assert 0 < len(calls) < 150  # inference stopped at the interrupt (~60 of ~200 queries)


# --- server rate search ---


@pytest.fixture(scope="module")
def searches(tmp_path_factory):
    settings = quick("server", target_qps=None, latency_bound_ms=BOUND_MS, min_query_count=600)
    found = {}
    for name, seconds in (("fast", 0.001), ("slow", 0.002)):
        root = tmp_path_factory.mktemp(f"search-{name}")
        found[name] = search_server_rate(
            settings, [sleeper(seconds)], N_SAMPLES, root, max_steps=6, rel_precision=0.2
        )
        found[name + "-root"] = root
    return found


@pytest.mark.slow
@pytest.mark.serial
def test_server_search_converges_near_capacity(searches):
    search = searches["fast"]
    assert search.converged and search.best is not None, [r.reasons for r in search.steps]
    lo, hi = search.bracket
    assert hi is None or hi / lo - 1 <= 0.2
    assert 300 < search.best.settings.target_qps <= 1000  # the 1 ms worker's capacity
    assert any(not run.valid and run.reasons for run in search.steps)
    step_dirs = sorted(p.name for p in searches["fast-root"].iterdir())
    assert len(step_dirs) == len(search.steps) and step_dirs[0].startswith("step-0-")


@pytest.mark.slow
@pytest.mark.serial
def test_slower_worker_gets_a_lower_server_rate(searches):
    slow, fast = searches["slow"].best, searches["fast"].best
    assert slow is not None and fast is not None
    assert slow.settings.target_qps < fast.settings.target_qps
    assert slow.settings.target_qps <= 500  # the 2 ms worker's capacity


def test_search_reports_why_nothing_was_valid(tmp_path):
    settings = quick("server", target_qps=3000, latency_bound_ms=BOUND_MS, min_duration_s=0.3)
    search = search_server_rate(
        settings, [sleeper(0.001)], N_SAMPLES, tmp_path, lo_qps=3000, max_steps=2
    )
    assert search.best is None and not search.converged and len(search.steps) == 1
    # the floor's grid rate: (1.05)^k >= 3000
    assert search.why_no_best.startswith("INVALID even at 3135 qps: ")
    assert "Reduce target QPS" in search.why_no_best


class FakeSystem:
    """run_scenario for a system VALID below ``capacity`` queries/s (a worker raises at
    ``fails_at``): the search's logic without LoadGen's seconds."""

    def __init__(self, capacity: float, fails_at: int | None = None):
        self.capacity, self.fails_at, self.rates = capacity, fails_at, []

    def __call__(self, settings, workers, n_samples, log_dir):
        if len(self.rates) == self.fails_at:
            raise SUTError("worker 0 raised RuntimeError: out of memory")
        self.rates.append(settings.target_qps)
        valid = settings.target_qps <= self.capacity
        head = Headline(name="Scheduled samples per second", value=settings.target_qps,
                        unit="samples/s", higher_is_better=True)  # fmt: skip
        return ScenarioRun(
            scenario="server", valid=valid, result="VALID" if valid else "INVALID",
            reasons=[] if valid else ["* Reduce target QPS"], fields={}, headline=head,
            latencies_s=[0.01], duration_s=1.0, summary_path=Path(log_dir) / "s.txt",
            detail_path=Path(log_dir) / "d.txt", settings=settings,
        )  # fmt: skip


@pytest.mark.parametrize("start, most", [(20.0, 10), (95.0, 4), (124.0, 5), (400.0, 8)])
def test_search_lands_on_the_same_grid_rate_from_any_start(monkeypatch, tmp_path, start, most):
    """Rates on one grid, (1 + precision)^k: wherever a search starts, it ends at the
    highest grid rate under the capacity, with the next grid rate INVALID."""
    system = FakeSystem(capacity=123.0)
    monkeypatch.setattr("perfsuite.serve.search.run_scenario", system)
    settings = quick("server", target_qps=start, latency_bound_ms=BOUND_MS)
    search = search_server_rate(settings, [], N_SAMPLES, tmp_path, max_steps=12, rel_precision=0.1)
    assert search.converged and search.failed_step is None
    assert search.best.settings.target_qps == pytest.approx(1.1**50)  # 117.4 <= 123 < 129.1
    assert search.bracket == (pytest.approx(1.1**50), pytest.approx(1.1**51))
    assert all(math.log(r) / math.log(1.1) == pytest.approx(round(math.log(r) / math.log(1.1)))
               for r in system.rates)  # fmt: skip
    assert len(system.rates) <= most  # a start near the answer costs few steps


def test_a_failed_step_keeps_the_steps_before_it(monkeypatch, tmp_path):
    monkeypatch.setattr("perfsuite.serve.search.run_scenario", FakeSystem(123.0, fails_at=2))
    settings = quick("server", target_qps=100.0, latency_bound_ms=BOUND_MS)
    search = search_server_rate(settings, [], N_SAMPLES, tmp_path, max_steps=8, rel_precision=0.1)
    assert len(search.steps) == 2 and not search.converged
    assert search.best is not None and search.best.settings.target_qps == pytest.approx(1.1**49)
    assert search.failed_step.startswith("step 2 (129.1 queries/s): worker 0 raised RuntimeError")
