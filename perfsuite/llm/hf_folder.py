"""A Hugging Face model folder for a decoder spec, made here without torch or the Hub.

The hand-built decoder (``perfsuite.llm.decoder``) is Llama's architecture: RMSNorm, rotary
(rotate-half), GQA, SwiGLU, no biases, untied LM head. Written as ``LlamaForCausalLM`` (or
``Qwen2ForCausalLM``, whose q/k/v biases are zero) with the same weights, it is the same model,
so the export tools and the GenAI runtimes load the very network the hand-built graph runs.

The tokenizer is a byte-level BPE trained with ``tokenizers`` on the dataset descriptions
scikit-learn ships; its vocabulary is smaller than the model's (as padded vocabularies are),
which only matters to text, never to token ids.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from perfsuite.llm.decoder import RMS_EPS, ROPE_THETA, DecoderSpec, Weights, make_weights

ARCHITECTURES = ("llama", "qwen2")
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")  # ids 0, 1, 2
BOS_ID, EOS_ID = 1, 2
FOLDER_VERSION = "1"  # bump when the files written change: part of every cache key
REQUIRED = ("config.json", "tokenizer.json")


def hf_config(spec: DecoderSpec, architecture: str) -> dict:
    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"unknown architecture {architecture!r}; known: {', '.join(ARCHITECTURES)}"
        )
    common = {
        "hidden_size": spec.hidden,
        "intermediate_size": spec.ffn,
        "num_attention_heads": spec.heads,
        "num_hidden_layers": spec.layers,
        "num_key_value_heads": spec.kv_heads,
        "vocab_size": spec.vocab,
        "max_position_embeddings": spec.max_context,
        "rms_norm_eps": RMS_EPS,
        "rope_theta": ROPE_THETA,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "initializer_range": 0.02,
        "use_cache": True,
    }
    if architecture == "llama":
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "attention_bias": False, "mlp_bias": False, "head_dim": spec.head_dim,
                **common}  # fmt: skip
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
            "use_sliding_window": False, "sliding_window": spec.max_context,
            "max_window_layers": spec.layers, **common}  # fmt: skip


def hf_tensors(spec: DecoderSpec, architecture: str, weights: Weights | None = None) -> dict:
    """The state dict, HF names and layouts (a Linear's weight is [out, in])."""
    w = weights if weights is not None else make_weights(spec)
    tensors = {"model.embed_tokens.weight": w.embedding, "model.norm.weight": w.final_norm,
               "lm_head.weight": w.lm_head.T}  # fmt: skip
    names = {"wq": "self_attn.q_proj", "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
             "wo": "self_attn.o_proj", "w_gate": "mlp.gate_proj", "w_up": "mlp.up_proj",
             "w_down": "mlp.down_proj"}  # fmt: skip
    for i, layer in enumerate(w.layers):
        prefix = f"model.layers.{i}."
        tensors[prefix + "input_layernorm.weight"] = layer["attn_norm"]
        tensors[prefix + "post_attention_layernorm.weight"] = layer["ffn_norm"]
        for ours, theirs in names.items():
            tensors[f"{prefix}{theirs}.weight"] = layer[ours].T
        if architecture == "qwen2":  # Qwen2 has q/k/v biases; zero keeps the same network
            for proj in ("q_proj", "k_proj", "v_proj"):
                out = layer[{"q_proj": "wq", "k_proj": "wk", "v_proj": "wv"}[proj]].shape[1]
                tensors[f"{prefix}self_attn.{proj}.bias"] = np.zeros(out, np.float32)
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()}


def training_text() -> list[str]:
    """Text a package ships: scikit-learn's dataset descriptions (~43 KB of English)."""
    import sklearn  # heavy optional dependency: only training the tokenizer reads its files

    folder = Path(sklearn.__file__).parent / "datasets" / "descr"
    return [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.rst"))]


def train_tokenizer(vocab: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    tokenizer.train_from_iterator(training_text(), trainer)
    return tokenizer


def write_folder(spec: DecoderSpec, architecture: str, dest: Path) -> Path:
    """Write the folder to ``dest`` atomically (built beside it, renamed into place)."""
    from safetensors.numpy import save_file  # only writing a folder needs it

    config = hf_config(spec, architecture)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        (scratch / "config.json").write_text(json.dumps(config, indent=1))
        (scratch / "generation_config.json").write_text(json.dumps({
            "bos_token_id": BOS_ID, "eos_token_id": EOS_ID, "do_sample": False,
            "max_length": spec.max_context,
        }, indent=1))  # fmt: skip
        save_file(hf_tensors(spec, architecture), str(scratch / "model.safetensors"),
                  metadata={"format": "pt"})  # fmt: skip
        tokenizer = train_tokenizer(min(spec.vocab, 4096))
        tokenizer.save(str(scratch / "tokenizer.json"))
        (scratch / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
            "eos_token": "</s>", "unk_token": "<unk>", "model_max_length": spec.max_context,
            "add_bos_token": True, "clean_up_tokenization_spaces": False,
        }, indent=1))  # fmt: skip
        (scratch / "special_tokens_map.json").write_text(json.dumps(
            {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
        ))  # fmt: skip
        os.chmod(scratch, 0o755)
        try:
            os.rename(scratch, dest)
        except OSError:  # another process finished the same folder first: keep theirs
            if not dest.exists():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return dest


def spec_from_folder(path: Path) -> DecoderSpec:
    """A user's Hugging Face folder as a DecoderSpec (shapes for the context check, the
    parameter count and the cache key); a bad folder is one ValueError line."""
    check_folder(path)
    try:
        c = json.loads((Path(path) / "config.json").read_text())
        heads = int(c["num_attention_heads"])
        return DecoderSpec(
            layers=int(c["num_hidden_layers"]), hidden=int(c["hidden_size"]), heads=heads,
            kv_heads=int(c.get("num_key_value_heads") or heads), vocab=int(c["vocab_size"]),
            max_context=int(c["max_position_embeddings"]), ffn=int(c["intermediate_size"]),
            architecture=str(c["model_type"]),
        )  # fmt: skip
    except (ValueError, TypeError) as exc:
        raise ValueError(f"LLM folder {path}: config.json is not a decoder's ({exc})") from None
    except KeyError as exc:
        raise ValueError(f"LLM folder {path}: config.json has no {exc.args[0]}") from None


def check_folder(path: Path) -> None:
    """One line naming what a model folder lacks, as a ValueError."""
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"LLM folder {path} does not exist or is not a folder")
    missing = [name for name in REQUIRED if not (path / name).is_file()]
    if missing:
        raise ValueError(f"LLM folder {path} has no {' or '.join(missing)}")
