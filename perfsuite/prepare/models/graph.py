"""Builds ONNX graphs with deterministic weights while running a numpy forward pass of a
calibration batch through them, so each convolution/linear layer can be normalised as it is
added: batch-norm statistics measured on synthetic inputs, folded into the layer's weights and
bias (W' = W / std, b' = (b - mean) / std per output channel). Without this, He-initialised
deep nets without normalisation produce activations that grow layer after layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from numpy.lib.stride_tricks import sliding_window_view
from onnx import TensorProto, helper

from perfsuite.onnx_graph import Graph

OPSET = 17


@dataclass(slots=True, eq=False)
class Tensor:
    """A graph value: its ONNX name and its value on the calibration batch."""

    name: str
    value: np.ndarray


def conv2d_nchw(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Reference convolution (groups=1) for calibration: windows x weights via tensordot."""
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    win = sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    out = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))  # n, ho, wo, o
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def _window(k: int, stride: int) -> dict:
    """ONNX attributes of a k x k window with ``stride``, padded to keep the size at stride 1."""
    return {"kernel_shape": [k, k], "strides": [stride, stride], "pads": [k // 2] * 4}


class GraphBuilder:
    def __init__(self, name: str, seed: int, calib: np.ndarray):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.graph = Graph()
        self.params = 0
        self.flops_per_item = 0  # multiply-adds count as 2
        shape = ["N", *calib.shape[1:]]  # dynamic batch
        self.input_info = helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)
        self.input = Tensor("input", calib.astype(np.float32))

    def const(self, prefix: str, value: np.ndarray, count: bool = True) -> str:
        name = self.graph.const(self.graph.fresh(prefix), np.ascontiguousarray(value))
        if count:
            self.params += value.size
        return name

    def node(self, op: str, inputs: list[str], value: np.ndarray, **attrs) -> Tensor:
        out = self.graph.fresh(op.lower())
        self.graph.node(op, inputs, [out], name=out, **attrs)
        return Tensor(out, value)

    @staticmethod
    def _normalise(y: np.ndarray, axes: tuple[int, ...]):
        return y.mean(axis=axes), y.std(axis=axes) + 1e-5

    def conv(
        self, x: Tensor, cout: int, k: int, stride: int = 1, relu: bool = True, gamma: float = 1.0
    ) -> Tensor:
        """Conv + folded batch norm (mean 0, std ``gamma`` on the calibration batch)."""
        cin = x.value.shape[1]
        w = self.rng.standard_normal((cout, cin, k, k)).astype(np.float32)
        w *= np.sqrt(2.0 / (cin * k * k))  # He initialisation
        y = conv2d_nchw(x.value, w, stride, k // 2)
        mean, std = self._normalise(y, (0, 2, 3))
        std = std / gamma
        w = (w / std[:, None, None, None]).astype(np.float32)
        b = (-mean / std).astype(np.float32)
        y = (y - mean[None, :, None, None]) / std[None, :, None, None]
        self.flops_per_item += 2 * cout * cin * k * k * y.shape[2] * y.shape[3]
        inputs = [x.name, self.const("w", w), self.const("b", b)]
        out = self.node("Conv", inputs, y.astype(np.float32), **_window(k, stride))
        return self.relu(out) if relu else out

    def linear(
        self,
        x: Tensor,
        cout: int,
        relu: bool = False,
        normalise: bool | str = True,
        weight: np.ndarray | None = None,
        bias: np.ndarray | None = None,
    ) -> Tensor:
        """x (..., cin) @ W (cin, cout) + b as MatMul + Add (the form quantizers handle).
        normalise: True per output column; "global" one scale for the whole output (for a
        classifier head fed a calibration batch too small for per-column statistics)."""
        cin = x.value.shape[-1]
        if weight is None:
            w = (self.rng.standard_normal((cin, cout)) * np.sqrt(2.0 / cin)).astype(np.float32)
            b = np.zeros(cout, np.float32)
        else:
            w, b = weight.astype(np.float32), bias.astype(np.float32)
        y = x.value @ w + b
        if normalise:
            axes = tuple(range(y.ndim - 1)) if normalise is True else None
            mean, std = self._normalise(y, axes)
            w, b = (w / std).astype(np.float32), ((b - mean) / std).astype(np.float32)
            y = (y - mean) / std
        rows = int(np.prod(x.value.shape[1:-1])) if x.value.ndim > 2 else 1
        self.flops_per_item += 2 * cin * cout * rows
        mm = self.node("MatMul", [x.name, self.const("w", w)], (x.value @ w).astype(np.float32))
        out = self.node("Add", [mm.name, self.const("b", b)], y.astype(np.float32))
        return self.relu(out) if relu else out

    def relu(self, x: Tensor) -> Tensor:
        return self.node("Relu", [x.name], np.maximum(x.value, 0))

    def add(self, a: Tensor, b: Tensor, relu: bool = False) -> Tensor:
        out = self.node("Add", [a.name, b.name], a.value + b.value)
        return self.relu(out) if relu else out

    def maxpool(self, x: Tensor, k: int = 3, stride: int = 2) -> Tensor:
        pad = k // 2
        xp = np.pad(x.value, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
        win = sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
        return self.node("MaxPool", [x.name], win.max(axis=(4, 5)), **_window(k, stride))

    def global_avgpool_flat(self, x: Tensor) -> Tensor:
        gap = self.node("GlobalAveragePool", [x.name], x.value.mean(axis=(2, 3), keepdims=True))
        return self.node("Flatten", [gap.name], gap.value.reshape(gap.value.shape[0], -1), axis=1)

    def model(self, output: Tensor) -> onnx.ModelProto:
        self.graph.node("Identity", [output.name], ["output"])
        out_shape = ["N", *output.value.shape[1:]]
        output_info = helper.make_tensor_value_info("output", TensorProto.FLOAT, out_shape)
        model = self.graph.model(
            self.name, [self.input_info], [output_info], {"": OPSET}, producer_name="perfsuite"
        )
        model.ir_version = 8  # readable by every onnxruntime/OpenVINO release we support
        model.doc_string = f"params={self.params} flops_per_item={self.flops_per_item}"
        onnx.checker.check_model(model)
        return model
