"""Sessions of the GenAI runtimes teams deploy: OpenVINO GenAI's ``LLMPipeline`` and ONNX
Runtime GenAI's ``og.Generator``, on exported folders (``perfsuite.llm.export``).

Both take token ids (no tokenizer on the measured path) and time each generated token as the
runtime hands it over: OpenVINO GenAI through a streamer's ``write``, ONNX Runtime GenAI
around ``generate_next_token``. A prompt that does not fit the context is refused here, before
the runtime sees it: OpenVINO GenAI 2026.4 runs past ``max_position_embeddings`` silently.
"""

from __future__ import annotations

import importlib.util
import json
import time

import numpy as np

from perfsuite.llm.decoder import ContextTooLong

RUNTIMES = {"openvino-genai": "openvino_genai", "onnxruntime-genai": "onnxruntime_genai",
            "llama.cpp": "llama_cpp"}  # fmt: skip
DEFAULT_HOW = "pip install 'perfsuite[frameworks]'"
HOW = {"llama.cpp": "pip install 'perfsuite[llamacpp]': compiles llama.cpp for this CPU"}


def genai_missing() -> dict[str, str]:
    """Why each GenAI framework cannot run here (its package is not installed)."""
    return {
        framework: f"{module} is not installed ({HOW.get(framework, DEFAULT_HOW)})"
        for framework, module in RUNTIMES.items()
        if importlib.util.find_spec(module) is None
    }


def greedy_timed(session, prompt, n: int) -> tuple[float, list[float], list[int]]:
    """Greedy generation of ``n`` tokens through a session's ``prefill``/``step`` logits:
    (time to the first, each later step's time, the tokens)."""
    session.check_fits(len(prompt), n)
    started = time.perf_counter()
    tokens = [int(np.argmax(session.prefill(np.asarray(prompt))))]
    stamps = [started, time.perf_counter()]
    for _ in range(n - 1):
        tokens.append(int(np.argmax(session.step(tokens[-1]))))
        stamps.append(time.perf_counter())
    return stamps[1] - stamps[0], list(np.diff(stamps[1:])), tokens


class GenAISession:
    """What the GenAI sessions share: the context check and the context-manager form."""

    def __init__(self, variant, threads: int) -> None:
        self.variant = variant
        self.spec = variant.spec
        self.threads = threads
        self.settings: dict = {}

    def check_fits(self, prompt: int, generated: int) -> None:
        if prompt + generated > self.spec.max_context:
            raise ContextTooLong(
                f"prompt of {prompt} tokens + {generated} generated exceeds the model's "
                f"context of {self.spec.max_context}"
            )

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        pass


class OpenVinoGenAISession(GenAISession):
    """``openvino_genai.LLMPipeline`` on an optimum-intel export (stateful, KV cache inside)."""

    def __init__(self, variant, threads: int) -> None:
        super().__init__(variant, threads)
        import openvino as ov  # heavy optional dependency: only this framework
        import openvino_genai as genai  # heavy optional dependency: only this framework

        self._ov, self._genai = ov, genai
        config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
                  "INFERENCE_PRECISION_HINT": "f32"}  # fmt: skip
        self._pipe = genai.LLMPipeline(str(variant.path), "CPU", **config)
        self.settings = {"framework": "openvino-genai", "version": genai.__version__,
                         "pipeline": "LLMPipeline", "kv_cache": "stateful, in the model",
                         **config}  # fmt: skip

    def _config(self, n: int):
        return greedy_config(self._genai, n)

    def _inputs(self, prompt):
        ids = np.asarray(prompt, np.int64).reshape(1, -1)
        return self._genai.TokenizedInputs(self._ov.Tensor(ids), self._ov.Tensor(np.ones_like(ids)))

    def timed_generate(self, prompt, n: int) -> tuple[float, list[float], list[int]]:
        self.check_fits(len(prompt), n)
        clock = _streamer_clock(self._genai)
        started = time.perf_counter()
        result = self._pipe.generate(self._inputs(prompt), self._config(n), clock)
        stamps = [started, *clock.times]
        return stamps[1] - stamps[0], list(np.diff(stamps[1:])), [int(t) for t in result.tokens[0]]

    def close(self) -> None:
        self._pipe = None


def greedy_config(genai, n: int):
    """OpenVINO GenAI's GenerationConfig for exactly ``n`` greedy tokens."""
    config = genai.GenerationConfig()
    config.max_new_tokens = config.min_new_tokens = n
    config.ignore_eos = True  # a random model may emit EOS: tg<N> means N tokens
    config.do_sample = False
    return config


