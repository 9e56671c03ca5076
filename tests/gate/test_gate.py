"""The regression gate, validated on synthetic sample streams with known noise (not by timing
this machine), plus the baseline store's refusals and the offline `perfsuite compare`."""

import json
import subprocess
import sys
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from perfsuite import records
from perfsuite.execute.measure import summarize
from perfsuite.gate.judge import (
    Comparison,
    Remeasure,
    Side,
    Verdict,
    compare_samples,
    confirm,
    control_for,
    judge,
)
from perfsuite.gate.statistics import FOLLOWED_SHIFT, GateConfig, compare_fingerprints, holm
from perfsuite.store import baseline as store
from perfsuite.sweep.compare import load_side

RNG = np.random.default_rng(20261202)


@pytest.fixture(autouse=True)
def _seeded_rng():
    """Each test draws the same samples whichever tests ran before it in its worker."""
    global RNG
    RNG = np.random.default_rng(20261202)


FAST = GateConfig(bootstrap_resamples=400)
POINTS = 40  # a default-profile-sized sweep
N = 30  # samples per point


def stream(cv: float, scale: float = 1.0, n: int = N) -> np.ndarray:
    return 0.01 * scale * RNG.lognormal(0.0, cv, n)


def sweep(cv, slow=None):
    """slow: {point index: slowdown fraction}"""
    slow = slow or {}
    base = {f"p{i:02d}": stream(cv) for i in range(POINTS)}
    cur = {f"p{i:02d}": stream(cv, 1 + slow.get(i, 0.0)) for i in range(POINTS)}
    return base, cur


def test_holm_matches_the_textbook():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


@pytest.mark.parametrize("cv", [0.005, 0.01, 0.03])
def test_aa_false_alarm_rate_per_sweep(cv, record_property):
    trials = 60
    alarms = sum(
        any(v.verdict == "regressed" for v in compare_samples(*sweep(cv), FAST))
        for _ in range(trials)
    )
    record_property(f"aa_false_alarm_sweeps_cv{cv}", f"{alarms}/{trials}")
    print(f"A/A, CV {cv:.1%}: {alarms}/{trials} sweeps with a false regression")
    assert alarms / trials <= 0.01 + 1e-9  # target: <= 1% of sweeps (here: none tolerated)


POWER = {}


@pytest.mark.parametrize("slow", [0.03, 0.05, 0.10])
@pytest.mark.parametrize("cv", [0.005, 0.01, 0.03])
def test_power_to_detect_slowdowns(slow, cv):
    hits, total = 0, 0
    for _ in range(4):
        base, cur = sweep(cv, {i: slow for i in range(10)})
        verdicts = {v.id: v for v in compare_samples(base, cur, FAST)}
        hits += sum(verdicts[f"p{i:02d}"].verdict == "regressed" for i in range(10))
        total += 10
        assert not any(verdicts[f"p{i:02d}"].verdict == "regressed" for i in range(10, POINTS))
    rate = hits / total
    POWER[(slow, cv)] = rate
    print(f"power: {slow:.0%} slowdown at CV {cv:.1%}: {rate:.0%} detected")
    if slow >= 0.05 and cv <= 0.01:
        assert rate >= 0.95
    if slow == 0.03 and cv <= 0.01:
        assert rate == 0.0  # below the 5% practical threshold: significant, not "regressed"


def test_machine_wide_burst_is_not_forty_regressions():
    base, cur = sweep(0.01, dict.fromkeys(range(POINTS), 0.20))
    verdicts = compare_samples(base, cur, FAST)
    counts = Counter(v.verdict for v in verdicts)
    assert counts["regressed"] == 0 and counts["unstable"] == POINTS
    assert all("machine-wide shift of +20" in v.reason for v in verdicts)


def test_regression_on_top_of_a_burst_is_still_found():
    slow = dict.fromkeys(range(POINTS), 0.20)
    slow[3] = 0.20 + 0.30  # one point 30% worse than the machine-wide shift
    verdicts = {v.id: v for v in compare_samples(*sweep(0.01, slow), FAST)}
    assert verdicts["p03"].verdict == "regressed"
    assert "beyond the machine-wide shift" in verdicts["p03"].reason
    assert sum(v.verdict == "regressed" for v in verdicts.values()) == 1


