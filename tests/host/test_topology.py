import pytest

from perfsuite.host.topology import format_cpulist, parse_cpulist, parse_size, read_topology


@pytest.mark.parametrize(
    "text, cpus",
    [
        ("0", [0]),
        ("0-3", [0, 1, 2, 3]),
        ("0-1,8,10-11", [0, 1, 8, 10, 11]),
        ("", []),
        ("0-7:2", [0, 2, 4, 6]),
        ("3,1", [1, 3]),
    ],
)
def test_parse_cpulist(text, cpus):
    assert parse_cpulist(text) == cpus


def test_cpulist_round_trip():
    cpus = [0, 1, 2, 3, 8, 10, 11, 64, 128, 129]
    assert format_cpulist(cpus) == "0-3,8,10-11,64,128-129"
    assert parse_cpulist(format_cpulist(cpus)) == cpus


def test_parse_cpulist_rejects_garbage():
    with pytest.raises(ValueError):
        parse_cpulist("3-1")
    with pytest.raises(ValueError):
        parse_cpulist("a-b")


@pytest.mark.parametrize("text, size", [("32K", 32768), ("32768K", 32 << 20), ("1M", 1 << 20)])
def test_parse_size(text, size):
    assert parse_size(text) == size


def test_kvm_guest(host_tree):
    t = read_topology(host_tree("kvm-zen3-2vcpu"))
    assert t.online == (0, 1) and t.offline == ()
    assert (t.sockets, t.physical_cores, t.threads_per_core) == (1, 2, 1)
    assert t.caches["L1d"].size_bytes == 32 << 10
    assert t.caches["L2"].size_bytes == 512 << 10
    assert t.caches["L3"].size_bytes == t.l3_bytes == 32 << 20
    assert t.l3_domains == ((0, 1),)
    assert [(n.node, n.cpus) for n in t.numa_nodes] == [(0, (0, 1))]
    assert t.cpu.vendor == "AuthenticAMD" and (t.cpu.family, t.cpu.model) == (25, 1)
    assert "hypervisor" in t.cpu.flags
    assert t.notes == ()


def test_epyc7763_two_socket_nps4(host_tree):
    t = read_topology(host_tree("epyc7763-2s-nps4"))
    assert len(t.online) == 256
    assert (t.sockets, t.physical_cores, t.threads_per_core) == (2, 128, 2)
    # 8-core CCDs: 16 L3 domains of 8 cores x 2 threads, each holding its SMT siblings.
    assert len(t.l3_domains) == 16
    assert t.l3_domains[0] == tuple(range(0, 8)) + tuple(range(128, 136))
    assert all(len(d) == 16 for d in t.l3_domains)
    assert t.caches["L3"].size_bytes == 32 << 20
    assert len(t.numa_nodes) == 8
    assert t.numa_nodes[0].cpus == tuple(range(0, 16)) + tuple(range(128, 144))
    assert t.numa_nodes[4].cpus == tuple(range(64, 80)) + tuple(range(192, 208))
    assert t.numa_nodes[7].mem_total_bytes == 65_839_892 * 1024
    assert t.smt_control == "on"


def test_epyc9654_genoa(host_tree):
    t = read_topology(host_tree("epyc9654-1s-nps1"))
    assert (t.sockets, t.physical_cores, t.threads_per_core) == (1, 96, 2)
    assert len(t.l3_domains) == 12
    assert t.caches["L2"].size_bytes == 1 << 20
    assert len(t.numa_nodes) == 1 and len(t.numa_nodes[0].cpus) == 192
    assert {"avx512f", "avx512_vnni", "avx512_bf16"} <= t.cpu.flags
    assert (t.cpu.family, t.cpu.model) == (25, 0x11)


def test_broken_tree_degrades_with_notes(host_tree):
    t = read_topology(host_tree("broken-container"))
    assert t.online == (1, 2, 3) and t.offline == (0,)
    assert t.physical_cores == 3 and t.threads_per_core == 1
    # CPU 2 has no cache dirs: sizes still come from CPUs 1 and 3; offline CPU 0 is not
    # counted in a sharing domain.
    assert t.caches["L3"].size_bytes == 16 << 20
    assert t.l3_domains == ((1, 2, 3),)
    assert "L1i" not in t.caches
    assert t.numa_nodes is None
    notes = " | ".join(t.notes)
    assert "no cache directory for CPU(s) 2" in notes
    assert "NUMA" in notes and "absent" in notes
    assert "L1i: unknown" in notes


def test_empty_root_never_crashes(tmp_path):
    t = read_topology(tmp_path)
    assert t.online is None and t.sockets is None and t.numa_nodes is None
    assert t.l3_bytes is None
    assert t.cpu.vendor is None
    assert any("online CPUs" in n for n in t.notes)


def test_empty_numa_node(empty_node_root):
    # A memory-only node (CXL or a node whose CPUs are all offline) has an empty cpulist.
    root = empty_node_root
    t = read_topology(root)
    assert [n.cpus for n in t.numa_nodes] == [(0, 1), ()]
    assert t.numa_nodes[1].mem_total_bytes == 1 << 30
    assert any("node 1 has no CPUs" in n for n in t.notes)


def test_real_host_reads_without_notes_about_cpus():
    t = read_topology("/")
    assert t.online and t.physical_cores and t.caches.get("L3")