def ort_genai_model(og, path, threads: int):
    """An ONNX Runtime GenAI model on ``threads`` intra-op threads, and those options."""
    config = og.Config(str(path))
    options = {"intra_op_num_threads": threads, "inter_op_num_threads": 1}
    config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
    return og.Model(config), options


def _streamer_clock(genai):
    class Clock(genai.StreamerBase):
        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []

        def write(self, token):
            now = time.perf_counter()
            self.times += [now] * (1 if isinstance(token, int) else len(token))
            return genai.StreamingStatus.RUNNING

        def end(self) -> None:
            pass

    return Clock()


class OnnxRuntimeGenAISession(GenAISession):
    """``onnxruntime_genai`` on a folder with ``genai_config.json`` (the builder's export)."""

    def __init__(self, variant, threads: int) -> None:
        super().__init__(variant, threads)
        import onnxruntime_genai as og  # heavy optional dependency: only this framework

        self._og = og
        self._model, options = ort_genai_model(og, variant.path, threads)
        self._generator = None
        self.settings = {"framework": "onnxruntime-genai", "version": og.__version__,
                         "accuracy_level": variant.accuracy_level, **options,
                         "kv_cache": "in the generator"}  # fmt: skip

    def _new(self, total: int):
        params = self._og.GeneratorParams(self._model)
        # min_length = max_length: a random model may emit EOS; tg<N> means N tokens
        params.set_search_options(max_length=total, min_length=total, do_sample=False)
        return self._og.Generator(self._model, params)

    def timed_generate(self, prompt, n: int) -> tuple[float, list[float], list[int]]:
        self.check_fits(len(prompt), n)
        ids = np.asarray(prompt, np.int32).reshape(1, -1)
        # a Generator costs ~12 ms to create whatever the model (0.18, llm_tiny): a per-request
        # cost, kept out of the prompt's time as llama-bench keeps its context set-up out
        generator = self._new(ids.shape[1] + n)
        started = time.perf_counter()
        generator.append_tokens(ids)
        stamps, tokens = [started], []
        for _ in range(n):
            generator.generate_next_token()
            tokens.append(int(generator.get_next_tokens()[0]))
            stamps.append(time.perf_counter())
        return stamps[1] - stamps[0], list(np.diff(stamps[1:])), tokens

    # teacher forcing, for the logits agreement (llm.bench.teacher_forced_logits)
    def prefill(self, tokens) -> np.ndarray:
        ids = np.asarray(tokens, np.int32).reshape(1, -1)
        self.check_fits(ids.shape[1], 0)
        self._generator = self._new(self.spec.max_context)
        self._generator.append_tokens(ids)
        return np.array(self._generator.get_logits()).reshape(-1)

    def step(self, token: int) -> np.ndarray:
        self._generator.append_tokens(np.array([[token]], np.int32))
        return np.array(self._generator.get_logits()).reshape(-1)

    def close(self) -> None:
        self._generator = None
        self._model = None


class LlamaCppSession(GenAISession):
    """llama.cpp through llama-cpp-python on a GGUF file (``perfsuite.llm.gguf_file``):
    ``eval`` the prompt in one batch, then one token at a time; greedy on the logits."""

    def __init__(self, variant, threads: int) -> None:
        super().__init__(variant, threads)
        import llama_cpp  # optional dependency: only this framework

        self._cpp = llama_cpp
        self._llm = llama_cpp.Llama(
            model_path=str(variant.path), n_ctx=self.spec.max_context, n_threads=threads,
            n_threads_batch=threads, n_batch=512, n_ubatch=512, verbose=False,
        )  # fmt: skip
        self.settings = {"framework": "llama.cpp", "version": llama_cpp.__version__,
                         "n_threads": threads, "n_batch": 512,
                         "kv_cache": "in the context"}  # fmt: skip

    def _logits(self) -> np.ndarray:
        # the last position's row from the context (Llama.scores stays zero without
        # logits_all in llama-cpp-python 0.3.36), copied before the next eval reuses it
        row = self._cpp.llama_get_logits_ith(self._llm.ctx, -1)
        return np.ctypeslib.as_array(row, shape=(self.spec.vocab,)).copy()

    def prefill(self, tokens) -> np.ndarray:
        ids = [int(t) for t in np.asarray(tokens).reshape(-1)]
        self.check_fits(len(ids), 0)
        self._llm.reset()
        self._llm.eval(ids)
        return self._logits()

    def step(self, token: int) -> np.ndarray:
        self._llm.eval([int(token)])
        return self._logits()

    def timed_generate(self, prompt, n: int) -> tuple[float, list[float], list[int]]:
        return greedy_timed(self, prompt, n)

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
        self._llm = None
