"""A toy framework for sweeps through pytest: a conftest that registers it, so a sweep runs
in seconds without ONNX Runtime (``pytester.makeconftest(TOY_BACKEND)``)."""

TOY_BACKEND = """
import numpy as np

from perfsuite.prepare.backends.base import Backend, Session


class ToySession(Session):
    framework = "toyfw"

    def __init__(self, config):
        self.settings = {"threads": config.threads, "toy": True}

    def infer(self, inputs):
        x = next(iter(inputs.values()))
        return [np.tanh(x).sum(axis=tuple(range(1, x.ndim)))]


class ToyBackend(Backend):
    name = "toyfw"
    distribution = "numpy"  # installed wherever perfsuite is
    precisions = ("fp32",)
    no_path = {"int8_static": "toyfw runs fp32 only"}

    def prepare(self, model, config):
        self.require()
        return ToySession(config)
"""
