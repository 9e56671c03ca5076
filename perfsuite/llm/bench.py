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
    # ids 0-2 are the folders' special tokens; ONNX Runtime GenAI masks the pad id (eos, 2)
    return np.random.default_rng(seed).integers(3, vocab, size=n, dtype=np.int64)


def run_test(
    session,
    test: str,
    *,
    repetitions: int | None = None,
    min_time: float = 1.0,
    seed: int = 0,
) -> tuple[DecodeRecord, list[float]]:
    """Run ``pp<N>`` or ``tg<N>``; without ``repetitions``, repeat until ``min_time`` s
    (at least once for tg, three times for pp). pp times the prompt to its first token;
    tg generates N tokens after a short prompt (``ttft_s``: that prompt to the first token;
    ``tpot_s``: the median later step). Returns the record (no roofline yet) and its
    samples: pp one per prompt, tg one per decode step."""
    kind, n = decode_test(test)
    spec = session.spec
    length = n if kind == "pp" else TG_PROMPT
    session.check_fits(length, 1 if kind == "pp" else n)
    # warm-up: first-run allocations are not the steady state
    session.timed_generate(_prompt(length, spec.vocab, seed + 10**6), 2 if kind == "tg" else 1)
    samples: list[float] = []
    rates: list[float] = []
    ttfts: list[float] = []
    started = time.perf_counter()
    while _more(len(rates), repetitions, started, min_time, least=3 if kind == "pp" else 1):
        # a fresh prompt each time: a runtime's prefix cache (OpenVINO GenAI's LLMPipeline
        # keeps one) must not serve a repeated prompt from memory
        prompt = _prompt(length, spec.vocab, seed + len(rates))
        if kind == "pp":
            ttft, _, _ = session.timed_generate(prompt, 1)
            samples.append(ttft)
            rates.append(n / ttft)
            continue
        ttft, steps, _ = session.timed_generate(prompt, n)
        ttfts.append(ttft)
        samples += steps
        rates.append(len(steps) / sum(steps))
    if kind == "pp":
        return _record(session, test, n, n / float(np.median(samples)), rates), samples
    tpot = float(np.median(samples))
    return _record(session, test, n, 1.0 / tpot, rates, float(np.median(ttfts)), tpot), samples


def _record(session, test: str, n: int, tokens_per_s: float, rates, ttft_s=None, tpot_s=None):
    return DecodeRecord(
        test=test, tokens=n, tokens_per_s=tokens_per_s, ttft_s=ttft_s, tpot_s=tpot_s,
        weight_bytes_per_token=session.variant.weight_bytes_per_token,
        repetitions=len(rates), tokens_per_s_mean=float(np.mean(rates)),
        tokens_per_s_sd=float(np.std(rates, ddof=1)) if len(rates) > 1 else None,
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
    mean_cosine: float | None  # None: the runtime exposes no logits, top-1 only
    top1_agreement: float
    min_cosine: float
    min_top1: float

    @property
    def passed(self) -> bool:
        cosine_ok = self.mean_cosine is None or self.mean_cosine >= self.min_cosine
        return cosine_ok and self.top1_agreement >= self.min_top1


def teacher_forced_logits(session, tokens: np.ndarray) -> np.ndarray:
    """Logits [len(tokens), vocab]: prefill the first token, then step through the rest."""
    rows = [session.prefill(tokens[:1])]
    rows += [session.step(int(t)) for t in tokens[1:]]
    return np.stack(rows)


def teacher_forced_top1(session, tokens: np.ndarray) -> np.ndarray:
    """The greedy next token after each prefix, for runtimes that expose no logits
    (OpenVINO GenAI's pipelines): one prompt per position."""
    return np.array([session.timed_generate(tokens[: i + 1], 1)[2][0] for i in range(len(tokens))])


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
    outputs = []
    for variant in (reference, candidate):
        with open_session(variant, threads) as session:
            if hasattr(session, "prefill"):
                outputs.append(teacher_forced_logits(session, sequence))
            else:
                outputs.append(teacher_forced_top1(session, sequence))
    if outputs[0].ndim == 1:
        min_cosine, min_top1 = THRESHOLDS.get(precision, INT4_THRESHOLD)
        top1 = float(np.mean(outputs[0] == outputs[1]))
        return LogitsAgreement(model, precision, framework, tokens, None, top1, min_cosine,
                               min_top1)  # fmt: skip
    return agreement_of(model, precision, framework, *outputs)


def agreement_of(
    model: str, precision: str, framework: str, reference: np.ndarray, candidate: np.ndarray
) -> LogitsAgreement:
    cosine, top1 = compare_logits(reference, candidate)
    min_cosine, min_top1 = THRESHOLDS.get(precision, INT4_THRESHOLD)
    return LogitsAgreement(
        model, precision, framework, len(reference), cosine, top1, min_cosine, min_top1
    )
