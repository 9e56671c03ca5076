"""A small decoder-only transformer (Llama-shaped: RMSNorm, rotary, GQA, SwiGLU) with
deterministic weights made in code, exported to ONNX with a KV cache.

Two attention flavours of one model: ``gqa`` uses ONNX Runtime's ``com.microsoft``
``GroupQueryAttention`` (rotary inside the op), ``plain`` spells attention out in standard
ops (MatMul/Softmax/Concat) for runtimes that do not read contrib ops. Both take the same
weights and give the same logits.

Graph interface (batch 1): inputs ``input_ids`` [1, S] int64, ``seqlens_k`` [1] int32
(total length - 1, as GQA wants), ``total_sequence_length`` [] int32 (gqa only), and per
layer ``past_key_i``/``past_value_i`` [1, kv_heads, P, head_dim]; outputs ``logits``
[1, 1, vocab] of the last position and ``present_key_i``/``present_value_i``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfsuite.onnx_graph import Graph
from perfsuite.records import Unsupported

GRAPH_VERSION = "2"  # bump when the graph or the weights change: part of every cache key
OPSET = 17
ROPE_THETA = 10000.0
RMS_EPS = 1e-5
# Logits of a random model are near-uniform, so top-1 would be noise. The LM head is scaled
# so the logits' standard deviation across the vocabulary is about LOGIT_STD (a temperature),
# and carries a bigram: column j also holds BIGRAM_MARGIN/sqrt(hidden) x the embedding of the
# token a fixed permutation maps to j, so the stream's current token lifts "its" next token
# by up to about BIGRAM_MARGIN standard deviations: a top-1 with a margin, that the layers
# (and quantization error) can still move.
LOGIT_STD = 4.0
BIGRAM_MARGIN = 5.0


class ContextTooLong(ValueError):
    """A prompt plus the tokens to generate does not fit the model's context."""


@dataclass(frozen=True)
class DecoderSpec:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    vocab: int
    max_context: int
    ffn: int
    seed: int = 0
    architecture: str = "llama"  # the Hugging Face folder's (perfsuite.llm.hf_folder)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def key(self) -> str:
        return (
            f"L{self.layers}-h{self.hidden}-H{self.heads}-kv{self.kv_heads}-V{self.vocab}"
            f"-c{self.max_context}-f{self.ffn}-s{self.seed}"
            + ("" if self.architecture == "llama" else f"-{self.architecture}")
        )


MODELS: dict[str, DecoderSpec] = {
    # plain-pytest smoke tests: builds and runs in well under a second
    "llm_tiny": DecoderSpec(
        layers=2, hidden=128, heads=4, kv_heads=2, vocab=1024, max_context=640, ffn=256
    ),
    # the same network as llm_tiny, written as Qwen2 (zero q/k/v biases) for the GenAI tools
    "qwen2_tiny": DecoderSpec(
        layers=2,
        hidden=128,
        heads=4,
        kv_heads=2,
        vocab=1024,
        max_context=640,
        ffn=256,
        architecture="qwen2",
    ),
    # int4 weights streamed per token ~ 123M matmul params / 2 ~ 77 MB incl. scales: past a
    # 32 MiB L3, so tg is memory-bound as on a real LLM
    "llm_small": DecoderSpec(
        layers=8, hidden=1024, heads=16, kv_heads=4, vocab=32000, max_context=640, ffn=2816
    ),
}


def spec_for(model: str) -> DecoderSpec:
    if model not in MODELS:
        raise Unsupported(f"unknown LLM model {model!r}; known: {', '.join(MODELS)}")
    return MODELS[model]


@dataclass(frozen=True)
class Weights:
    embedding: np.ndarray  # [vocab, hidden]
    layers: tuple[dict[str, np.ndarray], ...]  # wq wk wv wo w_gate w_up w_down, norms
    final_norm: np.ndarray
    lm_head: np.ndarray  # [hidden, vocab]

    def matmul_params(self) -> int:
        per_layer = sum(w.size for layer in self.layers for n, w in layer.items() if n[0] == "w")
        return per_layer + self.lm_head.size

    def params(self) -> int:
        norms = sum(w.size for layer in self.layers for n, w in layer.items() if n[0] != "w")
        return self.matmul_params() + self.embedding.size + norms + self.final_norm.size


