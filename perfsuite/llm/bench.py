"""llama-bench-shaped measurements of a DecoderSession, the memory-bandwidth roofline of
decode, and the agreement of a quantized variant's logits with fp32."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfsuite.llm.variants import open_session, prepare
from perfsuite.records import DecodeRecord, decode_test

TG_PROMPT = 16  # the short prompt a tg test decodes after (its prefill is part of TTFT)


def _prompt(n: int, vocab: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, vocab, size=n, dtype=np.int64)


def run_test(
    session,
    test: str,
    *,
    repetitions: int | None = None,
    min_time: float = 1.0,
    seed: int = 0,
) -> tuple[DecodeRecord, list[float]]:
    """Run ``pp<N>`` or ``tg<N>``; without ``repetitions``, repeat until ``min_time`` s
    (at least once for tg, three times for pp). Returns the record (``ttft_s``: tg's prefill
    of the short prompt + the first step; ``tpot_s``: tg's median step; no roofline yet) and
    its samples: pp one per prompt, tg one per decode step."""
    kind, n = decode_test(test)
    spec = session.spec
    if kind == "pp":
        session.check_fits(n, 0)
        prompt = _prompt(n, spec.vocab, seed)
        session.prefill(prompt[:1])  # warm-up: first-run allocations are not the steady state
        samples: list[float] = []
        started = time.perf_counter()
        while _more(len(samples), repetitions, started, min_time, least=3):
            t0 = time.perf_counter()
            session.prefill(prompt)
            samples.append(time.perf_counter() - t0)
        median = float(np.median(samples))
        return _record(session, test, n, n / median), samples
    session.check_fits(TG_PROMPT, n)
    prompt = _prompt(TG_PROMPT, spec.vocab, seed)
    session.prefill(prompt)  # warm-up
    session.step(int(prompt[-1]))
    steps: list[float] = []
    ttfts: list[float] = []
    started = time.perf_counter()
    while _more(len(ttfts), repetitions, started, min_time, least=1):
        t0 = time.perf_counter()
        logits = session.prefill(prompt)
        token = int(np.argmax(logits))  # greedy: what a generator would feed back
        first = time.perf_counter()
        logits = session.step(token)
        ttfts.append(time.perf_counter() - t0)
        steps.append(time.perf_counter() - first)
        for _ in range(n - 1):
            t0 = time.perf_counter()
            logits = session.step(int(np.argmax(logits)))
            steps.append(time.perf_counter() - t0)
    tpot = float(np.median(steps))
    return _record(session, test, n, 1.0 / tpot, float(np.median(ttfts)), tpot), steps


def _record(session, test: str, n: int, tokens_per_s: float, ttft_s=None, tpot_s=None):
    return DecodeRecord(
        test=test, tokens=n, tokens_per_s=tokens_per_s, ttft_s=ttft_s, tpot_s=tpot_s,
        weight_bytes_per_token=session.variant.weight_bytes_per_token,
    )  # fmt: skip


def _more(done: int, repetitions: int | None, started: float, min_time: float, least: int):
    if repetitions is not None:
        return done < repetitions
    return done < least or time.perf_counter() - started < min_time


@dataclass(frozen=True)
class Roofline:
    """Decode streams every weight once per token: bandwidth / bytes bounds tokens/s."""

    weight_bytes_per_token: int
    triad_gbs: float
    l3_bytes: int
    ceiling_tokens_per_s: float
    cache_resident: bool  # the weights fit in L3: the DRAM ceiling does not bind

    def fraction(self, tokens_per_s: float) -> float:
        return tokens_per_s / self.ceiling_tokens_per_s


def roofline(weight_bytes_per_token: int, triad_gbs: float, l3_bytes: int) -> Roofline:
    if weight_bytes_per_token <= 0 or triad_gbs <= 0:
        raise ValueError(
            f"roofline needs positive bytes and bandwidth, got {weight_bytes_per_token} B "
            f"and {triad_gbs} GB/s"
        )
    return Roofline(
        weight_bytes_per_token=weight_bytes_per_token,
        triad_gbs=triad_gbs,
        l3_bytes=l3_bytes,
        ceiling_tokens_per_s=triad_gbs * 1e9 / weight_bytes_per_token,
        cache_resident=weight_bytes_per_token <= l3_bytes,
    )


# (min mean cosine, min top-1 agreement). Measured on llm_tiny, 64 tokens, both frameworks:
# int8_wo cos 0.9999-1.0 / top-1 0.98-1.0; int4 cos 0.991-0.994 / top-1 0.91-0.95.
THRESHOLDS = {"fp32": (0.9999, 0.99), "int8_wo": (0.99, 0.9)}
INT4_THRESHOLD = (0.98, 0.8)


@dataclass(frozen=True)
class LogitsAgreement:
    model: str
    precision: str
    framework: str
    tokens: int
    mean_cosine: float
    top1_agreement: float
    min_cosine: float
    min_top1: float

    @property
    def passed(self) -> bool:
        return self.mean_cosine >= self.min_cosine and self.top1_agreement >= self.min_top1


def teacher_forced_logits(session, tokens: np.ndarray) -> np.ndarray:
    """Logits [len(tokens), vocab]: prefill the first token, then step through the rest."""
    rows = [session.prefill(tokens[:1])]
    rows += [session.step(int(t)) for t in tokens[1:]]
    return np.stack(rows)


def compare_logits(reference: np.ndarray, candidate: np.ndarray) -> tuple[float, float]:
    """(mean cosine similarity, top-1 agreement) of two [positions, vocab] arrays."""
    ref, cand = reference.astype(np.float64), candidate.astype(np.float64)
    norms = np.linalg.norm(ref, axis=1) * np.linalg.norm(cand, axis=1)
    cosine = np.sum(ref * cand, axis=1) / np.maximum(norms, 1e-30)
    top1 = np.argmax(ref, axis=1) == np.argmax(cand, axis=1)
    return float(cosine.mean()), float(top1.mean())


def accuracy(
    model: str, precision: str, framework: str, cache_dir: Path, tokens: int = 64, threads: int = 1
) -> LogitsAgreement:
    """Logits of ``precision`` vs fp32 (same framework) over a fixed teacher-forced sequence."""
    reference = prepare(model, "fp32", framework, cache_dir)
    candidate = prepare(model, precision, framework, cache_dir)
    sequence = _prompt(tokens, reference.spec.vocab, seed=1234)
    logits = []
    for variant in (reference, candidate):
        session = open_session(variant, threads)
        try:
            logits.append(teacher_forced_logits(session, sequence))
        finally:
            session.close()
    return agreement_of(model, precision, framework, *logits)


def agreement_of(
    model: str, precision: str, framework: str, reference: np.ndarray, candidate: np.ndarray
) -> LogitsAgreement:
    cosine, top1 = compare_logits(reference, candidate)
    min_cosine, min_top1 = THRESHOLDS.get(precision, INT4_THRESHOLD)
    return LogitsAgreement(
        model, precision, framework, len(reference), cosine, top1, min_cosine, min_top1
    )
