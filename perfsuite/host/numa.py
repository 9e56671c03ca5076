"""CPU and memory binding of the current process, applied and then verified.

In-process mechanism: ``sched_setaffinity`` for CPUs and the ``set_mempolicy`` system call
(MPOL_BIND to the node mask) for memory, through ctypes. After applying, the binding is read
back from the kernel (``/proc/self/status`` Cpus_allowed_list / Mems_allowed_list and
``get_mempolicy``); a binding that did not take is a ``BindingError``, never a silent unbound
run. Call it before any framework allocates memory (a fresh worker process).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from perfsuite.host.topology import format_cpulist, parse_cpulist
from perfsuite.records import Binding

MPOL_DEFAULT, MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE = 0, 1, 2, 3
_MODES = {0: "default", 1: "preferred", 2: "bind", 3: "interleave", 4: "local"}
SYS_SET_MEMPOLICY, SYS_GET_MEMPOLICY = 238, 239  # x86-64 syscall numbers
MAX_NODES = 1024


class BindingError(RuntimeError):
    """A requested binding could not be applied or did not verify."""


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mask(nodes: list[int]) -> tuple[ctypes.Array, int]:
    words = (MAX_NODES + 63) // 64
    arr = (ctypes.c_ulong * words)()
    for n in nodes:
        if not 0 <= n < MAX_NODES:
            raise BindingError(f"NUMA node {n} is out of range")
        arr[n // 64] |= 1 << (n % 64)
    return arr, MAX_NODES + 1


def set_mempolicy(mode: int, nodes: list[int]) -> None:
    mask, maxnode = _mask(nodes)
    rc = _libc().syscall(SYS_SET_MEMPOLICY, ctypes.c_int(mode), mask, ctypes.c_ulong(maxnode))
    if rc != 0:
        why = os.strerror(ctypes.get_errno())
        raise BindingError(f"set_mempolicy({_MODES.get(mode, mode)}, nodes {nodes}) failed: {why}")


def get_mempolicy() -> tuple[str, list[int]]:
    mode = ctypes.c_int(-1)
    mask, maxnode = _mask([])
    rc = _libc().syscall(
        SYS_GET_MEMPOLICY,
        ctypes.byref(mode),
        mask,
        ctypes.c_ulong(maxnode),
        ctypes.c_void_p(0),
        ctypes.c_ulong(0),
    )
    if rc != 0:
        raise BindingError(f"get_mempolicy failed: {os.strerror(ctypes.get_errno())}")
    nodes = [i for i in range(MAX_NODES) if mask[i // 64] >> (i % 64) & 1]
    return _MODES.get(mode.value, str(mode.value)), nodes


def read_status() -> dict[str, str]:
    lines = (line.partition(":") for line in Path("/proc/self/status").read_text().splitlines())
    return {k: v.strip() for k, _, v in lines if k in ("Cpus_allowed_list", "Mems_allowed_list")}


def current_binding(mechanism: str = "none") -> Binding:
    status = read_status()
    try:
        mode, nodes = get_mempolicy()
    except BindingError as exc:
        mode, nodes = f"unknown ({exc})", []
    return Binding(
        cpus_allowed=status.get("Cpus_allowed_list", "unknown"),
        mems_allowed=status.get("Mems_allowed_list", "unknown"),
        mempolicy=mode,
        mempolicy_nodes=format_cpulist(nodes),
        mechanism=mechanism,
    )


def bind(cpus: list[int] | None = None, mem_nodes: list[int] | None = None) -> Binding:
    """Bind this process to ``cpus`` and its memory to ``mem_nodes``; verify; return what is
    in force. Raises BindingError when the kernel refuses or the result differs."""
    if cpus is not None:
        allowed = os.sched_getaffinity(0)
        outside = sorted(set(cpus) - allowed)
        if outside:
            raise BindingError(
                f"CPU(s) {format_cpulist(outside)} are outside this process's "
                f"allowed set {format_cpulist(allowed)}"
            )
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as exc:
            raise BindingError(f"sched_setaffinity({format_cpulist(cpus)}) failed: {exc}") from exc
    if mem_nodes is not None:
        set_mempolicy(MPOL_BIND, mem_nodes)
    got = current_binding("sched_setaffinity+set_mempolicy")
    verify(got, cpus, mem_nodes, got.mechanism)
    return got


def verify(binding: Binding, cpus, mem_nodes, mechanism: str) -> None:
    """The one check that a binding took, whoever made it (syscalls here, numactl in
    ``perfsuite.execute.bound``): BindingError naming what was asked and what is in force."""
    if cpus is not None and parse_cpulist(binding.cpus_allowed) != sorted(set(cpus)):
        raise BindingError(
            f"{mechanism}: asked for CPUs {format_cpulist(cpus)}, the process runs on "
            f"{binding.cpus_allowed}"
        )
    if mem_nodes is not None and (
        binding.mempolicy != "bind"
        or parse_cpulist(binding.mempolicy_nodes or "") != sorted(mem_nodes)
    ):
        raise BindingError(
            f"{mechanism}: asked for memory bound to node(s) {format_cpulist(mem_nodes)}, the "
            f"process has {binding.mempolicy} {binding.mempolicy_nodes}"
        )
