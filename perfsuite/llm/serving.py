"""An LLM served as teams serve it: requests arriving at random with lengths drawn from a
declared range, continuous batching (OpenVINO GenAI's ``ContinuousBatchingPipeline``: paged
KV cache, a scheduler that admits requests between steps) against static batching (ONNX
Runtime GenAI, a batch formed from the queue and run to its longest request; its paged
attention is CUDA-only), per-request TTFT/TPOT/inter-token/end-to-end latency, goodput under
TTFT and TPOT bounds (``vllm bench serve --goodput``), and the highest rate whose p99s meet
them.

The driver is our own, not LoadGen's token-latency mode: LoadGen issues one query per
sample to a SUT callback and judges its own p99s, while continuous batching needs the
engine's step loop to own the thread that admits requests, and static batching needs the
queue it batches from. Arrivals follow LoadGen's own law: Poisson, or gamma with a shape
below 1 for bursts (vllm's ``--burstiness``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from perfsuite.llm.genai import greedy_config, ort_genai_model
from perfsuite.records import LlmServing, LlmServingRun, Percentiles

FIRST_ID = 3  # prompts avoid the special tokens (ids 0-2: unk, bos, eos = pad)
PAD_ID = 2
STALLED_STEPS = 1000  # engine steps without a token before a run is called stuck


@dataclass(frozen=True)
class Workload:
    requests: int = 24  # per rate, at least: more where duration_s needs them
    duration_s: float = 3.0  # arrivals span at least this long, so the rate holds
    input_tokens: tuple[int, int] = (32, 96)  # uniform, inclusive
    output_tokens: tuple[int, int] = (16, 48)
    burstiness: float = 1.0  # gamma shape of the gaps: 1 = Poisson, < 1 burstier
    seed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Request:
    arrival_s: float
    prompt: np.ndarray
    output_tokens: int


@dataclass
class ServedRequest:
    request: Request
    token_s: list[float] = field(default_factory=list)  # each token's time, run clock

    @property
    def ttft(self) -> float:
        return self.token_s[0] - self.request.arrival_s

    @property
    def tpot(self) -> float:
        n = len(self.token_s)
        return (self.token_s[-1] - self.token_s[0]) / (n - 1) if n > 1 else 0.0


def schedule(workload: Workload, rate: float, vocab: int) -> list[Request]:
    """Arrival times and prompts: gamma gaps of mean 1/rate (shape = burstiness)."""
    if not rate > 0 or not math.isfinite(rate):
        raise ValueError(f"request rate must be positive, got {rate}")
    rng = np.random.default_rng(workload.seed)
    shape = workload.burstiness
    count = max(workload.requests, math.ceil(rate * workload.duration_s))
    gaps = rng.gamma(shape, 1.0 / (rate * shape), count)
    arrivals = np.concatenate([[0.0], np.cumsum(gaps[:-1])])
    lo, hi = workload.input_tokens
    out_lo, out_hi = workload.output_tokens
    return [
        Request(
            float(t),
            rng.integers(FIRST_ID, vocab, int(rng.integers(lo, hi + 1))),
            int(rng.integers(out_lo, out_hi + 1)),
        )  # fmt: skip
        for t in arrivals
    ]


def _percentiles(values) -> Percentiles:
    p50, p90, p99 = (
        np.percentile(np.asarray(values, float), [50, 90, 99]) if len(values) else (0,) * 3
    )
    return Percentiles(p50=float(p50), p90=float(p90), p99=float(p99))


def summarize(
    served: list[ServedRequest], rate: float, batching: str, ttft_bound: float, tpot_bound: float,
    max_batch: int | None = None,
) -> LlmServingRun:  # fmt: skip
    done = [s for s in served if s.token_s]
    end = max((s.token_s[-1] for s in done), default=0.0)
    start = min(s.request.arrival_s for s in served)
    duration = max(end - start, 1e-9)
    good = [s for s in done if s.ttft <= ttft_bound and s.tpot <= tpot_bound]
    ttft = _percentiles([s.ttft for s in done])
    tpot = _percentiles([s.tpot for s in done if len(s.token_s) > 1])
    return LlmServingRun(
        batching=batching, rate_rps=rate, requests=len(served), completed=len(done),
        duration_s=duration, ttft_s=ttft, tpot_s=tpot,
        itl_s=_percentiles([d for s in done for d in np.diff(s.token_s)]),
        e2e_s=_percentiles([s.token_s[-1] - s.request.arrival_s for s in done]),
        output_tokens_per_s=sum(len(s.token_s) for s in done) / duration,
        goodput_rps=len(good) / duration,
        meets_slo=len(done) == len(served) and ttft.p99 <= ttft_bound and tpot.p99 <= tpot_bound,
        max_batch=max_batch,
        e2e_each_s=[s.token_s[-1] - s.request.arrival_s for s in done],
    )  # fmt: skip


def _wait_until(clock0: float, t: float) -> None:
    delay = clock0 + t - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


class ContinuousBatching:
    """OpenVINO GenAI's ContinuousBatchingPipeline, driven by its own step loop: requests
    due by the clock are added between steps, each handle read after every step."""

    batching = "continuous"

    def __init__(self, variant, threads: int, cache_gb: float = 1.0) -> None:
        import openvino as ov  # heavy optional dependency: only this framework
        import openvino_genai as genai  # heavy optional dependency: only this framework

        self._ov, self._genai = ov, genai
        scheduler = genai.SchedulerConfig()
        scheduler.cache_size = max(1, int(cache_gb))  # GB of paged KV cache
        config = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32"}
        self._pipe = genai.ContinuousBatchingPipeline(str(variant.path), scheduler, "CPU", config)
        self.settings = {"pipeline": "ContinuousBatchingPipeline", "cache_size_gb":
                         scheduler.cache_size, "max_num_seqs": scheduler.max_num_seqs,
                         "max_num_batched_tokens": scheduler.max_num_batched_tokens,
                         "dynamic_split_fuse": scheduler.dynamic_split_fuse, **config}  # fmt: skip

    def serve(self, requests: list[Request]) -> list[ServedRequest]:
        pipe, ov = self._pipe, self._ov
        served = [ServedRequest(r) for r in requests]
        handles: dict[int, object] = {}
        nxt, stalled = 0, 0
        clock0 = time.perf_counter()
        while nxt < len(requests) or handles:
            now = time.perf_counter() - clock0
            while nxt < len(requests) and requests[nxt].arrival_s <= now:
                ids = ov.Tensor(np.asarray(requests[nxt].prompt, np.int64).reshape(1, -1))
                handles[nxt] = pipe.add_request(
                    nxt, ids, greedy_config(self._genai, requests[nxt].output_tokens)
                )
                nxt += 1
            if not handles:
                _wait_until(clock0, requests[nxt].arrival_s)
                continue
            pipe.step()
            stamp = time.perf_counter() - clock0
            progressed = False
            for i, handle in list(handles.items()):
                if handle.can_read():
                    for output in handle.read().values():
                        served[i].token_s += [stamp] * len(output.generated_ids)
                        progressed = progressed or len(output.generated_ids) > 0
                if handle.get_status() != self._genai.GenerationStatus.RUNNING and not (
                    handle.can_read()
                ):
                    del handles[i]
            # a pipeline that stops producing tokens must be an error, never a hang
            stalled = 0 if progressed else stalled + 1
            if stalled > STALLED_STEPS:
                raise RuntimeError(
                    f"ContinuousBatchingPipeline produced no token in {STALLED_STEPS} steps "
                    f"with {len(handles)} requests unfinished"
                )
        return served

    def close(self) -> None:
        self._pipe = None


class StaticBatching:
    """ONNX Runtime GenAI: when idle, take up to ``batch`` queued requests (left-padded),
    generate to the longest; the others wait for the whole batch."""

    batching = "static"

    def __init__(self, variant, threads: int, batch: int) -> None:
        import onnxruntime_genai as og  # heavy optional dependency: only this framework

        self._og, self.batch = og, batch
        self._model, options = ort_genai_model(og, variant.path, threads)
        self.settings = {"runtime": "onnxruntime-genai", "batch": batch, **options}

    def serve(self, requests: list[Request]) -> list[ServedRequest]:
        served = [ServedRequest(r) for r in requests]
        nxt = 0
        clock0 = time.perf_counter()
        while nxt < len(requests):
            now = time.perf_counter() - clock0
            if requests[nxt].arrival_s > now:
                _wait_until(clock0, requests[nxt].arrival_s)
                continue
            due = sum(1 for r in requests[nxt:] if r.arrival_s <= now)
            group = list(range(nxt, nxt + min(due, self.batch)))
            nxt += len(group)
            width = max(len(requests[i].prompt) for i in group)
            ids = np.full((len(group), width), PAD_ID, np.int32)
            for row, i in enumerate(group):  # left padding: every row ends at the same column
                ids[row, width - len(requests[i].prompt) :] = requests[i].prompt
            steps = max(requests[i].output_tokens for i in group)
            params = self._og.GeneratorParams(self._model)
            params.set_search_options(max_length=width + steps, min_length=width + steps,
                                      do_sample=False, batch_size=len(group))  # fmt: skip
            generator = self._og.Generator(self._model, params)
            generator.append_tokens(ids)
            for step in range(steps):
                generator.generate_next_token()
                stamp = time.perf_counter() - clock0
                for i in group:
                    if step < requests[i].output_tokens:
                        served[i].token_s.append(stamp)
        return served

    def close(self) -> None:
        self._model = None


@dataclass(frozen=True)
class Bounds:
    ttft_s: float
    tpot_s: float


def grid_rate(k: int, precision: float) -> float:
    """Rates lie on one grid anchored at 1 request/s, as the LoadGen server search's do."""
    return (1.0 + precision) ** k


