"""LLM decode as a system under test, measured like llama-bench (pp/tg tokens/s, TTFT,
TPOT), with a memory-bandwidth roofline and a logits-agreement accuracy check."""

from perfsuite.llm.bench import (
    LogitsAgreement,
    Roofline,
    accuracy,
    roofline,
    run_test,
)
from perfsuite.llm.decoder import MODELS, ContextTooLong, DecoderSpec, Unsupported
from perfsuite.llm.export import ExportFailed
from perfsuite.llm.genai import genai_missing
from perfsuite.llm.variants import (
    FOLDERS,
    FRAMEWORKS,
    GENAI,
    PRECISIONS,
    DecoderSession,
    Variant,
    declare_folder,
    open_session,
    prepare,
    why_not,
)

__all__ = [
    "ExportFailed",
    "FRAMEWORKS",
    "GENAI",
    "MODELS",
    "PRECISIONS",
    "ContextTooLong",
    "DecoderSession",
    "FOLDERS",
    "declare_folder",
    "DecoderSpec",
    "LogitsAgreement",
    "Roofline",
    "Unsupported",
    "Variant",
    "accuracy",
    "genai_missing",
    "open_session",
    "prepare",
    "roofline",
    "run_test",
    "why_not",
]
