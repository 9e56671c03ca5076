"""Model files as a user would have them, written with onnx's own helper (not perfsuite's
builders): an encoder over int64 token ids and an attention mask with symbolic batch and
sequence, and a CNN saved as an OpenVINO IR. Deterministic weights, small enough to
quantize in seconds."""

from __future__ import annotations

from pathlib import Path

import numpy as np

VOCAB, WIDTH, CLASSES = 1000, 64, 4


def write_encoder(path: Path, seed: int = 3) -> Path:
    """Embedding -> masked mean over the sequence -> MLP -> logits, inputs
    ``input_ids``/``attention_mask`` of shape [batch, sequence]."""
    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(seed)

    def init(name, shape, scale):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name
        )

    inits = [
        init("embedding", (VOCAB, WIDTH), 1.0),
        init("w1", (WIDTH, 4 * WIDTH), WIDTH**-0.5),
        init("b1", (4 * WIDTH,), 0.1),
        init("w2", (4 * WIDTH, CLASSES), (4 * WIDTH) ** -0.5),
        numpy_helper.from_array(np.array([2], np.int64), "last"),
        numpy_helper.from_array(np.array([1], np.int64), "seq_axis"),
    ]
    nodes = [
        helper.make_node("Gather", ["embedding", "input_ids"], ["emb"]),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "last"], ["mask3"]),
        helper.make_node("Mul", ["emb", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "seq_axis"], ["summed"], keepdims=0),
        helper.make_node("ReduceSum", ["maskf", "seq_axis"], ["count"], keepdims=1),
        helper.make_node("Div", ["summed", "count"], ["pooled"]),
        helper.make_node("MatMul", ["pooled", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["logits"]),
    ]
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", CLASSES])
    graph = helper.make_graph(nodes, "user_encoder", [ids, mask], [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, str(path))
    return path


def write_cnn_ir(folder: Path, seed: int = 5) -> Path:
    """conv-relu-conv-relu-pool-gemm on [N, 3, 32, 32], converted and saved as an IR."""
    import openvino as ov
    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(
            (rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32), "c1"
        ),
        numpy_helper.from_array(
            (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32), "c2"
        ),
        numpy_helper.from_array((rng.standard_normal((32, 10)) * 0.2).astype(np.float32), "fc"),
    ]
    conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    nodes = [
        helper.make_node("Conv", ["image", "c1"], ["a1"], **conv),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("Conv", ["r1", "c2"], ["a2"], strides=[2, 2], **conv),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("MatMul", ["f", "fc"], ["scores"]),
    ]
    x = helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 32, 32])
    y = helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", 10])
    model = helper.make_model(
        helper.make_graph(nodes, "user_cnn", [x], [y], inits),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    onnx_path = folder / "cnn.onnx"
    save(model, str(onnx_path))
    xml = folder / "cnn.xml"
    ov.save_model(ov.convert_model(str(onnx_path)), str(xml), compress_to_fp16=False)
    onnx_path.unlink()
    return xml
