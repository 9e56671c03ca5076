"""Shards as a sweep placement, the tuning article's multi-socket recipe: one bound worker per
NUMA node (``numa_nodes = ["shards"]``) or per L3 domain (``"l3-shards"``), started together
behind a barrier, throughput summed. Planned on the fixture topologies (EPYC 7763 2S NPS4:
8 nodes, 16 CCDs; EPYC 9654 NPS1: 12 CCDs), run for real on this host's node, and a shard
that fails costs its point only."""

from __future__ import annotations

import json

import pytest

from perfsuite import records
from perfsuite.execute import bound, shards
from perfsuite.execute.isolation import WorkerCrashed, WorkerError
from perfsuite.execute.measure import summarize
from perfsuite.host import placement
from perfsuite.host.topology import read_topology
from perfsuite.sweep.plan import PlanError, expand, load_profiles, make_profile

pytest_plugins = ["pytester"]


def plan(topo, **over):
    raw = {**load_profiles()["smoke"], "precisions": ["fp32"], "threads": ["cores"], **over}
    return expand(make_profile("t", raw), topo, model_mb=lambda m: 10.0, bf16=True)


def test_shards_are_planned_per_node_and_per_l3_domain_on_the_fixtures(host_tree):
    nps4 = read_topology(host_tree("epyc7763-2s-nps4"))
    genoa = read_topology(host_tree("epyc9654-1s-nps1"))
    got = {p.shards: p for p in plan(nps4, numa_nodes=["shards", "l3-shards"])}
    assert len(placement.shards(nps4, "node")) == 8 and got["node"].threads == 16
    assert len(placement.shards(nps4, "l3")) == 16 and got["l3"].threads == 8
    assert got["node"].id == "small_cnn-onnxruntime-fp32-t16-shards-b1"
    assert got["l3"].id == "small_cnn-onnxruntime-fp32-t8-l3shards-b1"
    got = {p.shards: p for p in plan(genoa, numa_nodes=["shards", "l3-shards"])}
    assert len(placement.shards(genoa, "l3")) == 12 and got["l3"].threads == 8
    assert len(placement.shards(genoa, "node")) == 1 and got["node"].threads == 96
    assert all(p.numa_node is None and p.skip is None for p in got.values())


def test_a_shards_point_runs_windows_only_and_a_bad_value_is_named(host_tree):
    nps4 = read_topology(host_tree("epyc7763-2s-nps4"))
    (server,) = plan(nps4, numa_nodes=["shards"], mode=["server"])
    assert "shards measure latency or throughput windows" in server.skip
    with pytest.raises(PlanError, match="'l3-shards' \\(a worker per L3 domain\\)"):
        plan(nps4, numa_nodes=["shard"])
    with pytest.raises(ValueError, match="no numa_node"):
        records.Point(model="m", framework="f", precision="p", threads=1, batch=1,
                      mode="latency", numa_node=0, shards="node")  # fmt: skip


def _measured(ips: float) -> dict:
    samples = [1 / ips] * 5
    return records.dump(records.Measurement(samples_s=samples, session_medians_s=[1 / ips],
                                            stats=summarize(samples)))  # fmt: skip


def test_the_shards_are_summed_and_a_failing_shard_costs_its_point(host_tree, monkeypatch):
    nps4 = read_topology(host_tree("epyc7763-2s-nps4"))
    point = records.Point(model="small_cnn", framework="onnxruntime", precision="fp32",
                          threads=16, batch=1, mode="latency", shards="node")  # fmt: skip
    calls = []

    def fake(fn, point_, protocol, *, placement, **how):
        calls.append((placement.label, protocol.barrier))
        ips = 100.0 + 10 * int(placement.label.removeprefix("node"))
        cpus, node = ",".join(map(str, placement.cpus[:2])), str(placement.mem_nodes[0])
        binding = records.Binding(cpus_allowed=cpus, mems_allowed=node, mempolicy="bind",
                                  mempolicy_nodes=node, mechanism="numactl")  # fmt: skip
        return bound.Bound(_measured(ips), binding, "numactl", placement.label)

    monkeypatch.setattr(bound, "run_bound", fake)
    got = shards.run_sharded(point, records.MeasureProtocol(sessions=3), timeout=60, topo=nps4)
    assert len(calls) == 8 and all(b.endswith(":8") for _, b in calls)  # one barrier for all
    assert got.stats.throughput_ips == pytest.approx(sum(100.0 + 10 * i for i in range(8)))
    assert len(got.samples_s) == 40 and [s.placement for s in got.shards][:2] == ["node0", "node1"]
    assert got.isolation == "shards (8 bound workers, numactl)"

    def dies(fn, point_, protocol, *, placement, **how):
        if placement.label == "node5":
            raise WorkerCrashed("worker killed by signal 11")
        return fake(fn, point_, protocol, placement=placement, **how)

    monkeypatch.setattr(bound, "run_bound", dies)
    with pytest.raises(WorkerError, match="a shard of 8 failed: worker killed by signal 11"):
        shards.run_sharded(point, records.MeasureProtocol(), timeout=60, topo=nps4)


SWEEP = """
def test_sweep(perf_point, perf_run):
    assert perf_run(perf_point).stats.throughput_ips > 0
"""


def test_this_hosts_node_as_one_shard_through_the_sweep(pytester, tmp_path):
    """One node here: one shard, bound and measured like the node-0 point beside it."""
    pytester.makepyfile(test_demo_sweep=SWEEP)
    out = tmp_path / "runs"
    r = pytester.runpytest_subprocess(
        "--perf-precisions", "fp32", "--perf-numa-nodes", "shards,0", "--perf-min-time", "0.1",
        "--perf-out", str(out), "-p", "no:cacheprovider",
    )  # fmt: skip
    r.assert_outcomes(passed=2)
    (rec,) = [json.loads(p.read_text()) for p in out.glob("*/points/*-shards-*.json")]
    assert rec["point"]["shards"] == "node" and len(rec["shards"]) == 1
    assert rec["isolation"].startswith("shards (1 bound workers")
    assert rec["shards"][0]["throughput_ips"] == pytest.approx(rec["stats"]["throughput_ips"])
    text = r.stdout.str()
    assert "small_cnn-onnxruntime-fp32-t1-shards-b1: 1 node shard(s) of 1 thread(s)" in text
