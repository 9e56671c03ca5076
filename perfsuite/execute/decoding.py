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
from perfsuite.llm import serving
from perfsuite.prepare import cache
from perfsuite.records import Point

TRIAD_FLOATS = 1 << 23  # 32 MiB per array, 96 MiB moved: past any L3 of the supported hosts
TRIAD_REPEATS = 5


def measure(
    point: Point, protocol: records.MeasureProtocol, binding, cpus, t_setup: float
) -> records.Measurement:
    if protocol.llm_folder and point.model not in llm.FOLDERS:  # a fresh worker's first
        llm.declare_folder(point.model, protocol.llm_folder)
    if point.mode == records.LLM_SERVER:
        return measure_serving(point, protocol, binding, cpus, t_setup)
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


def measure_serving(
    point: Point, protocol: records.MeasureProtocol, binding, cpus, t_setup: float
) -> records.Measurement:
    """An ``llm_server`` point: the continuous-batching rate search (``llm.serving``), then
    static batching at the rate it found, on the same model and precision."""
    s = protocol.llm_serving or records.LlmServingSettings()
    where = cache.cache_dir()
    variant = llm.prepare(point.model, point.precision, "openvino-genai", where)
    spec = variant.spec
    longest = s.input_tokens[1] + s.output_tokens[1]
    if longest > spec.max_context:
        raise llm.ContextTooLong(
            f"llm_input_tokens up to {s.input_tokens[1]} + llm_output_tokens up to "
            f"{s.output_tokens[1]} exceed {point.model}'s context of {spec.max_context}"
        )
    static, why = None, llm.genai_missing().get("onnxruntime-genai")
    workload = serving.Workload(requests=s.requests, duration_s=s.duration_s,
                                input_tokens=s.input_tokens,
                                output_tokens=s.output_tokens, burstiness=s.burstiness)  # fmt: skip
    bounds = serving.Bounds(s.ttft_bound_ms / 1e3, s.tpot_bound_ms / 1e3)
    engine = serving.ContinuousBatching(variant, point.threads)
    try:
        if why is None:
            try:
                other = llm.prepare(point.model, point.precision, "onnxruntime-genai", where)
                static = serving.StaticBatching(other, point.threads, s.static_batch)
            except (llm.ExportFailed, llm.Unsupported) as exc:
                why = str(exc).splitlines()[0]
        setup_s = time.perf_counter() - t_setup
        two = serving.Workload(requests=2, duration_s=0.0, input_tokens=s.input_tokens,
                               output_tokens=s.output_tokens)  # fmt: skip
        warm = serving.schedule(two, 1e3, spec.vocab)
        for server in (engine, static):
            if server is not None:
                server.serve(warm)  # warm-up, discarded: first-call allocations
        # start where one request at a time would keep the engine busy
        alone = [engine.serve([r])[0] for r in warm]
        busy = float(np.mean([x.token_s[-1] - x.request.arrival_s for x in alone]))
        before = calibration.probe()
        with Sampler() as sampler:
            result = serving.serve_point(
                engine, static, spec.vocab, workload, bounds, start_rps=1.0 / busy,
                precision=s.search_precision, max_steps=s.search_steps, static_why_not=why,
            )  # fmt: skip
        speed = records.SpeedAround(before=before, after=calibration.probe())
        settings = {"framework": "openvino-genai", "serving": engine.settings,
                    "static": static.settings if static else None}  # fmt: skip
    finally:
        engine.close()
        if static is not None:
            static.close()
    if result.best is None:
        low = min(result.runs, key=lambda r: r.rate_rps)
        raise RuntimeError(
            f"no request rate met p99 TTFT <= {s.ttft_bound_ms:g} ms and TPOT <= "
            f"{s.tpot_bound_ms:g} ms: at {low.rate_rps:.3g} requests/s p99 TTFT "
            f"{low.ttft_s.p99 * 1e3:.0f} ms, TPOT {low.tpot_s.p99 * 1e3:.1f} ms (llm_slo_ms)"
        )
    best = result.runs[result.best]
    samples = list(best.e2e_each_s)
    decode = records.DecodeRecord(
        test=point.mode, tokens=s.output_tokens[1], tokens_per_s=best.output_tokens_per_s,
        ttft_s=best.ttft_s.p99 or None, tpot_s=best.tpot_s.p99 or None,
        weight_bytes_per_token=variant.weight_bytes_per_token,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, serving=result,
    )  # fmt: skip
    return one_window(
        samples, 1, sampler.result, speed,
        protocol=records.RunProtocol(window_s=best.duration_s, items=best.requests),
        settings=settings, binding=binding, setup_s=setup_s,
        model=records.ModelInfo(
            params=variant.params, flops_per_item=2 * variant.params,
            weight_bytes=variant.weight_bytes_per_token, variant_file=variant.path.name,
            variant_mb=variant.file_bytes / 2**20,
        ),
        headline=records.Headline(
            name="goodput requests/s", value=best.goodput_rps, unit="requests/s",
            higher_is_better=True, gated=True, valid=True,
        ),
        decode=decode,
    )  # fmt: skip
