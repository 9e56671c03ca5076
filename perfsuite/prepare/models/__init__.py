"""Deterministic models built in code: see ``zoo`` for the list and ``graph`` for how."""

from perfsuite.prepare.models.zoo import MLP_SIZES_MB, BuiltModel, get, names

__all__ = ["MLP_SIZES_MB", "BuiltModel", "get", "names"]
