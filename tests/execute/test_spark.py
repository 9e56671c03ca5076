"""Spark points (local[2], one JVM for the module), the NUMA wrapper, and fleet qualification
on a real standalone cluster on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from paths import TESTS

from perfsuite import records
from perfsuite.execute.isolation import WorkerError
from perfsuite.execute.spark import java_problem
from perfsuite.execute.spark_numa import ENV_NODE, executor_plan, wrapper_script
from perfsuite.host.topology import read_topology
from perfsuite.sweep.plan import PlanError, expand, load_profiles, parse_spark, select_profile

pytest.importorskip("onnxruntime")
pytest_plugins = ["pytester"]
NO_SPARK = java_problem()
needs_spark = pytest.mark.skipif(NO_SPARK is not None, reason=str(NO_SPARK))
PROTOCOL = records.MeasureProtocol(min_time=0.01, min_samples=1, warmup_time=0, warmup_calls=1)
ITEMS = 24


def _point(pattern="partition", slots=2, cpus=1, batch=4, node=None, fw="onnxruntime",
           precision="int8_static", model="small_cnn") -> dict:  # fmt: skip
    spark = {"pattern": pattern, "slots": slots, "cpus_per_task": cpus}
    p = {
        "model": model,
        "framework": fw,
        "precision": precision,
        "threads": slots * cpus,
        "numa_node": node,
        "batch": batch,
        "mode": "throughput",
        "threads_spec": pattern,
        "skip": None,
        "spark": spark,
    }
    p["id"] = records.point_id(p)
    return p


# -- the plan (no JVM) -------------------------------------------------------------------------


def test_spark_specs_parse_and_bad_ones_name_the_problem():
    assert parse_spark("none", 4) is None
    assert parse_spark("partition", 4) == parse_spark("partition:4x1", 4)
    assert parse_spark("rdd_map:2x3", 4).cpus_per_task == 3
    for bad, words in [("mapper", "unknown pattern"), ("partition:2", "<slots>x"),
                       ("partition:0x1", "<slots>x"), ("rdd_map:ax1", "<slots>x")]:  # fmt: skip
        with pytest.raises(PlanError, match=words):
            parse_spark(bad, 2)


def test_spark_profile_plans_spark_points_beside_single_process_ones(host_tree):
    topo = read_topology(host_tree("epyc9654-1s-nps1"))
    profile = select_profile(load_profiles(), "spark", {"frameworks": ["onnxruntime"]})
    points = expand(profile, topo, unavailable={"spark": None})
    ids = [p.id for p in points]
    cores = topo.physical_cores
    assert f"resnet50-onnxruntime-int8_static-spark_partition-{cores}x1-b32" in ids
    assert f"resnet50-onnxruntime-int8_static-t{cores}-unbound-b32-throughput" in ids
    # the article's map is per record: its batch is always 1
    assert [p.batch for p in points if p.spark and p.spark.pattern == "rdd_map"] == [1]
    for p in points:  # every id validates as a record's point
        records.Point(**records.dump(p))
    # the default profile has no Spark point, and its records keep their shape
    default = expand(select_profile(load_profiles(), "default", {}), topo)
    assert not any(p.spark for p in default) and "spark" not in records.dump(default[0])


def test_oversubscribed_and_unavailable_spark_points_are_skips_with_reasons(host_tree):
    topo = read_topology(host_tree("kvm-zen3-2vcpu"))
    profile = select_profile(
        load_profiles(), "spark", {"frameworks": ["onnxruntime"], "spark": ["partition:2x2"]}
    )
    (p,) = [p for p in expand(profile, topo, unavailable={"spark": None}) if p.batch == 1]
    assert p.skip == "spark 2x2 needs 4 CPUs; this host has 2 cores"
    (q,) = [p for p in expand(profile, topo, unavailable={"spark": "no java here"}) if p.batch == 1]
    assert q.skip == "no java here"


def test_point_ids_must_match_their_spark_fields():
    p = _point()
    assert p["id"] == "small_cnn-onnxruntime-int8_static-spark_partition-2x1-b4"
    records.Point(**p)
    with pytest.raises(ValueError, match="does not match"):
        records.Point(**{**p, "spark": {**p["spark"], "slots": 3}})


def test_numa_wrapper_binds_to_its_node_unless_the_executor_says_otherwise(tmp_path):
    script = wrapper_script(3, "/usr/bin/python3", tmp_path, numactl="/usr/bin/numactl")
    text = script.read_text()
    assert os.access(script, os.X_OK)
    assert f'node="${{{ENV_NODE}:-3}}"' in text
    bind = '--cpunodebind="$node" --membind="$node"'
    assert f'exec /usr/bin/numactl {bind} /usr/bin/python3 "$@"' in text


def test_executor_plan_is_one_executor_per_node(host_tree):
    plan = executor_plan(read_topology(host_tree("epyc7763-2s-nps4")))
    assert [e.node for e in plan] == list(range(8))
    assert {e.cores for e in plan} == {16}  # 128 cores / 8 nodes, SMT siblings folded
    assert plan[5].env == {ENV_NODE: "5"}
    cmd = plan[5].worker_command("spark://h:7077")
    assert cmd.startswith(f"{ENV_NODE}=5 spark-class org.apache.spark.deploy.worker.Worker")
    assert "--cores 16" in cmd and cmd.endswith("spark://h:7077")
    assert len(executor_plan(read_topology(host_tree("epyc9654-1s-nps1")))) == 1


# -- real Spark, local[2] ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark_exec():
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    from perfsuite.execute.spark import SparkExecutor

    ex = SparkExecutor(timeout=300, master="local[2]", items=ITEMS)
    yield ex
    ex.close()


def _checked(measured: records.Measurement, point: dict) -> dict:
    """The executor's output as a full record, validated like the sweep validates it."""
    rec = {
        "schema": records.RESULT,
        "id": point["id"],
        "point": point,
        "hardware_class": "test",
        "timestamp": 1.0,
        "status": "ok",
        **records.dump(measured),
    }
    records.load_result(json.loads(json.dumps(rec)))
    return rec


