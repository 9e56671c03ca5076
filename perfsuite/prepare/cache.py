"""Artefact cache for built models and quantized files (docs/guide/inference.md).

Location: ``$PERFSUITE_CACHE``, else ``$XDG_CACHE_HOME/perfsuite``, else ``~/.cache/perfsuite``.
An entry is keyed by a hash of the builder's name, parameters and code version, written
atomically and sealed with a manifest of its SHA-256 and size; a file that does not match its
manifest (truncated, corrupted, or without one) is rebuilt, never used.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from perfsuite.writing import atomic_write_bytes, write_json  # noqa: F401 (zoo uses bytes)

ENV = "PERFSUITE_CACHE"


def cache_dir() -> Path:
    if os.environ.get(ENV):
        root = Path(os.environ[ENV])
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "perfsuite"
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_key(name: str, params: dict, version: str) -> str:
    blob = json.dumps(dict(name=name, params=params, version=version), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _manifest(path: Path) -> Path:
    return path.with_name(path.name + ".manifest.json")


def is_valid(path: Path, companions: tuple[Path, ...] = ()) -> bool:
    """True when ``path`` (and companion files such as an IR's .bin) match the manifest."""
    try:
        recorded = json.loads(_manifest(path).read_text())
        for p in (path, *companions):
            entry = recorded["files"][p.name]
            if p.stat().st_size != entry["size"] or file_sha256(p) != entry["sha256"]:
                return False
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def read_meta(path: Path) -> dict:
    try:
        return json.loads(_manifest(path).read_text()).get("meta", {})
    except (OSError, ValueError):
        return {}


def cached(
    name: str,
    params: dict,
    version: str,
    build: Callable[[Path], dict | None],
    suffix: str = ".onnx",
    companion_suffixes: tuple[str, ...] = (),
) -> Path:
    """Path of a valid cached artefact, building it with ``build(target_path)`` when absent or
    invalid. ``build`` must write the target (atomically) and may return metadata to store."""
    key = cache_key(name, params, version)
    path = cache_dir() / f"{name}-{key}{suffix}"
    companions = tuple(path.with_suffix(s) for s in companion_suffixes)
    if path.exists() and is_valid(path, companions):
        return path
    meta = {"artefact": name, "key_params": params, "version": version, **(build(path) or {})}
    # seal the finished artefact with its hashes, which is_valid checks on later loads
    files = {
        p.name: {"size": p.stat().st_size, "sha256": file_sha256(p)} for p in (path, *companions)
    }
    write_json(_manifest(path), {"files": files, "meta": meta})
    return path
