"""Contamination trials: does perfsuite notice a busy competitor that starts inside a point's
measurement window, and does the re-measure recover the quiet figure once it stops?

Each trial measures one point three times with perfsuite's own code (``run_point``):
1. quiet: nothing else running, just before and just after the others; their mean is the
   reference figure (two quiet runs a minute apart differ by a few % on this VM);
2. transient: a CPU-bound competitor process starts 20% into the first measurement window and
   is stopped at 80% of it; expected: that window flagged and discarded, the retry clean and
   within ``--tolerance`` of the quiet figure (also reported: inside the two quiet runs' own
   range widened by the tolerance, since quiet runs seconds apart differ too);
3. persistent (``--persistent``): the competitor runs from the first window to the end of the
   point; expected: the record flagged contaminated (the flag the table, report and gate read).

Only the timing of the competitor hooks into perfsuite (the start of the first window); the
detection is the production Sampler reading /proc/stat.

    python tools/contamination_trial.py --trials 10 --threads 2 --persistent
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading

from perfsuite import records
from perfsuite.execute import interference
from perfsuite.execute.runner import run_point
from perfsuite.sweep.report import contaminated

BUSY = "while True: pass"


class Competitor:
    """A CPU-bound process started and stopped on timers (seconds after ``arm()``)."""

    def __init__(self, start_after: float, stop_after: float | None):
        self.start_after, self.stop_after = start_after, stop_after
        self.proc: subprocess.Popen | None = None
        self.timers: list[threading.Timer] = []

    def arm(self):
        self.timers.append(threading.Timer(self.start_after, self._start))
        if self.stop_after is not None:
            self.timers.append(threading.Timer(self.stop_after, self.stop))
        for t in self.timers:
            t.start()

    def _start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", BUSY])

    def stop(self):
        for t in self.timers:
            t.cancel()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def measured(point: dict, protocol: dict, competitor: Competitor | None) -> dict:
    """run_point with ``competitor`` armed when the point's first measurement window opens."""
    original = interference.Sampler
    windows = []

    class Hooked(original):
        def __enter__(self):
            if not windows and competitor is not None:
                competitor.arm()
            windows.append(self)
            return super().__enter__()

    interference.Sampler = Hooked
    try:
        return run_point(point, protocol)
    finally:
        interference.Sampler = original
        if competitor is not None:
            competitor.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--framework", default="onnxruntime")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--window", type=float, default=2.0, help="min_time of a window, seconds")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--persistent", action="store_true")
    args = ap.parse_args()
    fields = dict(model=args.model, framework=args.framework, precision=args.precision,
                  threads=args.threads, numa_node=None, batch=1, mode="throughput")  # fmt: skip
    point = {"id": records.point_id(fields), **fields}
    protocol = {"min_time": args.window, "min_samples": 15, "warmup_time": 1.0,
                "warmup_calls": 3, "counters": False, "sessions": 1}  # fmt: skip
    w = args.window
    flagged = recovered = in_band = persistent_flagged = 0
    ratios, quiet_spread = [], []
    print(f"{point['id']}, window {w:.1f} s, tolerance {args.tolerance:.0%}")
    measured(point, protocol, None)  # the process's first point: imports, model files, caches
    for trial in range(1, args.trials + 1):
        quiet = measured(point, protocol, None)
        transient = measured(point, protocol, Competitor(0.2 * w, 0.8 * w))
        inter = transient["interference"]
        first = (inter["discarded"] or inter["sessions"])[0]
        kept = inter["sessions"][-1]
        ok_flag = bool(inter["discarded"]) and first["contaminated"]
        after = measured(point, protocol, None)
        qb, qa = quiet["stats"]["throughput_ips"], after["stats"]["throughput_ips"]
        q = (qb + qa) / 2
        t = transient["stats"]["throughput_ips"]
        ok_back = not kept["contaminated"] and abs(t / q - 1) <= args.tolerance
        # the quiet runs' own spread, widened by the tolerance: how far two quiet measurements
        # a few seconds apart already disagree on this host
        lo, hi = min(qb, qa) * (1 - args.tolerance), max(qb, qa) * (1 + args.tolerance)
        in_band += not kept["contaminated"] and lo <= t <= hi
        quiet_spread.append(abs(qb / qa - 1))
        flagged += ok_flag
        recovered += ok_back
        ratios.append(t / q)
        line = (
            f"trial {trial:2d}: quiet {q:7.2f} it/s (before/after {qb:.2f}/{qa:.2f}, foreign "
            f"{quiet['interference']['sessions'][-1]['foreign_share']:.0%}) | transient: first "
            f"window foreign {first['foreign_share']:.0%} flagged={first['contaminated']}, "
            f"retries {inter['retries']}, kept {t:7.2f} it/s ({t / q - 1:+.1%}) "
            f"foreign {kept['foreign_share']:.0%}"
        )
        if args.persistent:
            comp = Competitor(0.2 * w, None)
            rec = measured(point, protocol, comp)
            pi = rec["interference"]
            persistent_flagged += contaminated(rec)
            line += (
                f" | persistent: flagged={contaminated(rec)} after {pi['retries']} retries, "
                f"{rec['stats']['throughput_ips']:.2f} it/s"
            )
        print(line, flush=True)
    n = args.trials
    print(f"first window flagged: {flagged}/{n}; retry clean and within "
          f"{args.tolerance:.0%} of quiet: {recovered}/{n} (kept/quiet median "
          f"{statistics.median(ratios):.3f}, {min(ratios):.3f}-{max(ratios):.3f})")  # fmt: skip
    spread = max(quiet_spread)
    print(f"retry clean and inside the two quiet runs' range +-{args.tolerance:.0%}: "
          f"{in_band}/{n}; quiet before vs after differed by up to {spread:.1%}")  # fmt: skip
    if args.persistent:
        print(f"persistent competitor: record flagged contaminated {persistent_flagged}/{n}")
    ok = flagged == n and recovered == n and (not args.persistent or persistent_flagged == n)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
