"""Terminal report sections for benchmark runs."""

from __future__ import annotations

from collections.abc import Callable


def inference_table(
    write: Callable[[str], None], points: dict, gates: dict, variants: dict
) -> None:
    """The article's table: framework | precision | threads | img/s | INT8/FP32 | accuracy,
    then the diagnosis of every INT8 variant that ran slower than its FP32 model.

    points: (framework, precision, threads) -> items/s; gates: same key -> AccuracyResult;
    variants: (framework, precision) -> path of the model file that ran.
    """
    from perfsuite.diagnose import diagnose
    from perfsuite.kernels import cpu_features

    write(f"{'framework':<12} {'precision':<15} {'thr':>3} {'img/s':>8} {'INT8/FP32':>9}  accuracy")
    slow = []
    for (fw, prec, t), ips in sorted(points.items()):
        fp32 = points.get((fw, "fp32", t))
        ratio = f"{ips / fp32:.2f}x" if fp32 and prec != "fp32" else ""
        gate = str(gates[(fw, prec, t)]) if (fw, prec, t) in gates else ""
        write(f"{fw:<12} {prec:<15} {t:>3} {ips:>8.2f} {ratio:>9}  {gate}")
        if fp32 and prec != "fp32" and ips < fp32:
            slow.append((fw, prec, t))
    flags = cpu_features()
    for fw, prec, t in slow:
        reasons = diagnose(
            variants[(fw, prec)],
            flags,
            reduce_range=prec.endswith("_rr"),
            preprocessed=prec.startswith("int8_static"),
        )
        found = "; ".join(reasons) if reasons else "no known cause found in the model"
        write(f"INT8 slower than FP32: {fw} {prec} t{t}: {found}")
