import json
import subprocess
import sys

import pytest

from perfsuite.host.fingerprint import FIELD_CLASSES, MUST, SCHEMA, fingerprint, hardware_class
from perfsuite.host.microarch import amd_microarchitecture, microarchitecture_by_flags
from perfsuite.prepare.backends import software_versions


def test_every_field_is_classified():
    fp = fingerprint("/", frameworks=software_versions())
    assert "software.onnxruntime" in fp.fields and "software.openvino" in fp.fields
    assert set(fp.fields) - set(FIELD_CLASSES) <= {
        k for k in fp.fields if k.startswith("software.")
    }
    assert set(fp.classes.values()) <= {"must_match", "tolerance", "informational"}


def test_frequency_and_memory_never_must_match():
    for key, cls in FIELD_CLASSES.items():
        if key.startswith(("freq.", "memory.", "software.")) or "mhz" in key:
            assert cls != MUST, key


@pytest.mark.parametrize(
    "family, model, name",
    [
        (0x17, 0x01, "zen"),
        (0x17, 0x31, "zen2"),
        (0x19, 0x01, "zen3"),
        (0x19, 0x11, "zen4"),
        (0x19, 0x21, "zen3"),
        (0x19, 0xA0, "zen4"),
        (0x1A, 0x02, "zen5"),
        (0x15, 0x01, None),
    ],
)
def test_amd_family_model_table(family, model, name):
    assert amd_microarchitecture(family, model) == name


def test_intel_by_flags_uses_archspec():
    flags = {
        "sse4_2",
        "avx",
        "avx2",
        "fma",
        "bmi1",
        "bmi2",
        "f16c",
        "movbe",
        "popcnt",
        "aes",
        "pclmulqdq",
        "rdrand",
        "ssse3",
        "sse4_1",
        "mmx",
        "sse",
        "sse2",
        "lm",
        "cx16",
        "pni",
        "abm",
        "lahf_lm",
        "xsave",
    }
    assert microarchitecture_by_flags("GenuineIntel", flags) == "haswell"


def test_kvm_guest_fingerprint(host_tree):
    fp = fingerprint(host_tree("kvm-zen3-2vcpu"), software=False)
    f = fp.fields
    assert fp.schema_ == SCHEMA
    assert f["cpu.microarchitecture"] == "zen3"
    assert f["os.hypervisor"] == "yes (vendor unknown)"
    assert f["os.thp_enabled"] == "madvise" and f["os.numa_balancing"] is False
    assert fp.hardware_class == "amd-zen3-2c-1n"


def test_epyc7763_fingerprint(host_tree):
    fp = fingerprint(host_tree("epyc7763-2s-nps4"), software=False)
    f = fp.fields
    assert f["cpu.model_name"] == "AMD EPYC 7763 64-Core Processor"
    assert f["cpu.microarchitecture"] == "zen3"
    assert (f["cpu.sockets"], f["cpu.physical_cores"], f["cpu.smt"]) == (2, 128, True)
    assert f["numa.node_count"] == 8 and f["cache.l3_domain_count"] == 16
    assert f["cache.l3_domains"][0] == "0-7,128-135"
    assert f["numa.nodes"][1]["cpus"] == "16-31,144-159"
    assert f["isa.avx2"] is True and f["isa.avx512f"] is False
    assert (f["freq.driver"], f["freq.governor"], f["freq.boost"]) == (
        "acpi-cpufreq",
        "performance",
        True,
    )
    assert f["freq.max_mhz"] == pytest.approx(3529.052)
    assert f["os.hypervisor"] == "none" and f["os.thp_enabled"] == "always"
    assert fp.hardware_class == "amd-zen3-128c-8n-smt2"


def test_epyc9654_fingerprint(host_tree):
    f = fingerprint(host_tree("epyc9654-1s-nps1"), software=False).fields
    assert f["cpu.microarchitecture"] == "zen4"
    assert f["isa.avx512f"] and f["isa.avx512_vnni"] and f["isa.avx512_bf16"]
    assert f["cache.l3_domain_count"] == 12 and f["cache.l2_bytes"] == 1 << 20
    assert f["memory.total_bytes"] == 791_219_156 * 1024


def test_broken_tree_fingerprint(host_tree):
    fp = fingerprint(host_tree("broken-container"), software=False)
    f = fp.fields
    assert f["cpu.microarchitecture"] == "zen3"  # family 25 model 0x21: Vermeer
    assert f["cpu.offline"] == "0" and f["cpu.online_count"] == 3
    assert f["numa.node_count"] is None and f["os.thp_enabled"] is None
    assert any("numa.node_count" in n for n in fp.notes)
    assert fp.hardware_class == "amd-zen3-3c-xn"


def test_hardware_class_is_readable():
    assert (
        hardware_class(
            {
                "cpu.vendor": "GenuineIntel",
                "cpu.microarchitecture": "sapphirerapids",
                "cpu.physical_cores": 56,
                "numa.node_count": 2,
                "cpu.threads_per_core": 2,
            }
        )
        == "intel-sapphirerapids-56c-2n-smt2"
    )


def test_cli_info_json_on_this_host():
    out = subprocess.run(
        [sys.executable, "-m", "perfsuite.cli", "info", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    fp = json.loads(out)
    f = fp["fields"]
    # The development and CI machine: a Zen 3 EPYC VM, AVX2+FMA, no AVX-512, one node, 32 MiB L3.
    if f["cpu.vendor"] != "AuthenticAMD" or f["cpu.microarchitecture"] != "zen3":
        pytest.skip(f"not the reference Zen 3 host: {f['cpu.vendor']} {f['cpu.microarchitecture']}")
    assert f["isa.avx2"] and f["isa.fma"] and not f["isa.avx512f"]
    assert f["numa.node_count"] == 1
    assert f["cache.l3_bytes"] == 32 << 20
    assert f["kernels.isa"] == "avx2"
    assert f["software.numpy"]


def test_cli_info_table_on_fixture(host_tree):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfsuite.cli",
            "info",
            "--root",
            str(host_tree("epyc9654-1s-nps1")),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "160", "PATH": ""},
    ).stdout
    assert "amd-zen4-96c-1n-smt2" in out and "avx512_vnni" in out and "32 MiB" in out