def make_weights(spec: DecoderSpec) -> Weights:
    rng = np.random.default_rng(spec.seed)
    h, kv, f = spec.hidden, spec.kv_heads * spec.head_dim, spec.ffn

    def normal(shape: tuple[int, int], std: float) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)

    # residual branches scaled down with depth so the stream stays O(1) (GPT-2 style)
    out_std = 1.0 / np.sqrt(2.0 * spec.layers)
    layers = tuple(
        {
            "attn_norm": np.ones(h, np.float32),
            "wq": normal((h, h), 1 / np.sqrt(h)),
            "wk": normal((h, kv), 1 / np.sqrt(h)),
            "wv": normal((h, kv), 1 / np.sqrt(h)),
            "wo": normal((h, h), out_std / np.sqrt(h)),
            "ffn_norm": np.ones(h, np.float32),
            "w_gate": normal((h, f), 1 / np.sqrt(h)),
            "w_up": normal((h, f), 1 / np.sqrt(h)),
            "w_down": normal((f, h), out_std / np.sqrt(f)),
        }
        for _ in range(spec.layers)
    )
    embedding = normal((spec.vocab, h), 1.0)
    bigram = embedding[rng.permutation(spec.vocab)].T * np.float32(BIGRAM_MARGIN / np.sqrt(h))
    lm_head = (normal((h, spec.vocab), 1.0) + bigram) * np.float32(LOGIT_STD / np.sqrt(h))
    return Weights(
        embedding=embedding,
        layers=layers,
        final_norm=np.ones(h, np.float32),
        lm_head=lm_head.astype(np.float32),
    )


def rotary_caches(spec: DecoderSpec) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin [max_context, head_dim/2], non-interleaved (rotate-half) as GQA expects."""
    d = spec.head_dim
    inv_freq = 1.0 / ROPE_THETA ** (np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.outer(np.arange(spec.max_context, dtype=np.float64), inv_freq)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


class _Graph(Graph):
    """The decoder's ops: named by type, several outputs, RMSNorm."""

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, domain: str = "", **attrs):
        name = self.fresh(op_type)
        outs = [f"{op_type.lower()}_{self._n}_{i}" for i in range(n_out)]
        self.node(op_type, inputs, outs, name=name, domain=domain, **attrs)
        return outs[0] if n_out == 1 else outs

    def rms_norm(self, x: str, gamma: str) -> str:
        mean_sq = self.op("ReduceMean", [self.op("Mul", [x, x])], axes=[-1], keepdims=1)
        eps = self.const(f"eps_{self._n}", np.array(RMS_EPS, np.float32))
        inv = self.op("Reciprocal", [self.op("Sqrt", [self.op("Add", [mean_sq, eps])])])
        return self.op("Mul", [self.op("Mul", [x, inv]), gamma])


