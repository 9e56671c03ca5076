"""Records: validated when written and read, older formats upgraded, JSON Schema generated from
the types; the baseline store's read-modify-write under a lock."""

import json
import math
import multiprocessing
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfsuite import records
from perfsuite.execute.measure import summarize
from perfsuite.store import baseline as store

DATA = Path(__file__).parent / "data" / "records"


def result(pid="m-fw-fp32-t1-unbound-b1", samples=(0.01, 0.011, 0.012), **over):
    model, fw, prec = pid.split("-")[:3]
    d = {
        "schema": records.RESULT,
        "id": pid,
        "point": {
            "id": pid,
            "model": model,
            "framework": fw,
            "precision": prec,
            "threads": 1,
            "numa_node": None,
            "batch": 1,
            "mode": "latency",
        },  # fmt: skip
        "hardware_class": "amd-zen3-2c-1n",
        "timestamp": 1.7e9,
        "status": "ok",
        "samples_s": list(samples),
        "stats": summarize(samples),
    }
    d.update(over)
    return d


def fingerprint():
    return {
        "hardware_class": "amd-zen3-2c-1n",
        "fields": {"cpu.microarchitecture": "zen3"},
        "classes": {"cpu.microarchitecture": "must_match"},
    }


def test_committed_version_1_files_load_through_the_upgrade():
    raw = json.loads((DATA / "result-1.json").read_text())
    assert raw["schema"] == "perfsuite.result/1" and "extra" in raw["point"]
    r = records.load_result(raw, "result-1.json")
    assert r.schema_ == "perfsuite.result/2" and r.stats.n == len(r.samples_s) == 40
    assert r.point.id == r.id == "small_cnn-onnxruntime-int8_static-t1-node0-b1"
    assert "extra" not in records.dump(r)["point"]
    raw = json.loads((DATA / "baseline-1.json").read_text())
    b = records.load_baseline(raw, "baseline-1.json")
    assert b.schema_ == "perfsuite.baseline/2" and len(b.entries) == 2
    # the committed baselines themselves (written by /1 code) load through the store
    for path in Path("baselines").glob("*/*.json"):
        assert store.load(path).schema_ == "perfsuite.baseline/2"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -0.01, 0.0])
def test_samples_must_be_finite_and_positive(bad):
    d = result()
    d["samples_s"][1] = bad
    with pytest.raises(records.RecordError, match=r"samples_s\.1: Input should be"):
        records.load_result(d, "r.json")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"id": "other-fw-fp32-t1-unbound-b1"}, "is not its point's id"),
        ({"status": "done"}, "status: Input should be 'ok' or 'error'"),
        ({"samples_s": []}, "status ok needs samples_s and stats"),
        ({"schema": "perfsuite.result/9"}, "has schema 'perfsuite.result/9'"),
    ],
)
def test_inconsistent_results_are_named(change, message):
    with pytest.raises(records.RecordError, match=message):
        records.load_result(result(**change), "r.json")
    point = dict(result()["point"], threads=2)  # id says t1
    with pytest.raises(records.RecordError, match="does not match the point's fields"):
        records.load_result(result(point=point), "r.json")


def test_shipped_json_schemas_are_generated_from_the_types():
    folder = Path(records.__file__).parent / "schemas"
    for kind in records.SCHEMAS:
        shipped = json.loads((folder / f"{kind}.schema.json").read_text())
        assert shipped == json.loads(json.dumps(records.json_schema(kind))), (
            f"{kind}.schema.json is stale: run python -m perfsuite.records"
        )


def _run_dir(root: Path, recs: list[dict]) -> Path:
    run = root / "run"
    (run / "points").mkdir(parents=True)
    summary = {"schema": records.RUN, "profile": {}, "fingerprint": fingerprint(), "points": []}
    (run / "summary.json").write_text(json.dumps(summary))
    for r in recs:
        (run / "points" / f"{r['id']}.json").write_text(json.dumps(r))
    return run


