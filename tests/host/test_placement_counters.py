import shutil

import pytest

from perfsuite.execute import counters
from perfsuite.host import placement
from perfsuite.host.topology import read_topology


@pytest.fixture
def nps4(host_tree):
    return read_topology(host_tree("epyc7763-2s-nps4"))


def test_node_placement_and_numactl_args(nps4):
    p = placement.node(nps4, 5)
    assert p.cpus[:2] == (80, 81) and len(p.cpus) == 32 and p.mem_nodes == (5,)
    assert p.numactl_args() == ["--physcpubind=80-95,208-223", "--membind=5"]
    assert p.numactl_args(interleave=True)[1] == "--interleave=5"


def test_shards_per_node_and_per_l3(nps4):
    nodes = placement.shards(nps4, "node")
    assert [s.label for s in nodes] == [f"node{i}" for i in range(8)]
    l3 = placement.shards(nps4, "l3")
    assert len(l3) == 16 and all(len(s.cpus) == 16 for s in l3)
    assert l3[0].mem_nodes == (0,) and l3[15].mem_nodes == (7,)  # NPS4: 2 CCDs per node


def test_compact_and_spread_thread_placement(nps4):
    node0 = list(placement.node(nps4, 0).cpus)  # CCDs 0-7 and 8-15 (+ SMT 128-143)
    assert placement.choose_cpus(nps4, node0, 4, "compact") == [0, 1, 2, 3]
    assert placement.choose_cpus(nps4, node0, 4, "spread") == [0, 1, 8, 9]
    # physical cores before SMT siblings
    assert placement.choose_cpus(nps4, node0, 18, "compact") == list(range(16)) + [128, 129]


def test_local_remote_matrix(nps4, host_tree):
    m = placement.matrix(nps4)
    assert len(m) == 64 and (3, 3) in m and (3, 4) in m
    assert placement.matrix(read_topology(host_tree("kvm-zen3-2vcpu"))) == [(0, 0)]


def test_bad_placements_are_clear_errors(nps4, host_tree, tmp_path):
    with pytest.raises(placement.PlacementError, match="node 9 does not exist"):
        placement.node(nps4, 9)
    with pytest.raises(placement.PlacementError, match="CPU.* 300 are not online"):
        placement.cpus(nps4, [0, 300])
    with pytest.raises(placement.PlacementError, match="empty CPU list"):
        placement.cpus(nps4, [])
    with pytest.raises(placement.PlacementError, match="cannot place 40 threads"):
        placement.choose_cpus(nps4, list(range(32)), 40)
    with pytest.raises(placement.PlacementError, match="no NUMA nodes"):
        placement.shards(read_topology(host_tree("broken-container")))


def test_perf_csv_parsing_never_turns_unsupported_into_zero():
    text = (
        "<not supported>,,cycles,0,100.00,,\n1000,,instructions,5,100.00,,\n"
        "<not counted>,,cache-misses,0,0.00,,\n"
    )
    res = counters.parse_perf_csv(text)
    assert res.counts == {"instructions": 1000}
    assert res.unsupported["cycles"] == "not supported"
    assert res.unsupported["cache-misses"] == "not counted"
    assert res.unsupported["LLC-load-misses"] == "not reported by perf"
    assert "ipc" not in res.derived
    ok = counters.parse_perf_csv(
        "2000,,cycles,1,100,,\n3000,,instructions,1,100,,\n30,,cache-misses,1,100,,\n"
    )
    assert ok.derived["ipc"] == 1.5 and ok.derived["cache-misses_per_1k_instructions"] == 10


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_perf_stat_on_this_host_reports_counts_or_unsupported():
    res = counters.perf_stat(["true"])
    assert set(res.counts) | set(res.unsupported) == set(counters.EVENTS)
    assert all(v > 0 for v in res.counts.values())
    available, reason = counters.pmu_available()
    assert available or reason  # this VM: "not supported"


def test_missing_perf_is_unsupported_with_reason(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    res = counters.perf_stat(["true"])
    assert res.counts == {} and all("not installed" in r for r in res.unsupported.values())


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_simulated_cache_misses_of_a_small_gemm():
    res = counters.simulated_cache_misses(32, 32, 32)
    ev = res["events"]
    # 32^3 = 32768 multiply-adds: at 8 lanes per FMA the kernel needs thousands of
    # instructions, not millions (only the kernel was collected, not the interpreter).
    assert 1_000 < ev["Ir"] < 1_000_000
    assert 0 <= res["d1_miss_rate"] < 0.5
    with pytest.raises(ValueError, match="too large for simulation"):
        counters.simulated_cache_misses(1024, 1024, 1024)


def test_empty_node_is_a_clear_error(empty_node_root):
    root = empty_node_root
    topo = read_topology(root)
    with pytest.raises(placement.PlacementError, match="node 1 has no online CPUs"):
        placement.node(topo, 1)
    assert [s.label for s in placement.shards(topo)] == ["node0"]  # memory-only node skipped
    assert placement.matrix(topo) == [(0, 0), (0, 1)]  # but it is a memory target
