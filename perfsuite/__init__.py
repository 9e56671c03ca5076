"""perfsuite: a pytest-based performance regression suite for DL inference on AMD EPYC CPUs."""

__version__ = "0.1.0"
