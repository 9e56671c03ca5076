"""Running a point: placement, the timing loop, counters, and the executors (in-process,
isolated worker, numactl-bound)."""
