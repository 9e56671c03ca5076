"""The qualification's counters check: with a PMU, IPC and cache misses of a GEMM and a triad
(perf's CSV from a bare-metal host as the fixture); without one, as on this VM, one WARN line
with perf's reason, the paranoid level and the hypervisor, and valgrind's instruction counts
standing in."""

from paths import DATA

from perfsuite import records
from perfsuite.execute.counters import parse_perf_csv
from perfsuite.qualify import counters
from perfsuite.qualify.checks import verdict


def _host_with_a_pmu() -> records.CounterProbes:
    probes = (("gemm_f32 n=1024", "gemm"), ("triad 3x64 MiB", "triad"))
    perf = {
        n: parse_perf_csv((DATA / "perf" / f"{f}-zen4-host.csv").read_text()) for n, f in probes
    }
    return records.CounterProbes(perf=perf)


def test_with_a_pmu_each_probe_has_its_ipc_and_cache_misses():
    checks = counters.check_counters(_host_with_a_pmu())
    gemm, triad = checks
    assert gemm.status == "PASS" and gemm.measured["ipc"] == 9683272158 / 4210553112
    assert "IPC 2.30, 0.40 cache misses per 1k instructions" in gemm.detail
    assert triad.status == "PASS" and "IPC 0.50, 99.54 cache misses" in triad.detail
    assert "not counted: LLC-load-misses" in triad.detail  # the event the PMU lacked


def test_a_gemm_under_one_instruction_per_cycle_is_a_warning():
    probes = _host_with_a_pmu()
    slow = probes.perf["gemm_f32 n=1024"].model_copy(update={"derived": {"ipc": 0.7}})
    checks = counters.check_counters(probes.model_copy(update={"perf": {"gemm_f32 n=1024": slow}}))
    assert [c.status for c in checks] == ["WARN"] and "IPC 0.70" in checks[0].detail


def test_without_a_pmu_one_warn_line_says_why_and_counts_instructions_instead(tmp_path):
    paranoid = tmp_path / "perf_event_paranoid"
    paranoid.write_text("2\n")
    why = counters.why_unsupported("not supported", str(paranoid))
    assert why.startswith("perf says 'not supported'; perf_event_paranoid=2; ")
    probes = records.CounterProbes(
        unsupported=why, instructions={"gemm_f32-n128": 692779, "triad-n1048576": 1053587}
    )
    (check,) = counters.check_counters(probes)
    assert check.status == "WARN" and verdict([check]) == "WARN"
    assert "hardware counters unsupported: perf says 'not supported'" in check.detail
    assert "gemm_f32-n128 692,779, triad-n1048576 1,053,587" in check.detail
    skipped = probes.model_copy(update={"instructions": {}, "instructions_skipped": "--quick"})
    assert "no instruction counts: --quick" in counters.check_counters(skipped)[0].detail
    assert counters.check_counters(None) == []  # reports from before the check


def test_this_host_is_measured_as_it_is():
    """On a VM (this one) the quick probe says why perf counts nothing; with a PMU it counts."""
    probes = counters.measure_counters(quick=True)
    if probes.unsupported is not None:
        assert probes.perf == {} and probes.instructions_skipped
    else:
        assert all(c.counts.get("instructions", 0) > 0 for c in probes.perf.values())