def _run(spark_exec, point: dict) -> records.Measurement:
    return spark_exec.run(records.Point(**point), PROTOCOL)


@pytest.mark.spark
@needs_spark
@pytest.mark.parametrize("pattern,batch", [("partition", 4), ("rdd_map", 1)])
def test_spark_point_measures_the_dataset_and_matches_single_process(spark_exec, pattern, batch):
    point = _point(pattern, batch=batch)
    rec = _checked(_run(spark_exec, point), point)
    sp = rec["spark"]
    assert sp["master"] == "local[2]" and sp["items"] == ITEMS and len(sp["pass_s"]) >= 3
    end_to_end = ITEMS * len(sp["pass_s"]) / sum(sp["pass_s"])
    assert rec["stats"]["throughput_ips"] == pytest.approx(end_to_end)
    # one latency per inference call: a batch per call, or a record per call for the map
    assert rec["stats"]["n"] == len(sp["pass_s"]) * -(-ITEMS // batch)
    assert sp["agreement"]["passed"] and sp["agreement"]["top1_agreement"] == 1.0
    # the framework ran with the task's CPUs and without spinning, and says so
    assert rec["settings"]["intra_op_threads"] == 1 and rec["settings"]["spinning"] is False
    assert rec["settings"]["spark.sql.execution.arrow.maxRecordsPerBatch"] == batch
    assert sp["session_build_s"] and all(s > 0 for s in sp["session_build_s"])
    assert rec["interference"] is not None and "contaminated" in rec["interference"]
    if pattern == "partition":
        assert len(sp["partition_s"]) == 2  # one task per slot
    # the JVM listens on loopback only
    conf = dict(spark_exec.spark.sparkContext.getConf().getAll())
    assert conf["spark.driver.host"] == "127.0.0.1" and conf["spark.ui.enabled"] == "false"


@pytest.mark.spark
@needs_spark
@pytest.mark.skipif(shutil.which("numactl") is None, reason="numactl is not installed")
def test_spark_point_bound_to_a_node_runs_its_workers_there(spark_exec):
    point = _point("partition", slots=1, node=0)
    rec = _checked(_run(spark_exec, point), point)
    node0 = {c for n in read_topology("/").numa_nodes if n.node == 0 for c in n.cpus}
    assert rec["settings"]["spark.pyspark.python"].endswith("python-node0.sh")
    assert rec["binding"]["workers"]
    for w in rec["binding"]["workers"]:
        assert w["mems"] == "0" and set(w["cpus"]) <= node0
    # the next unbound point goes back to the plain interpreter
    plain = _point("partition", slots=1)
    rec = _checked(_run(spark_exec, plain), plain)
    assert rec["settings"]["spark.pyspark.python"] == spark_exec._python


@pytest.mark.spark
@needs_spark
def test_spark_point_bound_without_numactl_is_one_line_error(spark_exec, monkeypatch):
    import perfsuite.execute.spark_numa as spark_numa

    real = spark_numa.shutil.which  # hide numactl only: Spark's own start looks for java
    monkeypatch.setattr(
        spark_numa.shutil, "which", lambda name, *a, **k: None if name == "numactl" else real(name)
    )
    with pytest.raises(WorkerError, match=r"needs numactl \(apt install numactl\)"):
        _run(spark_exec, _point("partition", slots=1, node=0))


@pytest.mark.spark
@needs_spark
def test_spark_outputs_that_differ_fail_the_agreement(spark_exec):
    from perfsuite.prepare import models, quantize

    point = _point("partition", batch=4)
    model = models.get("small_cnn")
    variant = quantize.prepare(model, "int8_static", "onnxruntime")
    job = SimpleNamespace(options=dict(variant.framework_options))
    rng = np.random.default_rng(0)
    noise = {i: rng.standard_normal(10).astype(np.float32).tobytes() for i in range(ITEMS)}
    got = spark_exec._agreement(records.Point(**point), model, variant, job, noise)
    assert not got.passed and got.sqnr_db < got.threshold_db


@pytest.mark.spark
@needs_spark
def test_a_failing_spark_job_is_an_error_for_its_point_only(spark_exec):
    point = _point("partition", batch=4)
    point_bad = {**point}
    from perfsuite.prepare import quantize

    real = quantize.prepare

    def broken(model, precision, framework):
        v = real(model, precision, framework)
        return replace(v, framework_options={"no_such_option": 1})

    quantize.prepare = broken
    try:
        with pytest.raises(WorkerError) as exc:
            _run(spark_exec, point_bad)
    finally:
        quantize.prepare = real
    assert "\n" not in str(exc.value) and "unknown onnxruntime options" in str(exc.value)
    # and the session still serves the next point
    assert _run(spark_exec, point).spark.agreement.passed


# -- fleet qualification on a loopback standalone cluster ----------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone cluster on 127.0.0.1: a master and 2 workers of 1 core (2 "hosts")."""
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    sys.path.insert(0, str(TESTS))
    from spark_cluster import standalone

    with standalone(tmp_path_factory.mktemp("cluster"), workers=2, cores=1) as master:
        yield master


def _cli(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "perfsuite.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.spark
@needs_spark
@pytest.mark.slow
def test_fleet_qualification_of_two_loopback_hosts(cluster, tmp_path):
    store = f"sqlite:///{tmp_path / 'history.db'}"
    r = _cli("qualify", "--spark-master", cluster, "--hosts", 2, "--quick",
             "--out", tmp_path / "fleet", "--store", store)  # fmt: skip
    assert r.returncode in (0, 1), r.stderr[-2000:]  # 1: the two "hosts" share 2 cores
    reports = sorted((tmp_path / "fleet").glob("*/qualification.json"))
    assert len(reports) == 2
    names = {json.loads(p.read_text())["fingerprint"]["fields"]["os.hostname"] for p in reports}
    assert len(names) == 2  # told apart by executor id
    assert "fleet of " in r.stdout and all(n in r.stdout for n in names)
    assert all((p.parent / "qualification.html").exists() for p in reports)
    from perfsuite.store.database import open_history

    assert len(open_history(store).qualifications()) == 2


@pytest.mark.spark
@needs_spark
@pytest.mark.slow
def test_a_sweep_runs_on_every_host_of_the_cluster(cluster, tmp_path):
    config = tmp_path / "profiles.toml"
    config.write_text(
        '[tiny]\nmodels = ["small_cnn"]\nframeworks = ["onnxruntime"]\nprecisions = ["fp32"]\n'
        'threads = ["1"]\nnuma_nodes = ["none"]\nbatch = [1]\nmode = ["latency"]\n'
        "min_time = 0.05\nmin_samples = 5\nwarmup_time = 0.01\nwarmup_calls = 1\n"
        "timeout = 120\nkernels = false\nsessions = 1\n"
    )
    store = f"sqlite:///{tmp_path / 'history.db'}"
    r = _cli("sweep", "--spark-master", cluster, "--hosts", 2, "--profile", "tiny",
             "--config", config, "--out", tmp_path / "fleet", "--store", store)  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    points = sorted((tmp_path / "fleet").glob("*/*-tiny/points/*.json"))
    assert len(points) == 2 and len({p.parts[-4] for p in points}) == 2
    assert "== across hosts" in r.stdout
    assert "small_cnn-onnxruntime-fp32-t1-unbound-b1: median" in r.stdout
    from perfsuite.store.database import open_history

    assert len(open_history(store).runs()) == 2


def test_fleet_on_a_local_master_is_a_usage_error(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "perfsuite.cli", "qualify", "--spark-master", "local[2]",
         "--hosts", "2", "--out", str(tmp_path), "--store", f"sqlite:///{tmp_path / 'h.db'}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "needs a cluster master" in r.stderr


@pytest.mark.spark
@needs_spark
@pytest.mark.slow
def test_spark_points_run_through_the_sweep_table_and_baseline(pytester, tmp_path):
    pytester.makepyfile(
        test_demo_sweep="""
def test_sweep(perf_point, perf_run):
    assert perf_run(perf_point).stats.throughput_ips > 0
"""
    )
    out, base = tmp_path / "results", tmp_path / "baselines"
    r = pytester.runpytest_subprocess(
        "--perf-precisions", "fp32", "--perf-numa-nodes", "none", "--perf-spark",
        "none,partition:1x1", "--perf-spark-items", "8", "--perf-min-time", "0.05",
        "--perf-out", str(out), "--perf-baseline", str(base), "--perf-save-baseline",
        "-p", "no:cacheprovider", timeout=600,
    )  # fmt: skip
    r.assert_outcomes(passed=2)
    text = r.stdout.str()
    assert "spark partition 1x1 b1" in text
    assert "Spark/single-process small_cnn onnxruntime fp32 spark partition 1x1 b1:" in text
    (saved,) = base.glob("*/smoke.json")
    entries = json.loads(saved.read_text())["entries"]
    assert "small_cnn-onnxruntime-fp32-spark_partition-1x1-b1" in entries


def test_the_fleet_table_marks_a_missing_host_and_a_far_off_clock(monkeypatch, capsys, tmp_path):
    from history_data import qualification

    from perfsuite.cli import main
    from perfsuite.cli import qualify as cli
    from perfsuite.fleet.qualification import FleetRun

    reports = {
        h: records.load_qualification(json.loads(qualification(tmp_path, h, bw).read_text()), h)
        for h, bw in (("a", 40.0), ("b", 41.0))
    }
    run = FleetRun(reports, {"host 3 of 3": "never registered with spark://m:7077 in 180 s"},
                   {h: tmp_path / h for h in reports}, {"a": 7200.0})  # fmt: skip
    monkeypatch.setattr(cli, "qualify_fleet", lambda *a, **k: run)
    argv = ["qualify", "--spark-master=spark://m:7077", "--hosts=3", f"--out={tmp_path}"]
    assert main([*argv, f"--store=sqlite:///{tmp_path}/h.db"]) == 1  # a host is missing
    out = capsys.readouterr().out
    assert "a: clock 7200 s ahead of the driver's" in out
    (row,) = [line for line in out.splitlines() if "host 3 of 3" in line and "MISSING" in line]
    assert "never registered" in row and "fleet of amd-zen4-2c-1n: 3 hosts" in out


# -- faults across hosts: each costs its own host's result only -------------------------------

SPARK_PROCESSES = (
    "SparkSubmit",
    "CoarseGrainedExecutorBackend",
    "pyspark.daemon",
    "pyspark.worker",
)


def _spark_processes(marker: str) -> list[str]:
    """This test's driver, executor and Python-worker processes: those that inherited its
    marker (another test's Spark, still up, is not counted)."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if p.environ().get("PERFSUITE_TEST_FLEET") != marker:
                continue
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue
        line = " ".join(p.info["cmdline"] or [])
        found += [name for name in SPARK_PROCESSES if name in line]
    return found


FLEET_DRIVER = """
import dataclasses, json, sys
sys.path.insert(0, sys.argv[2])
import fleet_faults
from perfsuite.fleet.fan_out import run_on_hosts
got = run_on_hosts(sys.argv[1], 6, fleet_faults.behave, {"skew_s": 7200, "ok_s": 3},
                   timeout=20, wait_s=float(sys.argv[3]))
print(json.dumps([dataclasses.asdict(g) for g in got]))
"""


@pytest.mark.spark
@needs_spark
@pytest.mark.slow
def test_faults_on_some_hosts_cost_only_their_results(tmp_path):
    """Five workers: one fine (its clock 2 h ahead), one whose Python worker is killed, one
    whose executor dies, one whose Python lacks perfsuite, one past its deadline; six hosts
    asked for, so one never registers. Each is one line; the fine host's result is kept; no
    Spark process outlives the run."""
    sys.path.insert(0, str(TESTS))
    from spark_cluster import standalone

    tests = str(TESTS)
    shadow = tmp_path / "shadow"
    (shadow / "perfsuite").mkdir(parents=True)
    (shadow / "perfsuite" / "__init__.py").write_text(  # first on sys.path: as if not installed
        "raise ModuleNotFoundError(\"No module named 'perfsuite'\", name='perfsuite')\n"
    )
    roles = ["skew", "kill_python", "kill_executor", "no_perfsuite", "hang"]
    marker = uuid.uuid4().hex
    envs = [{"PERFSUITE_TEST_ROLE": r, "PYTHONPATH": tests, "PERFSUITE_TEST_FLEET": marker}
            for r in roles]  # fmt: skip
    envs[3]["PYTHONPATH"] = f"{shadow}:{tests}"
    with standalone(tmp_path / "cluster", workers=5, cores=1, worker_env=envs) as master:
        assert _spark_processes(marker) == []
        r = subprocess.run([sys.executable, "-c", FLEET_DRIVER, master, tests, "40"],
                           env={**os.environ, "PERFSUITE_TEST_FLEET": marker},
                           capture_output=True, text=True, timeout=300)  # fmt: skip
        assert r.returncode == 0, r.stderr[-3000:]
        listed = json.loads(r.stdout.splitlines()[-1])
        got = {g["error"] or "ok": g for g in listed}
        for _ in range(60):  # the master stops the app's executors a moment after it ends
            if not _spark_processes(marker):
                break
            time.sleep(1)
        assert _spark_processes(marker) == []
    assert len(got) == 6, listed
    ok = got.pop("ok")
    assert ok["value"] == {"role": "skew"} and 7190 < ok["clock_offset_s"] < 7210
    reasons = sorted(got)
    expected = [
        "ExecutorLostFailure", "ModuleNotFoundError: No module named 'perfsuite'",
        "its Python worker exited unexpectedly", "never registered with spark://",
        "over its deadline of 20 s",
    ]  # fmt: skip
    assert all(any(e in why for why in reasons) for e in expected), reasons
    assert all("\n" not in why for why in reasons)