def test_a_nan_sample_cannot_hide_a_regression(tmp_path):
    """One NaN among 1.5x slower samples made compare say 'unchanged +nan%' and exit 0."""
    rng = np.random.default_rng(1)
    base = rng.lognormal(0, 0.01, 50) * 0.01
    ok = records.load_result(result(samples=base))
    b, *_ = store.save(tmp_path / "b", records.Fingerprint.model_validate(fingerprint()), "p", [ok])
    slow = list(base * 1.5)
    slow[7] = math.nan
    bad = result(samples=slow)
    bad["stats"] = summarize(base * 1.5)
    run = _run_dir(tmp_path, [bad])
    cmd = [sys.executable, "-m", "perfsuite.cli", "compare", str(b), str(run)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "samples_s.7: Input should be a finite number" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    # the same NaN inside a baseline file is refused the same way
    data = json.loads(b.read_text())
    data["entries"]["m-fw-fp32-t1-unbound-b1"]["samples_s"][3] = math.nan
    b.write_text(json.dumps(data))
    r = subprocess.run([*cmd[:-2], str(b), str(b)], capture_output=True, text=True)
    assert r.returncode == 2 and "samples_s.3: Input should be a finite number" in r.stderr


def _save_many(root: str, worker: int, count: int, start) -> None:
    start.wait()
    for i in range(count):
        pid = f"w{worker}n{i}-fw-fp32-t1-unbound-b1"
        store.save(
            Path(root),
            records.Fingerprint.model_validate(fingerprint()),
            "p",
            [records.load_result(result(pid))],
        )


def test_two_runs_saving_at_once_lose_nothing(tmp_path):
    """Without the lock, two processes adding entries to one baseline overwrote each other's
    (3 of 3 tries in the hostile-input review)."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=_save_many, args=(str(tmp_path), w, 15, start)) for w in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    entries = store.load(tmp_path / "amd-zen3-2c-1n" / "p.json").entries
    assert len(entries) == 30


def test_protocol_refuses_nan_and_zero():
    bad_loadgen = {"latency_bound_ms": 0, "min_duration_s": 1, "min_query_count": 0,
                   "target_qps": 0, "search_steps": 1, "search_precision": 0.1}  # fmt: skip
    for bad, field in (({"min_time": math.nan}, "min_time"), ({"max_time": math.inf}, "max_time"),
                       ({"sessions": 0}, "sessions"), ({"loadgen": bad_loadgen}, "latency_bound"),
                       ({"log_dirr": "x"}, "log_dirr")):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            records.MeasureProtocol(**bad)


def test_every_written_report_kind_has_a_schema_and_validates(tmp_path):
    """gate.json, summary.json and qualification.json are validated when written; here the
    models refuse what a bug could produce."""
    good = {"schema": records.GATE, "comparable": True, "differences": {}, "machine_shift": None,
            "fail_on": "regression", "failing": [], "verdicts": [{"id": "a", "verdict": "unchanged",
            "change": 0.01, "p_value": 0.5}]}  # fmt: skip
    records.load_gate_report(good)
    bad = dict(good, verdicts=[{"id": "a", "verdict": "unchanged", "change": math.nan}])
    with pytest.raises(records.RecordError, match="verdicts.0.change"):
        records.load_gate_report(bad)
    with pytest.raises(records.RecordError, match="verdict"):
        records.load_gate_report(dict(good, verdicts=[{"id": "a", "verdict": "slower"}]))
    measured = {"bandwidth_gbs": {"0": 30.0}, "fma_per_core": 120.0,
                "fma_all_cores_per_core": 118.0, "fma_repeats": [120.0]}  # fmt: skip
    report = {"schema": records.QUALIFICATION, "verdict": "PASS", "reference": None,
              "fingerprint": {"fields": {}, "classes": {}}, "measurements": measured,
              "seconds": 1.0,
              "checks": [{"group": "g", "name": "n", "status": "PASS"}]}  # fmt: skip
    records.load_qualification(report)
    with pytest.raises(records.RecordError, match="checks.0.status"):
        records.load_qualification(
            dict(report, checks=[{"group": "g", "name": "n", "status": "OK"}])
        )
    with pytest.raises(records.RecordError, match="measurements.fma_repeats"):
        records.load_qualification(dict(report, measurements={**measured, "fma_repeats": []}))