def search(
    run_at: Callable[[float], LlmServingRun],
    start_rps: float,
    precision: float = 0.25,
    max_steps: int = 6,
) -> tuple[list[LlmServingRun], int | None, bool]:
    """The highest grid rate whose run meets the bounds: up 1, 2, 4 grid steps from a
    passing rate, halving from a failing one with none passing yet, then bisecting.
    Returns (runs in order, index of the best, converged)."""
    k = round(math.log(start_rps) / math.log(1 + precision))
    runs: list[LlmServingRun] = []
    verdict: dict[int, int] = {}  # grid index -> index in runs
    low_ok, high_bad, up = None, None, 1
    halve = max(1, round(math.log(2) / math.log(1 + precision)))
    while len(runs) < max_steps:
        if k in verdict:
            break
        run = run_at(grid_rate(k, precision))
        verdict[k] = len(runs)
        runs.append(run)
        if run.meets_slo:
            low_ok = k if low_ok is None else max(low_ok, k)
        else:
            high_bad = k if high_bad is None else min(high_bad, k)
        if high_bad is None:
            k, up = k + up, up * 2
        elif low_ok is None:
            k -= halve
        elif high_bad - low_ok > 1:
            k = (low_ok + high_bad) // 2
        else:
            break
    converged = low_ok is not None and high_bad is not None and high_bad - low_ok <= 1
    return runs, (verdict[low_ok] if low_ok is not None else None), converged


def serve_point(
    engine, static, vocab: int, workload: Workload, bounds: Bounds, start_rps: float,
    precision: float = 0.25, max_steps: int = 6, static_why_not: str | None = None,
) -> LlmServing:  # fmt: skip
    """The rate search on ``engine``, then ``static`` (if any) at the rate it found."""

    def run_at(rate: float, on=engine) -> LlmServingRun:
        served = on.serve(schedule(workload, rate, vocab))
        return summarize(served, rate, on.batching, bounds.ttft_s, bounds.tpot_s,
                         getattr(on, "batch", None))  # fmt: skip

    runs, best, converged = search(run_at, start_rps, precision, max_steps)
    at = runs[best].rate_rps if best is not None else None
    return LlmServing(
        workload=workload.as_dict(), ttft_bound_s=bounds.ttft_s, tpot_bound_s=bounds.tpot_s,
        runs=runs, best=best, converged=converged,
        static=run_at(at, static) if static is not None and at is not None else None,
        static_why_not=static_why_not,
    )  # fmt: skip
