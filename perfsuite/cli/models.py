"""``perfsuite models``: ``list`` the models a run can measure (built in, from packages, and
declared in configuration) and ``inspect`` one (a name or a file): its inputs and outputs
with dtypes and symbolic dimensions, opsets, operators, size, and which framework and
precision can run it here, or why not."""

from __future__ import annotations

import sys
from pathlib import Path

from perfsuite.cli import EXIT_OK, add_verb
from perfsuite.execute.crosscheck import crosscheck
from perfsuite.execute.isolation import WorkerError
from perfsuite.kernels import cpu_features
from perfsuite.options import dims_pairs, positive_int
from perfsuite.prepare import models, quantize
from perfsuite.prepare.backends import BACKENDS, BackendError
from perfsuite.prepare.models import files
from perfsuite.records import ModelSpec
from perfsuite.sweep.declared import load_models
from perfsuite.sweep.plan import skip_reason
from perfsuite.text import finite_json

# a bad name, file or setting; a backend that cannot load the file
INPUT_ERRORS: tuple[type[Exception], ...] = (ValueError, WorkerError, BackendError)


def _declare(args) -> list[ModelSpec]:
    pyproject = Path("pyproject.toml")
    specs = load_models(pyproject if pyproject.is_file() else None, args.config)
    for spec in specs:
        models.declare(spec)
    return specs


def cmd_list(args) -> int:
    declared = {s.name: s for s in _declare(args)}
    for name in models.names():
        spec = declared.get(name)
        source = f"declared: {spec.path}" if spec else _source(models.MODELS[name])
        print(f"{name:<20} {source}")
    return EXIT_OK


def _source(model) -> str:
    module = getattr(model.builder, "__module__", "")
    return "built in" if module.startswith("perfsuite.") else f"package: {module}"


def _spec(args) -> ModelSpec:
    """The spec of ``args.model``: a declared name, a built-in's cached file, or a path."""
    _declare(args)
    spec = models.declared(args.model)
    if spec is not None:
        return spec.model_copy(update={"dims": {**spec.dims, **(args.dims or {})}})
    if args.model in models.names():
        built = models.get(args.model)
        return ModelSpec(name=args.model, path=str(built.path), format="onnx")
    if not Path(args.model).exists():
        known = ", ".join(models.names())
        raise files.ModelError(f"{args.model!r} is neither a model name ({known}) nor a file")
    return files.spec_from_path(args.model, args.dims or {})


def cmd_inspect(args) -> int:
    spec = _spec(args)
    if args.dims:
        files.check_dims(spec, files.signature(spec))
    about = files.describe(spec)
    models.declare(spec)  # this process only: the plan asks the registry for its format
    unavailable = {n: b.unavailable() for n, b in BACKENDS.items()}
    bf16 = bool(cpu_features().get("avx512_bf16"))
    about["runs"] = {
        fw: {
            prec: skip_reason(spec.name, fw, prec, unavailable, bf16) or "yes"
            for prec in quantize.PRECISIONS
        }
        for fw in BACKENDS
    }
    if args.json:
        print(finite_json(about, indent=2))
        return EXIT_OK
    _print(about)
    return EXIT_OK


def cmd_crosscheck(args) -> int:
    _declare(args)
    got = crosscheck(args.model, args.threads, args.batch, args.time, args.turns)
    about = {
        "point": got.point, "perfsuite_ips": got.perfsuite_ips,
        "benchmark_app_ips": got.benchmark_app_ips, "ratio": got.ratio,
        "perfsuite_settings": got.perfsuite_settings,
        "benchmark_app_settings": got.benchmark_app_settings, "benchmark_app": got.command,
    }  # fmt: skip
    if args.json:
        print(finite_json(about, indent=2))
        return EXIT_OK
    ours = ", ".join(f"{x:.1f}" for x in got.perfsuite_ips)
    theirs = ", ".join(f"{x:.1f}" for x in got.benchmark_app_ips)
    print(f"{got.point}, {args.turns} turns of {args.time:g} s each:")
    print(f"  perfsuite      {ours} items/s  ({_settings(got.perfsuite_settings)})")
    print(f"  benchmark_app  {theirs} FPS  ({_settings(got.benchmark_app_settings)})")
    print(f"  perfsuite / benchmark_app = {got.ratio:.2f} (medians)")
    print("  " + " ".join(got.command))
    return EXIT_OK


def _settings(settings: dict) -> str:
    keys = ("INFERENCE_PRECISION_HINT", "INFERENCE_NUM_THREADS", "NUM_STREAMS", "PERFORMANCE_HINT")
    return ", ".join(f"{k}={settings[k]}" for k in keys if k in settings)


def _shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _print(about: dict) -> None:
    out = sys.stdout.write
    out(f"{about['name']}: {about['path']} ({about['format']})\n")
    for kind in ("inputs", "outputs"):
        out(f"{kind}:\n")
        for t in about[kind]:
            out(f"  {t['name']:<24} {t['dtype']:<8} {_shape(t['shape'])}\n")
    if about["opsets"]:
        out("opsets: " + ", ".join(f"{d} {v}" for d, v in about["opsets"].items()) + "\n")
    out("ops: " + ", ".join(f"{op} x{n}" for op, n in about["ops"].items()) + "\n")
    out(f"parameters: {about['params']:,}; weights: {about['weight_bytes'] / 2**20:.2f} MiB; "
        "FLOPs per item: not counted\n")  # fmt: skip
    out("frameworks and precisions on this host:\n")
    for fw, precs in about["runs"].items():
        for prec, why in precs.items():
            out(f"  {fw:<12} {prec:<15} {why}\n")


def add_parser(subparsers) -> None:
    p = add_verb(subparsers, "models")
    sub = p.add_subparsers(dest="action", required=True)
    for name, func, text in (
        ("list", cmd_list, "the models a run can measure, and where each comes from"),
        ("inspect", cmd_inspect, "a model's inputs, outputs, operators, size and runnability"),
        (
            "crosscheck",
            cmd_crosscheck,
            "perfsuite's OpenVINO fp32 figure against benchmark_app "
            "on the same model, shapes, threads and precision, in turns",
        ),
    ):
        q = sub.add_parser(name, help=text)
        q.add_argument("--config", type=Path, help="TOML file with [models.NAME] tables")
        if name == "inspect":
            q.add_argument("model", help="a model name, or an .onnx / IR .xml / exported folder")
            q.add_argument("--dims", type=dims_pairs, help="symbolic dimensions: name=N,...")
        if name == "crosscheck":
            q.add_argument("model", help="a model name (built in or declared)")
            q.add_argument("--threads", type=positive_int, default=1, help="(default: 1)")
            q.add_argument("--batch", type=positive_int, default=1, help="(default: 1)")
            q.add_argument("--time", type=positive_int, default=3,
                           help="whole seconds per side and turn, as benchmark_app -t takes "
                           "(default: 3)")  # fmt: skip
            q.add_argument("--turns", type=positive_int, default=2, help="(default: 2)")
        if name != "list":
            q.add_argument("--json", action="store_true", help="machine-readable output")
        q.set_defaults(func=func)