def test_a_shift_of_the_two_thread_points_alone_is_found_per_group():
    """The real A/A run behind the per-thread-count groups: every 2-thread point slower by
    about 9% (a neighbour takes more from points that need both cores), 1-thread points
    unmoved. The sweep-wide median stays under the burst threshold, the 2-thread group's
    does not: its points are judged after dividing by it."""
    ids = [f"m-fw-p{i}-t{t}-unbound-b1" for t in (1, 2) for i in range(9)]
    base = {pid: stream(0.01) for pid in ids}
    cur = {pid: stream(0.01, 1.09 if "-t2-" in pid else 1.0) for pid in ids}
    hot = "m-fw-p3-t2-unbound-b1"
    cur[hot] = stream(0.01, 1.09 * 1.25)  # one 2-thread point 25% beyond its group's shift
    verdicts = {v.id: v for v in compare_samples(base, cur, FAST)}
    for pid, v in verdicts.items():
        if pid == hot:
            assert v.verdict == "regressed" and v.shift == pytest.approx(0.09, abs=0.02)
            assert "beyond the machine-wide shift of +9" in v.reason and "2-thread" in v.reason
        elif "-t2-" in pid:
            assert v.verdict == "unstable" and "(2-thread points)" in v.reason
        else:
            assert v.verdict == "unchanged" and v.shift is None
    # the rule before (one sweep-wide group, a 10% burst) judged the 2-thread points raw
    flat = {pid.replace("-t1-", "-tx-").replace("-t2-", "-tx-"): s for pid, s in cur.items()}
    flat_base = {pid.replace("-t1-", "-tx-").replace("-t2-", "-tx-"): s for pid, s in base.items()}
    raw = compare_samples(flat_base, flat, GateConfig(bootstrap_resamples=400, burst_threshold=0.1))
    assert all(v.shift is None for v in raw)
    assert sum(v.verdict == "regressed" for v in raw) >= 9  # the whole group "regressed"


def test_small_groups_fall_back_to_the_sweep_shift():
    ids = [f"m-fw-p{i}-t1-unbound-b1" for i in range(6)] + ["m-fw-p9-t4-unbound-b1"]
    base = {pid: stream(0.01) for pid in ids}
    cur = {pid: stream(0.01, 1.2) for pid in ids}
    verdicts = compare_samples(base, cur, FAST)
    assert all(v.verdict == "unstable" and v.shift is not None for v in verdicts)


def test_noisy_points_are_unstable_not_judged():
    base = {"a": stream(0.4)}
    cur = {"a": stream(0.4, 1.3)}
    (v,) = compare_samples(base, cur, FAST)
    assert v.verdict == "unstable" and "spread too high" in v.reason


def test_one_scheduler_stall_does_not_make_a_point_unjudgeable():
    """A 9 ms stall among 2,000 calls of 0.1 ms (seen on this VM) blows the plain CV up to
    several hundred percent; the gate's robust spread ignores it, and so do its verdicts."""
    base, same, slow = stream(0.05, n=2000), stream(0.05, n=2000), stream(0.05, 1.3, n=2000)
    base[100] = same[50] = slow[7] = 0.9
    assert base.std() / base.mean() > 1.0
    assert compare_samples({"a": base}, {"a": same}, FAST)[0].verdict == "unchanged"
    assert compare_samples({"a": base}, {"a": slow}, FAST)[0].verdict == "regressed"


def test_improvement_new_missing_and_error():
    base = {"fast": stream(0.01), "gone": stream(0.01), "err": stream(0.01)}
    cur = {"fast": stream(0.01, 0.8), "added": stream(0.01)}
    verdicts = {v.id: v.verdict for v in compare_samples(base, cur, FAST, {"err": "boom"})}
    assert verdicts == {"fast": "improved", "gone": "missing", "added": "new", "err": "error"}


def test_per_benchmark_thresholds():
    cfg = GateConfig(bootstrap_resamples=400, thresholds={"p0*": 0.20})
    base, cur = sweep(0.005, {1: 0.08, 12: 0.08})
    verdicts = {v.id: v.verdict for v in compare_samples(base, cur, cfg)}
    assert verdicts["p01"] == "unchanged"  # 8% < its 20% threshold
    assert verdicts["p12"] == "regressed"  # 8% > the default 5%


