"""Does normalising by a calibration probe reduce between-run spread (issue 12, item 3)?
Ten fresh processes per precision, each: probe (20 ms FMA loop, 5 triads of 24 MiB),
measure ResNet-50 ORT t1 for 1 s with perfsuite's runner, probe again; then the CV of the
raw throughputs against the CV after dividing by each probe.

    python tools/calibration_experiment.py

Zen 4 VM, 2026-12-03: int8_static raw CV 7.25%, /FMA 5.43%, /triad 16.46%
(corr(ips, FMA) 0.74); fp32 raw 2.29%, /FMA 7.45%, /triad 21.76% (corr -0.13).
Zen 3 VM, 2026-12-03: int8_static raw 5.94%, /FMA 5.94%, /triad 9.82% (corr 0.08); fp32
raw 4.54%, /FMA 5.18%, /triad 15.23% (corr -0.30). The probe helps one point once and
hurts or leaves the others, so the gate does not normalise."""

import json
import subprocess
import sys

import numpy as np

SNIP = r"""
import json, time, numpy as np
from perfsuite import kernels
from perfsuite.execute.runner import run_point
def probe():
    n = 1 << 21
    a, b, c = (np.ones(n, np.float32) for _ in range(3))
    bw = np.median(
        [kernels.stream_triad(a, b, c, 3.0, threads=1)["bandwidth_gbs"] for _ in range(5)]
    )
    return kernels.compute_peak(threads=1, seconds=0.02)["gflops"], float(bw)
p = {"model": "resnet50", "framework": "onnxruntime", "precision": "%s", "threads": 1,
     "numa_node": None, "batch": 1, "mode": "latency", "threads_spec": "1", "skip": None,
     "id": "x"}
proto = {"min_time": 1.0, "min_samples": 10, "warmup_time": 0.5, "warmup_calls": 3,
         "counters": False, "sessions": 1}
f0, b0 = probe()
ips = run_point(p, proto)["stats"]["throughput_ips"]
f1, b1 = probe()
print(json.dumps([ips, (f0+f1)/2, (b0+b1)/2, f0, f1]))
"""
for prec in ("int8_static", "fp32"):
    rows = []
    for _ in range(10):
        out = subprocess.run(
            [sys.executable, "-c", SNIP % prec], capture_output=True, text=True
        ).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    a = np.array(rows)

    def cv(x):
        return float(np.std(x, ddof=1) / np.mean(x))

    ips, fma, triad = a[:, 0], a[:, 1], a[:, 2]
    print(
        f"{prec}: raw CV {cv(ips):.2%}, /FMA {cv(ips / fma):.2%}, /triad {cv(ips / triad):.2%}; "
        f"probe CVs FMA {cv(fma):.2%}, triad {cv(triad):.2%}; "
        f"corr(ips, FMA) {np.corrcoef(ips, fma)[0, 1]:.2f}, "
        f"corr(ips, triad) {np.corrcoef(ips, triad)[0, 1]:.2f}"
    )
