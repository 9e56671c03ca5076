"""The hand-built decoder's weights as a GGUF file for llama.cpp, written with ``gguf`` from
numpy (no torch, no convert script).

Llama's layout as llama.cpp's ``convert_hf_to_gguf.py`` writes it: Hugging Face's [out, in]
matrices, Q and K rows permuted from rotate-half to llama.cpp's interleaved rotary pairs, the
BPE tokenizer's vocabulary (padded to the model's with unused tokens) and merges. Quantized
with gguf's own numpy quantizers: Q4_0 (symmetric, blocks of 32: ``int4_sym_g32``) and Q8_0
(symmetric int8, blocks of 32, the nearest llama.cpp has to ``int8_wo``); the embedding and
norms stay F32, the LM head takes the matrices' type (as MatMulNBits does).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from perfsuite.llm.decoder import RMS_EPS, ROPE_THETA, DecoderSpec
from perfsuite.llm.hf_folder import BOS_ID, EOS_ID, hf_tensors

GGUF_TYPES = {"fp32": "F32", "int8_wo": "Q8_0", "int4_sym_g32": "Q4_0"}


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """rotate-half rows -> interleaved pairs (convert_hf_to_gguf.py's LlamaModel.permute)."""
    return (
        w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
    )


def write_gguf(spec: DecoderSpec, precision: str, tokenizer_json: Path, dest: Path) -> Path:
    import gguf  # optional dependency: only the llama.cpp framework needs it

    qtype = getattr(gguf.GGMLQuantizationType, GGUF_TYPES[precision])
    tensors = hf_tensors(spec, "llama")
    tmp = Path(tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".gguf", dir=dest.parent)[1])
    try:
        w = gguf.GGUFWriter(str(tmp), "llama")
        w.add_context_length(spec.max_context)
        w.add_embedding_length(spec.hidden)
        w.add_block_count(spec.layers)
        w.add_feed_forward_length(spec.ffn)
        w.add_head_count(spec.heads)
        w.add_head_count_kv(spec.kv_heads)
        w.add_layer_norm_rms_eps(RMS_EPS)
        w.add_rope_freq_base(ROPE_THETA)
        w.add_rope_dimension_count(spec.head_dim)
        w.add_vocab_size(spec.vocab)
        _add_tokenizer(w, gguf, json.loads(Path(tokenizer_json).read_text()), spec.vocab)
        names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
                 "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
                 "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm",
                 "post_attention_layernorm": "ffn_norm"}  # fmt: skip
        out = {"token_embd.weight": tensors["model.embed_tokens.weight"],
               "output_norm.weight": tensors["model.norm.weight"],
               "output.weight": tensors["lm_head.weight"]}  # fmt: skip
        for i in range(spec.layers):
            for theirs, ours in names.items():
                data = tensors[f"model.layers.{i}.{theirs}.weight"]
                if theirs == "self_attn.q_proj":
                    data = _permute(data, spec.heads)
                elif theirs == "self_attn.k_proj":
                    data = _permute(data, spec.kv_heads)
                out[f"blk.{i}.{ours}.weight"] = data
        for name, data in out.items():
            quantize = data.ndim == 2 and name != "token_embd.weight" and precision != "fp32"
            if quantize:
                w.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
            else:
                w.add_tensor(name, np.ascontiguousarray(data, np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _add_tokenizer(w, gguf, tokenizer: dict, vocab: int) -> None:
    """The BPE vocabulary and merges (llama.cpp's "gpt2" tokenizer), padded to ``vocab``."""
    by_id = {i: t for t, i in tokenizer["model"]["vocab"].items()}
    special = {t["id"]: t["content"] for t in tokenizer.get("added_tokens", [])}
    tokens, types = [], []
    for i in range(vocab):
        if i in special or i in by_id:
            tokens.append(special.get(i) or by_id[i])
            types.append(gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL)
        else:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tokenizer["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(BOS_ID)
    w.add_eos_token_id(EOS_ID)
