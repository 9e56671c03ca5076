"""The machine: topology, fingerprint, microarchitecture, NUMA binding and placement (pure
readers of sysfs/procfs under a root)."""