def _fp(**over):
    fields = {
        "cpu.microarchitecture": "zen3",
        "cpu.physical_cores": 2,
        "freq.governor": "x",
        "software.onnxruntime": "1.32.0",
    }
    fields.update(over)
    classes = {
        "cpu.microarchitecture": "must_match",
        "cpu.physical_cores": "must_match",
        "freq.governor": "tolerance",
        "software.onnxruntime": "informational",
    }
    return records.Fingerprint(fields=fields, classes=classes, hardware_class="amd-zen3-2c-1n")


def test_incomparable_hardware_names_the_fields():
    base = Side(_fp(), {"a": stream(0.01)}, "b")
    cur = Side(_fp(**{"cpu.physical_cores": 4}), {"a": stream(0.01, 2.0)}, "c")
    c = judge(base, cur, FAST)
    assert not c.comparable and c.counts()["incomparable"] == 1
    assert c.differences["cpu.physical_cores"] == (2, 4)
    assert "cpu.physical_cores (2 -> 4)" in c.verdicts[0].reason


def test_tolerance_and_software_changes_are_noted_not_blocking():
    must, notes, software = compare_fingerprints(
        _fp(), _fp(**{"freq.governor": "performance", "software.onnxruntime": "1.33.0"})
    )
    assert must == {} and notes == ["freq.governor: x -> performance"]
    assert software == {"software.onnxruntime": ("1.32.0", "1.33.0")}


def P(name: str) -> str:
    """A valid point id for a short test name."""
    return f"{name}-fw-fp32-t1-unbound-b1"


def _record(pid, samples, ts=1.7e9):
    a = np.asarray(samples)
    model = pid.split("-")[0]
    return records.load_result(
        {
            "schema": "perfsuite.result/2",
            "id": pid,
            "status": "ok",
            "point": {
                "id": pid,
                "model": model,
                "framework": "fw",
                "precision": "fp32",
                "threads": 1,
                "numa_node": None,
                "batch": 1,
                "mode": "latency",
            },
            "samples_s": a.tolist(),
            "stats": summarize(a),
            "timestamp": ts,
            "software": {},
            "hardware_class": "amd-zen3-2c-1n",
        }
    )


def test_baseline_store_round_trip_and_refusals(tmp_path):
    fp = _fp()
    path, added, updated, _ = store.save(tmp_path, fp, "default", [_record(P("a"), stream(0.01))])
    assert path == tmp_path / "amd-zen3-2c-1n" / "default.json" and added == [P("a")]
    with pytest.raises(store.BaselineError, match="--perf-update-baseline"):
        store.save(tmp_path, fp, "default", [_record(P("a"), stream(0.01))])
    _, added, updated, _ = store.save(
        tmp_path,
        fp,
        "default",
        [_record(P("a"), stream(0.01)), _record(P("b"), stream(0.01))],
        update=True,
    )
    assert added == [P("b")] and updated == [P("a")]
    data = store.load(path)
    assert [h.action for h in data.history] == ["created", "updated"]
    other = fp.model_copy(update={"hardware_class": "amd-zen4-96c-1n-smt2"})
    (tmp_path / "amd-zen4-96c-1n-smt2").mkdir()
    (tmp_path / "amd-zen4-96c-1n-smt2" / "default.json").write_text(path.read_text())
    with pytest.raises(store.BaselineError, match="belongs to hardware class amd-zen3"):
        store.save(tmp_path, other, "default", [_record(P("c"), stream(0.01))], update=True)


