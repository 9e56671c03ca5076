"""The one warm-up (``measure.warm_up``): the protocol's, or a fixed count of calls."""

from __future__ import annotations

from perfsuite.execute import serving
from perfsuite.execute.measure import warm_up
from perfsuite.records import MeasureProtocol


def test_a_fixed_count_makes_exactly_that_many_calls_and_hands_their_times_back():
    made = []
    times: list[float] = []
    protocol = MeasureProtocol(warmup_time=60.0, warmup_calls=1)  # the count overrides both
    warm = warm_up(lambda: made.append(1), protocol, calls=4, times=times)
    assert len(made) == warm.calls == len(times) == 4 and all(t >= 0 for t in times)


def test_the_protocol_warms_until_the_last_calls_agree():
    made = []
    protocol = MeasureProtocol(warmup_time=0.0, warmup_calls=3, max_warmup_time=5.0)
    warm = warm_up(lambda: made.append(1), protocol)
    assert warm.calls == len(made) >= 10  # ten calls to compare two medians
    assert warm.stable or warm.seconds >= protocol.max_warmup_time


def test_a_loadgen_session_warms_up_on_a_count_cycling_through_the_inputs():
    seen = []

    class Session:
        def infer(self, inputs):
            seen.append(inputs)

    protocol = MeasureProtocol(warmup_calls=5, warmup_time=60.0)
    assert serving._warmed_call_s(Session(), ["a", "b", "c"], protocol) >= 0
    assert seen == ["a", "b", "c", "a", "b"]
    serving._warmed_call_s(Session(), ["x"], protocol.model_copy(update={"warmup_calls": 1}))
    assert seen[5:] == ["x"] * 3  # at least 3: the median of the last 3 calls


def test_the_slow_fault_spins_any_call_its_share_longer(monkeypatch):
    """``slow:<f>`` wraps timed calls and a LoadGen worker's ``infer(inputs)`` alike: the
    arguments pass through, and the call takes (1 + f) times as long, spinning."""
    import time

    from perfsuite.execute import faults

    def infer(x):
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass
        return x * 2

    assert faults.slowed(infer, "p-server") is infer  # no fault: the call itself
    monkeypatch.setenv(faults.FAULT_ENV, "slow:1.0@*-server")
    assert faults.slowed(infer, "p-latency") is infer  # another point
    slow = faults.slowed(infer, "p-server")
    t0 = time.perf_counter()
    assert slow(21) == 42
    assert time.perf_counter() - t0 >= 0.004