def build_onnx(spec: DecoderSpec, attention: str, weights: Weights | None = None):
    """The decoder as an ONNX ModelProto; ``attention`` is ``"gqa"`` or ``"plain"``."""
    if attention not in ("gqa", "plain"):
        raise ValueError(f"attention must be 'gqa' or 'plain', not {attention!r}")
    w = weights if weights is not None else make_weights(spec)
    g = _Graph()
    helper, tp = g.onnx.helper, g.onnx.TensorProto
    d = spec.head_dim
    cos, sin = rotary_caches(spec)
    g.const("cos_cache", cos)
    g.const("sin_cache", sin)
    inputs = [
        helper.make_tensor_value_info("input_ids", tp.INT64, [1, "seq"]),
        helper.make_tensor_value_info("seqlens_k", tp.INT32, [1]),
    ]
    if attention == "gqa":
        inputs.append(helper.make_tensor_value_info("total_sequence_length", tp.INT32, []))
    outputs = [helper.make_tensor_value_info("logits", tp.FLOAT, [1, 1, spec.vocab])]
    kv_shape = [1, spec.kv_heads, "past", d]
    present_shape = [1, spec.kv_heads, "total", d]

    x = g.op("Gather", [g.const("embedding", w.embedding), "input_ids"], axis=0)
    plain = _PlainAttention(g, spec) if attention == "plain" else None
    for i, lw in enumerate(w.layers):
        names = {k: g.const(f"layers.{i}.{k}", v) for k, v in lw.items()}
        past_k, past_v = f"past_key_{i}", f"past_value_{i}"
        inputs += [helper.make_tensor_value_info(n, tp.FLOAT, kv_shape) for n in (past_k, past_v)]
        hn = g.rms_norm(x, names["attn_norm"])
        q, k, v = (g.op("MatMul", [hn, names[n]]) for n in ("wq", "wk", "wv"))
        if plain is None:
            attn, present_k, present_v = g.op(
                "GroupQueryAttention",
                [q, k, v, past_k, past_v, "seqlens_k", "total_sequence_length",
                 "cos_cache", "sin_cache"],
                n_out=3, domain="com.microsoft",
                num_heads=spec.heads, kv_num_heads=spec.kv_heads, do_rotary=1,
            )  # fmt: skip
        else:
            attn, present_k, present_v = plain(q, k, v, past_k, past_v)
        # graph outputs need their own names: route through Identity
        g.node("Identity", [present_k], [f"present_key_{i}"])
        g.node("Identity", [present_v], [f"present_value_{i}"])
        outputs += [
            helper.make_tensor_value_info(f"present_{n}_{i}", tp.FLOAT, present_shape)
            for n in ("key", "value")
        ]
        x = g.op("Add", [x, g.op("MatMul", [attn, names["wo"]])])
        hn = g.rms_norm(x, names["ffn_norm"])
        gate = g.op("MatMul", [hn, names["w_gate"]])
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        up = g.op("MatMul", [hn, names["w_up"]])
        x = g.op("Add", [x, g.op("MatMul", [g.op("Mul", [silu, up]), names["w_down"]])])
    # only the last position's logits: pp never needs the others, and the LM head is big
    last = g.op(
        "Slice",
        [x, g.const("last_start", np.array([-1], np.int64)),
         g.const("last_end", np.array([np.iinfo(np.int64).max], np.int64)),
         g.const("last_axis", np.array([1], np.int64))],
    )  # fmt: skip
    x = g.rms_norm(last, g.const("final_norm", w.final_norm))
    g.node("MatMul", [x, g.const("lm_head", w.lm_head)], ["logits"])
    opsets = {"": OPSET, "com.microsoft": 1}
    return g.model(f"decoder_{attention}", inputs, outputs, opsets, ir_version=8)


