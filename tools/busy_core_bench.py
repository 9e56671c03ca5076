"""How the threaded kernels degrade when another process takes a core: the 2-thread GEMM
rate with one busy competitor (a spinning process) as a fraction of the quiet rate, quiet and
busy windows alternating in the same process, in the same minute.

    python tools/busy_core_bench.py [--n 256 1024] [--rounds 3] [--seconds 1.5]

Run it with OMP_WAIT_POLICY / GOMP_SPINCOUNT set in the environment to compare wait
policies (libgomp reads them when it loads)."""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time

import numpy as np

SPIN = "import time\nend = time.time() + 600\nwhile time.time() < end: pass\n"


def pin(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})


def rate(n: int, threads: int, seconds: float) -> float:
    from perfsuite import kernels

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), np.float32)
    kernels.gemm_f32(a, b, out, threads=threads)
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        kernels.gemm_f32(a, b, out, threads=threads)
        times.append(time.perf_counter() - t0)
    return 2 * n**3 / float(np.median(times)) / 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--competitors", type=int, default=1, help="spinning processes (default: 1)")
    ap.add_argument("--pin", type=int, default=None, help="pin the competitors to this CPU")
    args = ap.parse_args()
    out = {"env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}}
    for n in args.n:
        quiet, busy = [], []
        for _ in range(args.rounds):
            quiet.append(rate(n, 2, args.seconds))
            spinners = [
                subprocess.Popen(
                    [sys.executable, "-c", SPIN],
                    preexec_fn=None if args.pin is None else functools.partial(pin, args.pin),
                )
                for _ in range(args.competitors)
            ]
            time.sleep(0.3)
            try:
                busy.append(rate(n, 2, args.seconds))
            finally:
                for s in spinners:
                    s.kill()
                    s.wait()
        q, b = float(np.median(quiet)), float(np.median(busy))
        out[f"n{n}"] = {
            "quiet_gflops": [round(x, 1) for x in quiet],
            "busy_gflops": [round(x, 1) for x in busy],
            "busy_over_quiet": round(b / q, 3),
        }
        print(f"n={n}: quiet {q:.1f} GFLOP/s, {args.competitors} busy competitor(s) {b:.1f}: "
              f"{b / q:.2f} of quiet",
              flush=True)  # fmt: skip
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
