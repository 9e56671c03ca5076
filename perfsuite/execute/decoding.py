"""A decode point: one llama-bench test (``pp<N>`` or ``tg<N>``) of an LLM variant
(``perfsuite.llm``), with the memory-bandwidth roofline of its generation speed.

Each generated token streams every weight once, so tg tokens/s cannot pass the STREAM triad
bandwidth divided by the weight bytes per token; the triad is measured here, at the point's
thread count, right after the test (a 1-thread probe undercounts what 2 decode threads
draw). Weights that fit the L3 are not bound by it: the record says ``cache_resident``.
"""

from __future__ import annotations

import resource
import time

import numpy as np

from perfsuite import kernels, llm, records
from perfsuite.execute import calibration
from perfsuite.execute.interference import Sampler
from perfsuite.execute.measure import one_window
from perfsuite.host.topology import read_topology
from perfsuite.prepare import cache
from perfsuite.records import Point

TRIAD_FLOATS = 1 << 23  # 32 MiB per array, 96 MiB moved: past any L3 of the supported hosts
TRIAD_REPEATS = 5


def measure(
    point: Point, protocol: records.MeasureProtocol, binding, cpus, t_setup: float
) -> records.Measurement:
    variant = llm.prepare(point.model, point.precision, point.framework, cache.cache_dir())
    with llm.open_session(variant, point.threads) as session:
        setup_s = time.perf_counter() - t_setup
        before = calibration.probe()
        llm.run_test(session, point.mode, repetitions=1, min_time=0.0)  # warm-up, discarded
        with Sampler() as sampler:
            run, samples = llm.run_test(session, point.mode, min_time=protocol.min_time)
        speed = records.SpeedAround(before=before, after=calibration.probe())
        settings = dict(session.settings)
    # a prompt's tokens share one pass over the weights: only generation has this roofline
    kind, tokens = records.decode_test(point.mode)
    generating = kind == "tg"
    bandwidth = (
        kernels.triad_gbs(TRIAD_FLOATS, point.threads, TRIAD_REPEATS, discard_first=True)
        if generating
        else None
    )
    roof = bandwidth and llm.roofline(
        variant.weight_bytes_per_token, bandwidth, read_topology("/").l3_bytes or 0
    )
    decode = run.model_copy(update={
        "triad_gbs": bandwidth,
        "roofline_tokens_per_s": roof.ceiling_tokens_per_s if roof else None,
        "roofline_fraction": roof.fraction(run.tokens_per_s) if roof else None,
        "cache_resident": roof.cache_resident if roof else None,
        # ru_maxrss is KiB on Linux; in a fresh worker, this point's own peak
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    })  # fmt: skip
    samples = [float(x) for x in samples]
    items = 1 if generating else tokens  # tokens per sample
    return one_window(
        samples,
        items,
        sampler.result,
        speed,
        protocol=records.RunProtocol(window_s=float(np.sum(samples)), items=len(samples) * items),
        settings=settings,
        binding=binding,
        setup_s=setup_s,
        model=records.ModelInfo(
            params=variant.params,
            flops_per_item=2 * variant.params,  # a token: a multiply-add per weight
            weight_bytes=variant.weight_bytes_per_token,
            variant_file=variant.path.name,
            variant_mb=variant.file_bytes / 2**20,
        ),
        headline=records.Headline(
            name=f"{point.mode} tokens/s", value=run.tokens_per_s, unit="tokens/s",
            higher_is_better=True,
        ),
        decode=decode,
    )  # fmt: skip
