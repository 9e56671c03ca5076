"""Exports of an LLM folder by the tools teams use, run in an environment of their own.

optimum-intel (OpenVINO IR + tokenizer IR, NNCF weight compression) and the onnxruntime-genai
model builder (ONNX + ``genai_config.json``, MatMulNBits) both load the model with
transformers and torch. The measuring environment never imports torch: the tools run as
subprocesses of a managed venv made from perfsuite's ``export`` extra (or of the interpreter
``PERFSUITE_EXPORT_PYTHON`` names). Exported folders are cached by the exported folder's key,
the precision, the tool and the export environment's requirements.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

EXPORT_VERSION = "2"  # bump when the export commands change: part of every cache key
PYTHON_ENV = "PERFSUITE_EXPORT_PYTHON"
HOME_ENV = "PERFSUITE_EXPORT_HOME"  # where the managed venv lives; default: the cache
TIMEOUT_S = 1800


class ExportFailed(RuntimeError):
    """An export tool failed; the message is one line, the tool's output is in ``detail``."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


@dataclass(frozen=True)
class Scheme:
    bits: int
    symmetric: bool
    group: int  # 0 = per output channel


def export_requirements() -> list[str]:
    """The ``export`` extra of perfsuite's own metadata (pyproject.toml declares it)."""
    found = []
    for req in importlib.metadata.requires("perfsuite") or ():
        name, _, marker = req.partition(";")
        if re.search(r"""extra\s*==\s*["']export["']""", marker):
            found.append(name.strip())
    if not found:
        raise ExportFailed("perfsuite's metadata declares no 'export' extra: reinstall perfsuite")
    return sorted(found)


def _env_key() -> str:
    text = "|".join(export_requirements()) + f"|py{sys.version_info[:2]}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def export_python(cache_dir: Path) -> Path:
    """The interpreter that runs the export tools: ``PERFSUITE_EXPORT_PYTHON``, else a venv
    made once (under a lock) from the ``export`` extra, under ``PERFSUITE_EXPORT_HOME`` or
    the cache (~1 GB beside the measuring environment's packages)."""
    if given := os.environ.get(PYTHON_ENV):
        path = Path(given)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ExportFailed(f"{PYTHON_ENV}={given}: no such executable")
        return path
    env = Path(os.environ.get(HOME_ENV) or cache_dir) / f"export-env-{_env_key()}"
    python = env / "bin" / "python"
    _made_once(env, lambda: _make_env(env, python))
    return python


def _made_once(path: Path, make) -> None:
    """``make()`` unless ``path/.complete`` exists; under ``path.lock``, so processes that
    race make it once and the others wait for it."""
    if (path / ".complete").exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if not (path / ".complete").exists():
            make()


def _make_env(env: Path, python: Path) -> None:
    shutil.rmtree(env, ignore_errors=True)
    # system site packages: openvino, nncf, onnx and onnxruntime come from the measuring
    # environment, so the export venv adds only torch, transformers and the tools
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(env)], "venv")
    if sys.prefix != sys.base_prefix:  # a venv's own packages are not "system" ones
        import sysconfig

        site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig."
                          "get_paths()['purelib'])"], "venv").strip())  # fmt: skip
        (site / "perfsuite-measuring-env.pth").write_text(
            "\n".join(sorted({sysconfig.get_paths()[k] for k in ("purelib", "platlib")}))
        )
    _run([str(python), "-m", "pip", "install", "--quiet", *export_requirements()],
         "pip install")  # fmt: skip
    # optimum-intel requires torchvision, and PyPI's fails to import beside torch's CPU
    # build ("operator torchvision::nms does not exist"), breaking transformers' imports;
    # no export path uses it
    _run([str(python), "-m", "pip", "uninstall", "--yes", "--quiet", "torchvision"],
         "pip uninstall")  # fmt: skip
    (env / ".complete").write_text("\n".join(export_requirements()) + "\n")


def _run(command: list[str], what: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ExportFailed(f"{what} did not finish in {TIMEOUT_S} s") from exc
    except OSError as exc:
        raise ExportFailed(f"{what} could not start: {exc}") from exc
    if done.returncode != 0:
        output = (done.stderr or "") + (done.stdout or "")
        raise ExportFailed(f"{what} failed (exit {done.returncode}): {last_error(output)}", output)
    return done.stdout


def last_error(output: str) -> str:
    """The line of a tool's output that names the problem: its last exception, else its
    last non-empty line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[\w.]*(Error|Exception)\b.*:", line)]
    return (errors or lines or ["no output"])[-1][:300]


def openvino_command(python: Path, folder: Path, scheme: Scheme, out: Path) -> list[str]:
    if scheme.bits == 32:
        flags = ["--weight-format", "fp32"]
    elif scheme.bits == 8:
        flags = ["--weight-format", "int8"]  # asymmetric per channel, every layer
    else:
        # ratio 1: every MatMul in int4 but the embedding and LM head, which optimum keeps
        # in int8 (its default). --all-layers would make them int4 too: on llm_small the
        # teacher-forced top-1 agreement fell to 0.77 (0.95 for MatMulNBits, whose
        # embedding stays fp32), under the int4 floor of 0.8
        flags = ["--weight-format", "int4", "--group-size", str(scheme.group), "--ratio", "1.0",
                 *(["--sym"] if scheme.symmetric else [])]  # fmt: skip
    return [str(python), "-c", "from optimum.commands.optimum_cli import main; main()",
            "export", "openvino", "-m", str(folder), "--task", "text-generation-with-past",
            *flags, str(out)]  # fmt: skip


def builder_command(python: Path, folder: Path, scheme: Scheme, out: Path, work: Path) -> list:
    precision = {32: "fp32", 8: "int8", 4: "int4"}[scheme.bits]
    extra = []
    if scheme.bits < 32:
        # accuracy level 4: int8 activations, the MatMulNBits CPU kernels teams run
        extra = ["--extra_options", "accuracy_level=4", f"block_size={scheme.group or 128}",
                 f"is_symmetric={str(scheme.symmetric).lower()}"]  # fmt: skip
    return [str(python), "-m", "onnxruntime_genai.models.builder", "-i", str(folder),
            "-o", str(out), "-p", precision, "-e", "cpu", "-c", str(work), *extra]  # fmt: skip


def export(framework: str, folder: Path, scheme: Scheme, dest: Path, cache_dir: Path) -> Path:
    """``dest`` holding ``folder`` exported for ``framework`` at ``scheme``, made once."""
    _made_once(dest, lambda: _export(framework, folder, scheme, dest, cache_dir))
    return dest


def _export(framework: str, folder: Path, scheme: Scheme, dest: Path, cache_dir: Path) -> None:
    python = export_python(cache_dir)
    scratch = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        out = scratch / "out"
        if framework == "openvino-genai":
            command, tool = openvino_command(python, folder, scheme, out), "optimum-intel"
        else:
            command = builder_command(python, folder, scheme, out, scratch / "work")
            tool = "the onnxruntime-genai builder"
        # the tools write caches and telemetry beside the user's home; keep them here
        _run(command, f"{tool} export of {folder.name}", cwd=scratch)
        (out / ".complete").write_text(" ".join(command[3:]) + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(out, dest)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
