"""Writes the host fixture snapshots (*.tree) used by the topology tests.

Each snapshot is a text file of ``== /path`` headers, each followed by that file's content,
laid out as the Linux kernel lays out sysfs/procfs on the real machine (CPU numbering,
SMT sibling numbering, CCD-sized L3 domains, NPS node layout from AMD's tuning guides).
Regenerate with ``python tests/data/hosts/make_trees.py``; the outputs are committed so the
tests read fixed data, not this script.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent

MILAN_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl "
    "nonstop_tsc cpuid extd_apicid aperfmperf rapl pni pclmulqdq monitor ssse3 fma cx16 pcid "
    "sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand lahf_lm cmp_legacy svm "
    "extapic cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw ibs skinit wdt tce topoext "
    "perfctr_core perfctr_nb bpext perfctr_llc mwaitx cpb cat_l3 cdp_l3 invpcid_single hw_pstate "
    "ssbd mba ibrs ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 erms invpcid cqm rdt_a rdseed "
    "adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc "
    "cqm_mbm_total cqm_mbm_local clzero irperf xsaveerptr rdpru wbnoinvd amd_ppin arat npt lbrv "
    "svm_lock nrip_save tsc_scale vmcb_clean flushbyasid decodeassists pausefilter pfthreshold "
    "v_vmsave_vmload vgif v_spec_ctrl umip pku ospke vaes vpclmulqdq rdpid overflow_recov succor "
    "smca fsrm"
)
GENOA_EXTRA = (
    "avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx512_bf16 avx512vbmi avx512_vbmi2 "
    "gfni avx512_vnni avx512_bitalg avx512_vpopcntdq la57 flush_l1d"
)
KVM_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl "
    "xtopology nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid "
    "sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor "
    "lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext ssbd ibrs "
    "ibpb stibp vmmcall fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid rdseed adx smap "
    "clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves clzero xsaveerptr wbnoinvd arat umip "
    "pku ospke vaes vpclmulqdq rdpid fsrm"
)


def cpulist(cpus) -> str:
    cpus = sorted(cpus)
    runs, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        runs.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(runs)


def cpuinfo(
    cpus, *, model_name, family, model, stepping, flags, mhz, per_socket_cores, threads_per_core
) -> str:
    blocks = []
    for cpu, (pkg, core) in cpus.items():
        blocks.append(
            "\n".join(
                [
                    f"processor\t: {cpu}",
                    "vendor_id\t: AuthenticAMD",
                    f"cpu family\t: {family}",
                    f"model\t\t: {model}",
                    f"model name\t: {model_name}",
                    f"stepping\t: {stepping}",
                    f"cpu MHz\t\t: {mhz:.3f}",
                    "cache size\t: 512 KB",
                    f"physical id\t: {pkg}",
                    f"siblings\t: {per_socket_cores * threads_per_core}",
                    f"core id\t\t: {core}",
                    f"cpu cores\t: {per_socket_cores}",
                    f"flags\t\t: {flags}",
                    "",
                ]
            )
        )
    return "\n".join(blocks)


def server(
    *,
    sockets,
    cores_per_socket,
    smt,
    ccd_cores,
    nps,
    l2,
    model_name,
    family,
    model,
    stepping,
    flags,
    mem_per_node_kb,
    mhz,
):
    """Linux numbering on AMD servers: first thread of every core (socket 0 then 1), then
    the SMT siblings in the same order."""
    cores = sockets * cores_per_socket
    tpc = 2 if smt else 1
    files: dict[str, str] = {}
    cpu_map = {}
    for cpu in range(cores * tpc):
        phys = cpu % cores
        pkg, core = divmod(phys, cores_per_socket)
        cpu_map[cpu] = (pkg, core)
        sib = [phys + t * cores for t in range(tpc)]
        ccd = phys // ccd_cores
        l3 = [
            c + t * cores for c in range(ccd * ccd_cores, (ccd + 1) * ccd_cores) for t in range(tpc)
        ]
        pkg_cpus = [
            c + t * cores
            for c in range(pkg * cores_per_socket, (pkg + 1) * cores_per_socket)
            for t in range(tpc)
        ]
        base = f"/sys/devices/system/cpu/cpu{cpu}"
        files[f"{base}/topology/physical_package_id"] = str(pkg)
        files[f"{base}/topology/core_id"] = str(core)
        files[f"{base}/topology/die_id"] = "0"
        files[f"{base}/topology/thread_siblings_list"] = cpulist(sib)
        files[f"{base}/topology/core_siblings_list"] = cpulist(pkg_cpus)
        for idx, (level, ctype, size, shared) in enumerate(
            [
                (1, "Data", "32K", sib),
                (1, "Instruction", "32K", sib),
                (2, "Unified", l2, sib),
                (3, "Unified", "32768K", l3),
            ]
        ):
            files[f"{base}/cache/index{idx}/level"] = str(level)
            files[f"{base}/cache/index{idx}/type"] = ctype
            files[f"{base}/cache/index{idx}/size"] = size
            files[f"{base}/cache/index{idx}/shared_cpu_list"] = cpulist(shared)
        files[f"{base}/cpufreq/scaling_driver"] = "acpi-cpufreq"
        files[f"{base}/cpufreq/scaling_governor"] = "performance"
        files[f"{base}/cpufreq/cpuinfo_max_freq"] = "3529052"
    all_cpus = range(cores * tpc)
    files["/sys/devices/system/cpu/online"] = cpulist(all_cpus)
    files["/sys/devices/system/cpu/possible"] = cpulist(all_cpus)
    files["/sys/devices/system/cpu/offline"] = ""
    files["/sys/devices/system/cpu/smt/control"] = "on" if smt else "off"
    files["/sys/devices/system/cpu/cpufreq/boost"] = "1"
    nodes = sockets * nps
    per_node = cores // nodes
    for n in range(nodes):
        phys = range(n * per_node, (n + 1) * per_node)
        cpus = [c + t * cores for c in phys for t in range(tpc)]
        files[f"/sys/devices/system/node/node{n}/cpulist"] = cpulist(cpus)
        files[f"/sys/devices/system/node/node{n}/meminfo"] = (
            f"Node {n} MemTotal:       {mem_per_node_kb} kB\n"
            f"Node {n} MemFree:        {mem_per_node_kb - 1048576} kB"
        )
    files["/sys/devices/system/node/online"] = cpulist(range(nodes))
    files["/sys/devices/system/node/possible"] = cpulist(range(nodes))
    files["/proc/meminfo"] = f"MemTotal:       {mem_per_node_kb * nodes} kB\nMemFree: 1 kB"
    files["/proc/sys/kernel/osrelease"] = "5.15.0-91-generic"
    files["/proc/sys/kernel/numa_balancing"] = "1"
    files["/sys/kernel/mm/transparent_hugepage/enabled"] = "[always] madvise never"
    files["/proc/cpuinfo"] = cpuinfo(
        cpu_map,
        model_name=model_name,
        family=family,
        model=model,
        stepping=stepping,
        flags=flags,
        mhz=mhz,
        per_socket_cores=cores_per_socket,
        threads_per_core=tpc,
    )
    return files


def kvm_guest_2vcpu():
    """A 2-vCPU KVM guest on Milan, like the machine perfsuite is developed on."""
    files = {}
    for cpu in (0, 1):
        base = f"/sys/devices/system/cpu/cpu{cpu}"
        files[f"{base}/topology/physical_package_id"] = "0"
        files[f"{base}/topology/core_id"] = str(cpu)
        files[f"{base}/topology/die_id"] = "0"
        files[f"{base}/topology/thread_siblings_list"] = str(cpu)
        for idx, (level, ctype, size, shared) in enumerate(
            [
                (1, "Data", "32K", str(cpu)),
                (1, "Instruction", "32K", str(cpu)),
                (2, "Unified", "512K", str(cpu)),
                (3, "Unified", "32768K", "0-1"),
            ]
        ):
            files[f"{base}/cache/index{idx}/level"] = str(level)
            files[f"{base}/cache/index{idx}/type"] = ctype
            files[f"{base}/cache/index{idx}/size"] = size
            files[f"{base}/cache/index{idx}/shared_cpu_list"] = shared
    files["/sys/devices/system/cpu/online"] = "0-1"
    files["/sys/devices/system/cpu/possible"] = "0-1"
    files["/sys/devices/system/cpu/offline"] = ""
    files["/sys/devices/system/cpu/smt/control"] = "notsupported"
    files["/sys/devices/system/node/online"] = "0"
    files["/sys/devices/system/node/node0/cpulist"] = "0-1"
    files["/sys/devices/system/node/node0/meminfo"] = "Node 0 MemTotal:       24683584 kB"
    files["/proc/meminfo"] = "MemTotal:       24683584 kB\nMemFree:        24012604 kB"
    files["/proc/sys/kernel/osrelease"] = "6.18.44"
    files["/proc/sys/kernel/numa_balancing"] = "0"
    files["/sys/kernel/mm/transparent_hugepage/enabled"] = "always [madvise] never"
    files["/proc/cpuinfo"] = cpuinfo(
        {0: (0, 0), 1: (0, 1)},
        model_name="AMD EPYC",
        family=25,
        model=1,
        stepping=1,
        flags=KVM_FLAGS,
        mhz=2445.4,
        per_socket_cores=2,
        threads_per_core=1,
    )
    return files


def broken_tree():
    """A container-ish view of a 4-CPU host: CPU 0 offline, CPU 2 without cache dirs,
    no /sys/devices/system/node, no THP or numa_balancing files."""
    files = {}
    for cpu in (1, 2, 3):
        base = f"/sys/devices/system/cpu/cpu{cpu}"
        files[f"{base}/topology/physical_package_id"] = "0"
        files[f"{base}/topology/core_id"] = str(cpu)
        files[f"{base}/topology/thread_siblings_list"] = str(cpu)
        if cpu == 2:
            continue
        for idx, (level, ctype, size, shared) in enumerate(
            [
                (1, "Data", "32K", str(cpu)),
                (2, "Unified", "512K", str(cpu)),
                (3, "Unified", "16384K", "0-3"),
            ]
        ):
            files[f"{base}/cache/index{idx}/level"] = str(level)
            files[f"{base}/cache/index{idx}/type"] = ctype
            files[f"{base}/cache/index{idx}/size"] = size
            files[f"{base}/cache/index{idx}/shared_cpu_list"] = shared
    files["/sys/devices/system/cpu/cpu0/online"] = "0"
    files["/sys/devices/system/cpu/online"] = "1-3"
    files["/sys/devices/system/cpu/offline"] = "0"
    files["/sys/devices/system/cpu/possible"] = "0-3"
    files["/proc/cpuinfo"] = cpuinfo(
        {1: (0, 1), 2: (0, 2), 3: (0, 3)},
        model_name="AMD Ryzen 7 5800X 8-Core Processor",
        family=25,
        model=0x21,
        stepping=0,
        flags=MILAN_FLAGS,
        mhz=3800.0,
        per_socket_cores=3,
        threads_per_core=1,
    )
    return files


TREES = {
    "kvm-zen3-2vcpu": kvm_guest_2vcpu,
    "epyc7763-2s-nps4": lambda: server(
        sockets=2,
        cores_per_socket=64,
        smt=True,
        ccd_cores=8,
        nps=4,
        l2="512K",
        model_name="AMD EPYC 7763 64-Core Processor",
        family=25,
        model=1,
        stepping=1,
        flags=MILAN_FLAGS,
        mem_per_node_kb=65_839_892,
        mhz=2450.0,
    ),
    "epyc9654-1s-nps1": lambda: server(
        sockets=1,
        cores_per_socket=96,
        smt=True,
        ccd_cores=8,
        nps=1,
        l2="1024K",
        model_name="AMD EPYC 9654 96-Core Processor",
        family=25,
        model=0x11,
        stepping=1,
        flags=MILAN_FLAGS + " " + GENOA_EXTRA,
        mem_per_node_kb=791_219_156,
        mhz=2400.0,
    ),
    "broken-container": broken_tree,
}


def write_snapshot(path: Path, files: dict[str, str]) -> None:
    with path.open("w") as f:
        for name in sorted(files):
            f.write(f"== {name}\n{files[name]}\n")


if __name__ == "__main__":
    for name, make in TREES.items():
        write_snapshot(HERE / f"{name}.tree", make())
        print("wrote", name)
