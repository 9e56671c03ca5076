"""perfsuite.llm.serving without a runtime: arrivals, per-request arithmetic, the search."""

from __future__ import annotations

import numpy as np
import pytest

from perfsuite.llm.serving import (
    Request,
    ServedRequest,
    Workload,
    grid_rate,
    schedule,
    search,
    summarize,
)


def test_arrivals_have_the_rate_lengths_and_burstiness_asked():
    work = Workload(requests=4000, input_tokens=(8, 12), output_tokens=(2, 5), duration_s=0)
    poisson = schedule(work, rate=50.0, vocab=100)
    gaps = np.diff([r.arrival_s for r in poisson])
    assert len(poisson) == 4000 and poisson[0].arrival_s == 0.0
    assert np.mean(gaps) == pytest.approx(1 / 50, rel=0.05)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, abs=0.06)  # exponential: CV 1
    bursty = schedule(Workload(requests=4000, burstiness=0.25, duration_s=0), 50.0, 100)
    b_gaps = np.diff([r.arrival_s for r in bursty])
    assert np.std(b_gaps) / np.mean(b_gaps) == pytest.approx(2.0, rel=0.1)  # gamma: 1/sqrt(k)
    assert {len(r.prompt) for r in poisson} == set(range(8, 13))
    assert {r.output_tokens for r in poisson} == {2, 3, 4, 5}
    assert all(r.prompt.min() >= 3 and r.prompt.max() < 100 for r in poisson)
    again = schedule(work, rate=50.0, vocab=100)
    assert all(np.array_equal(a.prompt, b.prompt) for a, b in zip(poisson, again, strict=True))
    assert len(schedule(Workload(requests=4, duration_s=3.0), 10.0, 100)) == 30  # rate x duration
    with pytest.raises(ValueError, match="request rate must be positive"):
        schedule(work, 0.0, 100)


def _served(arrival, times):
    return ServedRequest(Request(arrival, np.array([5]), len(times)), list(times))


def test_ttft_tpot_goodput_arithmetic():
    served = [
        _served(0.0, [0.10, 0.12, 0.14]),  # TTFT 100 ms, TPOT 20 ms: meets both
        _served(0.5, [0.90, 0.95]),  # TTFT 400 ms: misses TTFT
        _served(1.0, [1.05, 1.25, 1.45]),  # TPOT 200 ms: misses TPOT
    ]
    run = summarize(served, rate=3.0, batching="continuous", ttft_bound=0.2, tpot_bound=0.1)
    assert served[0].ttft == pytest.approx(0.1) and served[2].tpot == pytest.approx(0.2)
    assert run.duration_s == pytest.approx(1.45) and run.completed == 3
    assert run.goodput_rps == pytest.approx(1 / 1.45)
    assert run.output_tokens_per_s == pytest.approx(8 / 1.45)
    assert run.ttft_s.p50 == pytest.approx(0.1) and run.e2e_s.p50 == pytest.approx(0.45)
    assert not run.meets_slo  # p99 TTFT is the 400 ms request
    assert sorted(run.e2e_each_s) == pytest.approx([0.14, 0.45, 0.45])
    relaxed = summarize(served, 3.0, "static", ttft_bound=0.5, tpot_bound=0.25, max_batch=2)
    assert relaxed.meets_slo and relaxed.goodput_rps == pytest.approx(3 / 1.45)
    unfinished = summarize([*served, _served(2.0, [])], 3.0, "continuous", 0.5, 0.25)
    assert unfinished.completed == 3 and not unfinished.meets_slo


def _fake(capacity):
    def run_at(rate):
        served = [_served(0.0, [0.01, 0.02])]
        run = summarize(served, rate, "continuous", 1.0, 1.0)
        return run.model_copy(update={"meets_slo": rate <= capacity})

    return run_at


@pytest.mark.parametrize("start", [1.0, 7.0, 40.0, 300.0])
def test_search_finds_the_highest_grid_rate_under_capacity_from_any_start(start):
    runs, best, converged = search(_fake(33.0), start, precision=0.25, max_steps=20)
    expected = max(grid_rate(k, 0.25) for k in range(40) if grid_rate(k, 0.25) <= 33.0)
    assert converged and runs[best].rate_rps == pytest.approx(expected)
    assert any(r.rate_rps == pytest.approx(expected * 1.25) and not r.meets_slo for r in runs)


def test_search_reports_no_rate_when_none_meets_the_bounds():
    runs, best, converged = search(_fake(0.0), 10.0, precision=0.25, max_steps=4)
    assert best is None and not converged and len(runs) == 4
    assert runs[1].rate_rps < runs[0].rate_rps  # it halved, looking for a passing rate