def test_instruction_counts_in_the_baseline(tmp_path):
    """Counts are kept beside the entries; equal counts save quietly, differing ones only on
    update (a code change is not folded into a baseline by accident); old files load."""
    fp, rec = _fp(), [_record(P("a"), stream(0.01))]
    counts = records.InstructionCounts(isa="avx2", counts={"gemm_f32-n128": 691851}, recorded="x")
    path, added, *_ = store.save(tmp_path, fp, "default", rec, instructions=counts)
    assert added == [P("a"), "instructions"]
    assert store.load(path).instructions.counts == {"gemm_f32-n128": 691851}
    _, added, *_ = store.save(tmp_path, fp, "default", rec, add_run=True, instructions=counts)
    assert added == []
    grown = counts.model_copy(update={"counts": {"gemm_f32-n128": 700000}})
    with pytest.raises(store.BaselineError, match=r"instruction counts differ .*gemm_f32-n128"):
        store.save(tmp_path, fp, "default", rec, add_run=True, instructions=grown)
    assert store.load(path).instructions.counts["gemm_f32-n128"] == 691851  # untouched
    store.save(tmp_path, fp, "default", rec, update=True, instructions=grown)
    assert store.load(path).instructions.counts["gemm_f32-n128"] == 700000
    old = tmp_path / "old"
    p2, *_ = store.save(old, fp, "default", rec)
    assert store.load(p2).instructions is None
    bad = json.loads(path.read_text())
    bad["instructions"]["counts"]["gemm_f32-n128"] = 0
    path.write_text(json.dumps(bad))
    with pytest.raises(store.BaselineError, match="must be positive"):
        store.load(path)


def _counts(counts):
    return records.InstructionCounts(isa="avx2", counts=counts, recorded="x")


def test_instruction_counts_gate_without_statistics():
    from perfsuite.sweep.finish import Outcome, _gate_instructions

    counts = records.InstructionCounts(isa="avx2", counts={"k1": 1000, "k2": 1000}, recorded="x")
    stored = SimpleNamespace(instructions=counts)
    out = Outcome(instructions=_counts({"k1": 1011, "k2": 991}))
    _gate_instructions(stored, out, "regression")
    text = "\n".join(out.lines)
    assert out.fail and "regressed" in text and "+1.100%" in text and "grew past 1%: k1" in text
    out = Outcome(instructions=_counts({"k1": 1011, "k2": 991}))
    _gate_instructions(stored, out, "never")
    assert not out.fail  # reported, not failing
    out = Outcome(instructions=_counts({"k1": 1009, "k2": 900}))
    _gate_instructions(stored, out, "regression")
    assert not out.fail and "improved" in "\n".join(out.lines)  # +0.9% is under 1%
    out = Outcome(instructions=_counts({"k1": 5000}))
    _gate_instructions(SimpleNamespace(instructions=None), out, "regression")
    assert not out.fail and "the baseline has none" in out.lines[0]
    out = Outcome(instructions=_counts({"k1": 5000}).model_copy(update={"isa": "generic"}))
    _gate_instructions(stored, out, "regression")
    assert not out.fail and "not compared" in out.lines[0]


def test_long_sample_lists_are_thinned(tmp_path):
    path, *_ = store.save(tmp_path, _fp(), "p", [_record(P("a"), stream(0.01, n=5000))])
    assert len(store.load(path).entries[P("a")].samples_s) == store.MAX_SAMPLES


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "unreadable or corrupt"),
        ('{"schema": "perfsuite.baseline/0"}', "has schema 'perfsuite.baseline/0'"),
        (
            '{"schema": "perfsuite.baseline/1", "hardware_class": "x"}',
            "profile: Field required",
        ),
        ('{"schema": "perfsuite.baseline/2", "hardware_class": "x"}', "not a valid"),
        ("[1, 2]", "not a perfsuite baseline"),
    ],
)
def test_corrupt_or_foreign_baselines_are_clear_errors(tmp_path, content, message):
    bad = tmp_path / "b.json"
    bad.write_text(content)
    with pytest.raises(store.BaselineError, match=message):
        store.load(bad)


