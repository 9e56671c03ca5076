"""An ONNX graph being built: nodes and initializers with unique names, and the model they
make. The zoo's builder (``prepare.models.graph``) and the LLM decoder (``llm.decoder``) both
build on it."""

from __future__ import annotations

import numpy as np


class Graph:
    def __init__(self) -> None:
        import onnx  # heavy optional dependency: only building a model needs it

        self.onnx = onnx
        self.nodes: list = []
        self.inits: list = []
        self._n = 0

    def fresh(self, prefix: str) -> str:
        """A name no other node or initializer of this graph has."""
        self._n += 1
        return f"{prefix}_{self._n}"

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.onnx.numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op_type: str, inputs: list[str], outputs: list[str], **attrs) -> None:
        self.nodes.append(self.onnx.helper.make_node(op_type, inputs, outputs, **attrs))

    def model(self, name: str, inputs: list, outputs: list, opsets: dict[str, int], **fields):
        """The ModelProto of the graph; ``opsets``: domain -> version."""
        helper = self.onnx.helper
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        imports = [helper.make_opsetid(domain, v) for domain, v in opsets.items()]
        return helper.make_model(graph, opset_imports=imports, **fields)