class _PlainAttention:
    """Causal GQA with rotary and a concatenated KV cache, in standard ONNX ops."""

    def __init__(self, g: _Graph, spec: DecoderSpec) -> None:
        self.g, self.spec = g, spec
        d, half = spec.head_dim, spec.head_dim // 2
        c = g.const
        self.q_shape = c("q_shape", np.array([1, 0, spec.heads, d], np.int64))
        self.kv_shape = c("kv_shape", np.array([1, 0, spec.kv_heads, d], np.int64))
        self.out_shape = c("attn_out_shape", np.array([1, 0, spec.hidden], np.int64))
        self.group_shape = c("group_shape", np.array([1, spec.kv_heads, 1, -1, d], np.int64))
        self.groups = c(
            "group_expand", np.array([1, 1, spec.heads // spec.kv_heads, 1, 1], np.int64)
        )
        self.heads_shape = c("heads_shape", np.array([1, spec.heads, -1, d], np.int64))
        self.scale = c("attn_scale", np.array(1.0 / np.sqrt(d), np.float32))
        self.masked = c("mask_value", np.array(-1e9, np.float32))
        self.zero_f = c("mask_zero", np.array(0.0, np.float32))
        self.half = c("half", np.array([half], np.int64))
        self.axis_last = c("axis_last", np.array([-1], np.int64))
        self.start0 = c("start0", np.array([0], np.int64))
        self.end_max = c("end_max", np.array([np.iinfo(np.int64).max], np.int64))
        self.one = c("one_i64", np.array(1, np.int64))
        self._positions: tuple[str, str, str] | None = None

    def _positions_for(self, past_k: str, q: str):
        """Absolute positions [past, past+S) and total length, derived from shapes once."""
        if self._positions is None:
            g = self.g
            past = g.op("Gather", [g.op("Shape", [past_k]), g.const("i2", np.array(2, np.int64))])
            seq = g.op("Gather", [g.op("Shape", [q]), g.const("i1", np.array(1, np.int64))])
            total = g.op("Add", [past, seq])
            positions = g.op("Range", [past, total, self.one])  # [S]
            keys = g.op("Range", [g.const("zero_i64", np.array(0, np.int64)), total, self.one])
            # key j is visible to query at position p when j <= p
            future = g.op(
                "Greater",
                [g.op("Unsqueeze", [keys, g.const("ax0", np.array([0], np.int64))]),
                 g.op("Unsqueeze", [positions, g.const("ax1", np.array([1], np.int64))])],
            )  # fmt: skip
            mask = g.op("Where", [future, self.masked, self.zero_f])  # [S, T]
            cos = g.op("Gather", ["cos_cache", positions], axis=0)  # [S, d/2]
            sin = g.op("Gather", ["sin_cache", positions], axis=0)
            # -> [1, 1, S, d/2] to broadcast over [1, heads, S, d/2]
            shape4 = g.const("rope_shape", np.array([1, 1, -1, self.spec.head_dim // 2], np.int64))
            self._positions = (
                g.op("Reshape", [cos, shape4]),
                g.op("Reshape", [sin, shape4]),
                mask,
            )
        return self._positions

    def _rotate(self, x: str, cos: str, sin: str) -> str:
        g = self.g
        x1 = g.op("Slice", [x, self.start0, self.half, self.axis_last])
        x2 = g.op("Slice", [x, self.half, self.end_max, self.axis_last])
        first = g.op("Sub", [g.op("Mul", [x1, cos]), g.op("Mul", [x2, sin])])
        second = g.op("Add", [g.op("Mul", [x2, cos]), g.op("Mul", [x1, sin])])
        return g.op("Concat", [first, second], axis=-1)

    def __call__(self, q: str, k: str, v: str, past_k: str, past_v: str):
        g = self.g
        bnsh = [0, 2, 1, 3]
        qh = g.op("Transpose", [g.op("Reshape", [q, self.q_shape])], perm=bnsh)
        kh = g.op("Transpose", [g.op("Reshape", [k, self.kv_shape])], perm=bnsh)
        vh = g.op("Transpose", [g.op("Reshape", [v, self.kv_shape])], perm=bnsh)
        cos, sin, mask = self._positions_for(past_k, q)
        qh, kh = self._rotate(qh, cos, sin), self._rotate(kh, cos, sin)
        present_k = g.op("Concat", [past_k, kh], axis=2)
        present_v = g.op("Concat", [past_v, vh], axis=2)
        k_all, v_all = (self._repeat_kv(t) for t in (present_k, present_v))
        scores = g.op("MatMul", [qh, g.op("Transpose", [k_all], perm=[0, 1, 3, 2])])
        scores = g.op("Add", [g.op("Mul", [scores, self.scale]), mask])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v_all])
        out = g.op("Reshape", [g.op("Transpose", [ctx], perm=bnsh), self.out_shape])
        return out, present_k, present_v

    def _repeat_kv(self, t: str) -> str:
        g = self.g
        if self.spec.heads == self.spec.kv_heads:
            return t
        grouped = g.op("Expand", [g.op("Reshape", [t, self.group_shape]), self.groups])
        return g.op("Reshape", [grouped, self.heads_shape])