def test_offline_compare_cli(tmp_path):
    fp = _fp()
    b_root, c_root = tmp_path / "base", tmp_path / "cur"
    recs_b = [_record(P(f"p{i}"), stream(0.01)) for i in range(5)]
    recs_c = [_record(P(f"p{i}"), stream(0.01, 1.25 if i == 0 else 1.0)) for i in range(5)]
    b, *_ = store.save(b_root, fp, "default", recs_b)
    c, *_ = store.save(c_root, fp, "default", recs_c)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfsuite.cli",
            "compare",
            str(b),
            str(c),
            "--report",
            str(tmp_path / "rep"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "GATE FAILED" in r.stdout and f"{P('p0')} regressed" in r.stdout
    assert (tmp_path / "rep" / "gate.html").read_text().startswith("<!doctype html>")
    junit = (tmp_path / "rep" / "gate-junit.xml").read_text()
    assert junit.count("<testcase") == 5 and junit.count("<failure") == 1
    r = subprocess.run(
        [sys.executable, "-m", "perfsuite.cli", "compare", str(b), str(c), "--fail-on", "never"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0
    r = subprocess.run(
        [sys.executable, "-m", "perfsuite.cli", "compare", str(b), str(tmp_path / "nope")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "neither a baseline file nor a perfsuite run" in r.stderr
    assert load_side(b).samples.keys() == load_side(c).samples.keys()


@pytest.mark.parametrize(
    "args, toml, message",
    [
        (["--alpha", "2"], None, "'2' must be between 0 and 1"),
        (["--alpha", "nan"], None, "'nan' is not a finite number"),
        (["--threshold", "nan"], None, "'nan' is not a finite number"),
        (["--threshold=-inf"], None, "'-inf' is not a finite number"),
        ([], "alpha = 2", "gate alpha = 2: must be a number between 0 and 1"),
        ([], "threshold = nan", "gate threshold = nan: must be a finite number > 0"),
        ([], 'thresholds = {"p*" = inf}', "thresholds['p*'] = inf: must be a finite number"),
        ([], "thresold = 0.1", "unknown [tool.perfsuite.gate] key(s) ['thresold']"),
        ([], "alpha = ", "invalid TOML"),
    ],
)
def test_gate_parameters_cannot_switch_the_gate_off(tmp_path, args, toml, message):
    """NaN compares false with everything: a NaN alpha or threshold would pass every point.
    Every way in (options, pyproject.toml) is refused with one line and exit code 2."""
    fp = _fp()
    b, *_ = store.save(tmp_path / "b", fp, "default", [_record(P("p0"), stream(0.01))])
    cmd = [sys.executable, "-m", "perfsuite.cli", "compare", str(b), str(b), *args]
    if toml is not None:
        (tmp_path / "pyproject.toml").write_text(f"[tool.perfsuite.gate]\n{toml}\n")
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(ValueError, match="must be"):
        GateConfig(alpha=float("nan"))


def test_between_run_noise_from_baseline_runs_prevents_false_alarms():
    """A point whose whole runs wander by ~4% (seen on this shared VM) must not be flagged
    for a 7% shift once the baseline holds several runs; a 25% shift still is."""
    base = {"a": stream(0.01)}
    runs = {"a": [0.0100, 0.0104, 0.0096, 0.0108, 0.0099]}
    cur = {"a": stream(0.01, 1.07)}
    (v,) = compare_samples(base, cur, FAST, baseline_runs=runs)
    assert v.verdict == "unchanged" and "between-run CV" in v.reason
    (v,) = compare_samples(base, {"a": stream(0.01, 1.25)}, FAST, baseline_runs=runs)
    assert v.verdict == "regressed"
    assert "one run" not in v.reason
    (v,) = compare_samples(base, cur, FAST)  # one run only: the 7% shift is flagged...
    assert v.verdict == "regressed" and "--perf-add-baseline-run" in v.reason  # ...with a hint


def test_add_run_keeps_run_history(tmp_path):
    fp = _fp()
    store.save(tmp_path, fp, "p", [_record(P("a"), stream(0.01))])
    path, _, again, _ = store.save(
        tmp_path, fp, "p", [_record(P("a"), stream(0.01, 1.02))], add_run=True
    )
    data = store.load(path)
    assert again == [P("a")] and len(data.entries[P("a")].runs) == 2
    assert data.history[-1].action == "run-added"
    kept = data.entries[P("a")].samples_s
    # a transient slow run joins the history, but its samples do not replace typical ones
    store.save(tmp_path, fp, "p", [_record(P("a"), stream(0.01, 1.3))], add_run=True)
    entry = store.load(path).entries[P("a")]
    assert len(entry.runs) == 3 and entry.samples_s == kept
    # a run at the centre of the history does (its median is exactly the runs' median)
    typical = stream(0.01)
    typical *= float(np.median(entry.runs)) / float(np.median(typical))
    store.save(tmp_path, fp, "p", [_record(P("a"), typical)], add_run=True)
    assert store.load(path).entries[P("a")].samples_s == pytest.approx(typical.tolist())
    store.save(tmp_path, fp, "p", [_record(P("a"), stream(0.01))], update=True)
    assert len(store.load(path).entries[P("a")].runs) == 1  # accepted change: restart


def _point(fw, prec, t):
    return records.Point(model="resnet50", framework=fw, precision=prec, threads=t,
                         batch=1, mode="latency")  # fmt: skip


def test_the_control_of_a_re_measure_is_the_most_similar_unchanged_point():
    """An OpenVINO 1-thread regression is re-measured beside an unchanged OpenVINO 1-thread
    point, not beside the least-moved point of another framework or thread count."""
    pts = [_point("openvino", "fp32", 1), _point("onnxruntime", "fp32", 1),
           _point("openvino", "int8_static", 1), _point("openvino", "int8_static", 2)]  # fmt: skip
    ids = [p.id for p in pts]
    verdicts = (Verdict(id=ids[0], verdict="regressed", change=0.2),
                Verdict(id=ids[1], verdict="unchanged", change=0.0),
                Verdict(id=ids[2], verdict="unchanged", change=0.04),
                Verdict(id=ids[3], verdict="unchanged", change=0.01))  # fmt: skip
    base = Side(_fp(), {i: stream(0.01) for i in ids}, "b")
    comparison = Comparison(verdicts, True, {})
    control = control_for(comparison, ids[0], {p.id: p for p in pts})
    assert control == ids[2]
    again = Remeasure(stream(0.01, 1.2), control=control, control_samples=stream(0.01))
    (v, *_) = confirm(comparison, base, {ids[0]: again}, FAST).verdicts
    assert v.confirmed is True


def test_a_re_measure_is_judged_at_the_points_own_threshold():
    """A point whose baseline runs spread 2.3% has a 6.9% threshold; a +5.3% re-measure of it
    does not confirm a regression (it did, at the default 5%, in a real A/A run)."""
    p = _point("onnxruntime", "int8_static_rr", 2)
    runs = [0.01 * f for f in (1.0, 1.03, 0.975, 1.025, 0.97, 1.0)]  # CV ~2.4%
    base = Side(_fp(), {p.id: stream(0.005)}, "b", runs={p.id: runs})
    for scale, confirmed in ((1.053, False), (1.15, True)):
        comparison = Comparison((Verdict(id=p.id, verdict="regressed", change=0.093),), True, {})
        assert control_for(comparison, p.id, {p.id: p}) is None
        again = {p.id: Remeasure(stream(0.005, scale))}
        (v,) = confirm(comparison, base, again, FAST).verdicts
        assert v.confirmed is confirmed, (scale, v.reason)


def test_under_a_machine_wide_shift_a_point_that_followed_it_is_the_control():
    """In a shifted run no point is 'unchanged'; the re-measure's control is then a point that
    only followed the shift, and when the control moves too on re-measure the verdict is
    'unstable', not a confirmed regression."""
    pts = [_point("openvino", prec, 1) for prec in ("int8_static_rr", "int8_static", "fp32")]
    ids = [p.id for p in pts]
    base = Side(_fp(), {i: stream(0.01) for i in ids}, "b")
    for control_scale, verdict in ((1.0, "regressed"), (1.2, "unstable")):
        verdicts = (
            Verdict(id=ids[0], verdict="regressed", change=0.1, shift=-0.1),
            Verdict(id=ids[1], verdict="unstable", change=-0.09, shift=-0.1,
                    reason=f"{FOLLOWED_SHIFT} of -10.0% (1-thread points)"),
            Verdict(id=ids[2], verdict="unstable", change=-0.1, shift=-0.1,
                    reason="spread too high to judge"),
        )  # fmt: skip
        comparison = Comparison(verdicts, True, {}, machine_shift=-0.1)
        control = control_for(comparison, ids[0], {p.id: p for p in pts})
        assert control == ids[1]  # not the spread-too-high point
        # the host is 10% faster
        again = Remeasure(stream(0.01, 1.2 * 0.9), control=control,
                          control_samples=stream(0.01, control_scale * 0.9))  # fmt: skip
        (v, *_) = confirm(comparison, base, {ids[0]: again}, FAST).verdicts
        assert v.verdict == verdict, v.reason
        assert v.confirmed is (True if verdict == "regressed" else None)


def test_a_shift_explains_changes_away_but_never_makes_one():
    """The real A/A of 2026-12-05: the host ran every group ~10% faster than on the baseline's
    days, one point only ~1% faster. Divided by the shift it read +10% and was confirmed as a
    regression in 10 of 19 runs; judged where the shift explains nothing, it is unstable
    (it did not follow the shift), and a point slower than its baseline even unshifted is
    still a regression."""
    from perfsuite.gate.statistics import FOLLOWED_SHIFT, LAGGED_SHIFT, excusing_factor

    ids = [f"m-fw-p{i}-t1-unbound-b1" for i in range(9)]
    base = {pid: stream(0.01) for pid in ids}
    cur = {pid: stream(0.01, 0.90) for pid in ids}
    lagged, slower = ids[0], ids[1]
    cur[lagged] = stream(0.01, 0.99)
    cur[slower] = stream(0.01, 1.12)
    verdicts = {v.id: v for v in compare_samples(base, cur, FAST)}
    assert verdicts[lagged].verdict == "unstable"
    assert verdicts[lagged].reason.startswith(LAGGED_SHIFT), verdicts[lagged].reason
    assert "% beyond it" in verdicts[lagged].reason and "% unshifted" in verdicts[lagged].reason
    assert verdicts[slower].verdict == "regressed"
    assert "slower than the baseline even unshifted" in verdicts[slower].reason
    assert all(verdicts[p].reason.startswith(FOLLOWED_SHIFT) for p in ids[2:])
    # the factor: the shift when it brings the ratio nearer 1 without crossing it, in either
    # direction; the ratio itself (judged unmoved) when the point lies between 1 and the shift
    assert excusing_factor(1.25, 1.10) == 1.10 and excusing_factor(0.80, 0.90) == 0.90
    assert excusing_factor(1.02, 1.10) == 1.02 and excusing_factor(0.94, 0.90) == 0.94
    assert excusing_factor(1.12, 0.90) == 1.0 and excusing_factor(0.85, 1.10) == 1.0
    assert excusing_factor(1.30, None) == 1.0


def test_a_point_between_its_baseline_and_the_shift_is_not_judged_beyond_it():
    """6% faster under a 10% speed-up: divided by the whole shift it would read 4% slower."""
    ids = [f"m-fw-p{i}-t1-unbound-b1" for i in range(9)]
    base = {pid: stream(0.005) for pid in ids}
    cur = {pid: stream(0.005, 0.90) for pid in ids}
    cur[ids[0]] = stream(0.005, 0.94)
    strict = GateConfig(bootstrap_resamples=400, threshold=0.03)
    v = {v.id: v for v in compare_samples(base, cur, strict)}[ids[0]]
    assert v.verdict == "unstable" and v.reason.startswith("moved with"), v.reason


def test_one_slow_hiccup_run_does_not_blind_a_point():
    """The committed Zen 4 baseline's OpenVINO fp32 t2: five runs at 40-43 ms and one at
    73.9. With it, the threshold was 87% and a 30% slowdown passed; set aside for the
    regression side, that slowdown is found, and a 3% speed-up stays unchanged."""
    from perfsuite.gate.statistics import regression_runs

    runs = [0.04028, 0.07393, 0.04328, 0.04015, 0.04066, 0.04082]
    assert sorted(regression_runs(runs)) == sorted(r for r in runs if r < 0.07)
    assert list(regression_runs(runs[:4])) == runs[:4]  # too few runs to call one a hiccup
    tight = [0.0214, 0.0215, 0.0216, 0.0215, 0.0219]
    assert list(regression_runs(tight)) == tight  # the slowest is not far from the others
    pid = "m-fw-p0-t2-unbound-b1"
    base = {pid: stream(0.01, 4.1)}
    v = compare_samples(base, {pid: stream(0.01, 4.1 * 1.30)}, FAST, None, {pid: runs})[0]
    assert v.verdict == "regressed" and "slow hiccup run of 73.9 ms" in v.reason, v.reason
    v = compare_samples(base, {pid: stream(0.01, 4.1 * 0.97)}, FAST, None, {pid: runs})[0]
    assert v.verdict == "unchanged"
