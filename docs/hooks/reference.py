"""MkDocs hook: the reference pages are generated from the code at build time.

A page under docs/reference/ holds a marker such as ``<!-- perfsuite-reference: cli -->``;
``on_page_markdown`` replaces it with tables built from the objects the code itself uses:

- ``cli``: ``perfsuite.cli.build_parser()``, every verb and sub-verb with its options;
- ``pytest``: ``perfsuite.plugin.pytest_addoption`` called with a recorder standing in for
  pytest's parser;
- ``profiles``: ``perfsuite/profiles.toml`` (the built-in profiles, key by key);
- ``gate``: the fields of the gate's configuration (``[tool.perfsuite.gate]``);
- ``exit-codes``: the CLI's ``EXIT_*`` constants and pytest's ``ExitCode``;
- ``environment``: the ``PERFSUITE_*`` variables the package reads;
- ``schemas``: ``perfsuite/schemas/*.json``, each schema's top-level properties.

Anything that cannot be generated (an import fails, a table comes out empty, a marker names
no generator) raises ``PluginError`` and fails the build; nothing is skipped silently.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import importlib.resources
import inspect
import json
import pkgutil
import re
import textwrap
import tomllib
from pathlib import Path

from mkdocs.exceptions import PluginError

MARKER = re.compile(r"<!--\s*perfsuite-reference:\s*([a-z-]+)\s*-->")
PACKAGE = Path(__file__).resolve().parents[2] / "perfsuite"


# --------------------------------------------------------------------------- helpers
def _cell(text) -> str:
    """One Markdown table cell: no newlines, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text) -> str:
    return f"`{text}`" if text not in ("", None) else ""


def _table(head: list[str], rows: list[list], what: str) -> str:
    if not rows:
        raise PluginError(f"perfsuite reference: no rows for {what}")
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _help(action) -> str:
    """An option's help with argparse's %-formatting expanded, as --help shows it."""
    text = action.help or ""
    if text == argparse.SUPPRESS:
        return ""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    for key in ("default", "type", "choices"):
        value = params.get(key)
        if key == "choices" and value is not None:
            params[key] = ", ".join(map(str, value))
        elif callable(value):
            params[key] = getattr(value, "__name__", str(value))
    try:
        return text % params
    except (KeyError, TypeError, ValueError) as exc:
        raise PluginError(f"perfsuite reference: cannot expand help {text!r}: {exc}") from None


_TYPES = {
    "positive_float": "number > 0",
    "positive_int": "whole number ≥ 1",
    "fraction": "number in (0, 1)",
    "parse": "comma-separated list",  # options.csv(...) returns a parser named parse
    "Path": "path",
    "int": "whole number",
    "float": "number",
    "str": "text",
}


def _value(action) -> str:
    if action.choices:
        return ", ".join(f"`{c}`" for c in action.choices)
    if action.nargs == 0:
        return "flag"
    t = action.type
    name = getattr(t, "__name__", None) if t is not None else "str"
    text = _TYPES.get(name, name or "text")
    if action.nargs in ("+", "*"):
        text += ", one or more"
    return text


def _default(action) -> str:
    d = action.default
    if d is None or d is False or d is argparse.SUPPRESS:
        return ""
    if isinstance(d, Path):
        d = str(d)
    if isinstance(d, list | tuple):
        d = " ".join(map(str, d))
    return _code(d)


def _option_rows(actions) -> list[list]:
    rows = []
    for a in actions:
        if isinstance(a, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if a.help == argparse.SUPPRESS:
            continue
        names = ", ".join(f"`{s}`" for s in a.option_strings) or f"`{a.metavar or a.dest}`"
        rows.append([names, _value(a), _default(a), _help(a)])
    return rows


# --------------------------------------------------------------------------- generators
def gen_cli() -> str:
    from perfsuite.cli import build_parser

    parser = build_parser()
    out: list[str] = []

    def walk(p: argparse.ArgumentParser, path: list[str], summary: str) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if path:
            out.append(f"{'#' * min(len(path) + 1, 4)} `{' '.join(['perfsuite', *path])}`\n")
            if summary:
                out.append(_cell(summary) + ".\n")
            rows = _option_rows(p._actions)
            if rows:
                out.append(_table(["option", "value", "default", "meaning"], rows, " ".join(path)))
            elif not subs:
                out.append("No options.\n")
        for sub in subs:
            helps = {c.dest: _help(c) for c in sub._choices_actions}
            if not sub.choices:
                raise PluginError(f"perfsuite reference: {' '.join(path)} has no sub-commands")
            for name, child in sub.choices.items():
                walk(child, [*path, name], helps.get(name, ""))

    walk(parser, [], "")
    verbs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not verbs:
        raise PluginError("perfsuite reference: build_parser() has no verbs")
    usage = parser.format_usage().strip()
    return f"```text\n{usage}\n```\n\n" + "\n".join(out)


class _Group:
    def __init__(self, name: str, description: str):
        self.name, self.description, self.options = name, description, []

    def addoption(self, *names, **attrs) -> None:
        # the same Action pytest's argparse would build, so help and types render alike
        scratch = argparse.ArgumentParser(add_help=False)
        self.options.append(scratch.add_argument(*names, **attrs))

    _addoption = addoption


class _Recorder:
    """Stands in for pytest's Parser: records getgroup/addoption/addini calls."""

    def __init__(self):
        self.groups: dict[str, _Group] = {}
        self.ini: list[tuple[str, str, object, object]] = []

    def getgroup(self, name: str, description: str = "", after: str | None = None) -> _Group:
        return self.groups.setdefault(name, _Group(name, description))

    def addoption(self, *names, **attrs) -> None:
        self.getgroup("general").addoption(*names, **attrs)

    def addini(self, name, help, type=None, default=None) -> None:  # noqa: A002 (pytest's names)
        self.ini.append((name, help, type, default))


def gen_pytest() -> str:
    from perfsuite import plugin

    rec = _Recorder()
    plugin.pytest_addoption(rec)
    out = []
    for group in rec.groups.values():
        out.append(f"## {group.description or group.name}\n")
        out.append(
            _table(
                ["option", "value", "default", "meaning"],
                _option_rows(group.options),
                f"pytest group {group.name}",
            )
        )
    if rec.ini:
        rows = [[f"`{n}`", t or "string", _code(d), h] for n, h, t, d in rec.ini]
        out.append("## ini keys\n")
        out.append(_table(["key", "type", "default", "meaning"], rows, "pytest ini keys"))
    if not out:
        raise PluginError("perfsuite reference: pytest_addoption registered nothing")
    return "\n".join(out)


def _toml_type(values) -> str:
    kinds = {type(v).__name__ for v in values}
    names = {
        "str": "text",
        "int": "whole number",
        "float": "number",
        "bool": "true/false",
        "list": "list",
    }
    return " or ".join(sorted(names.get(k, k) for k in kinds))


def gen_profiles() -> str:
    text = importlib.resources.files("perfsuite").joinpath("profiles.toml").read_text()
    profiles = tomllib.loads(text)
    if not profiles:
        raise PluginError("perfsuite reference: profiles.toml has no profiles")
    header = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        header.append(line.lstrip("# ").rstrip())
    comments = {
        m.group(1): m.group(2).strip()
        for m in re.finditer(r"^\[([\w-]+)\]\s*#\s*(.*)$", text, re.MULTILINE)
    }
    keys: list[str] = []
    for prof in profiles.values():
        keys += [k for k in prof if k not in keys]
    names = list(profiles)
    rows = []
    for key in keys:
        present = [p[key] for p in profiles.values() if key in p]
        cells = []
        for name in names:
            v = profiles[name].get(key)
            if v is None:
                cells.append("—")
            elif isinstance(v, list):
                cells.append(", ".join(map(str, v)))
            else:
                cells.append(str(v).lower() if isinstance(v, bool) else str(v))
        rows.append([f"`{key}`", _toml_type(present), *cells])
    out = ["From `perfsuite/profiles.toml`:\n", "> " + "\n> ".join(h for h in header if h), ""]
    out.append(
        _table(
            ["profile", "what it is for"],
            [[f"`{n}`", comments.get(n, "")] for n in names],
            "profiles",
        )
    )
    out.append(_table(["key", "type", *[f"`{n}`" for n in names]], rows, "profile keys"))
    return "\n".join(out)


def _field_comments(cls) -> dict[str, str]:
    """``name: type = default  # comment`` -> {name: comment}, from the class's source."""
    source = textwrap.dedent(inspect.getsource(cls))
    comments: dict[str, str] = {}
    lines = source.splitlines()
    for node in ast.parse(source).body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            line = lines[node.lineno - 1]
            above = []
            i = node.lineno - 2
            while i >= 0 and lines[i].strip().startswith("#"):
                above.insert(0, lines[i].strip().lstrip("# "))
                i -= 1
            inline = line.split("#", 1)[1].strip() if "#" in line else ""
            comments[node.target.id] = " ".join([*above, inline]).strip()
    return comments


def gen_gate() -> str:
    config = importlib.import_module("perfsuite.gate.config")
    cls = getattr(config, "GateConfig", None)
    if cls is None or not dataclasses.is_dataclass(cls):
        raise PluginError("perfsuite reference: perfsuite.gate.config.GateConfig not found")
    comments = _field_comments(cls)
    rows = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = ""
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", f.type)
        rows.append([f"`{f.name}`", kind, _code(json.dumps(default)), comments.get(f.name, "")])
    return (
        f"Keys of `[tool.perfsuite.gate]` (the fields of `{cls.__module__}.{cls.__name__}`; "
        "an unknown key is an input error naming the valid ones):\n\n"
        + _table(["key", "type", "default", "meaning"], rows, "gate keys")
    )


def _cli_modules():
    """perfsuite.cli and its modules (one per verb, plus shared helpers)."""
    cli = importlib.import_module("perfsuite.cli")
    mods = [cli]
    for info in pkgutil.iter_modules(cli.__path__, "perfsuite.cli."):
        if not info.name.endswith(".__main__"):  # importing it would run the CLI
            mods.append(importlib.import_module(info.name))
    return mods


EXIT_MEANINGS = {
    "EXIT_OK": "pass",
    "EXIT_FAIL": "a regression (`compare`, `ab`, `icount`), a FAIL (`qualify`), a failing host "
    "or point (`sweep`, fleet runs), a change (`db changes --fail-on-change`), a failing host "
    "(`db fleet`)",
    "EXIT_USAGE": "usage or input error, one line: bad option, unreadable or invalid file (NaN "
    "samples, unknown schema, bad gate parameters), an output location that cannot take files, "
    "a store URL without a driver, a server that refuses the connection or goes away, a "
    "read-only, full or corrupt SQLite file, a store written by a newer perfsuite, an "
    "in-memory store that would forget its runs, a profile that plans nothing to measure, a "
    "value with no JSON form after unit conversion",
    "EXIT_INTERNAL": "internal error (a bug); `PERFSUITE_DEBUG=1` shows the traceback",
    "EXIT_INTERRUPTED": "interrupted (Ctrl-C), at any moment: one line, and a run's outputs "
    "are complete or absent",
}
PYTEST_MEANINGS = {
    "OK": "pass",
    "TESTS_FAILED": "the gate failed (`--perf-fail-on`), a point failed, or the run could not "
    "be written to the results history (`--perf-store`; the run directory is kept and the "
    "`perfsuite db import` command to add it later is printed)",
    "INTERRUPTED": "interrupted",
    "INTERNAL_ERROR": "internal error, e.g. the gate itself broke (the sweep's report is still "
    "printed)",
    "USAGE_ERROR": "usage error: a bad `--perf-*` option, profile or `[tool.perfsuite.gate]` "
    "value, an output location that cannot take files (`--perf-out`, `--perf-baseline` with "
    "`--perf-save-baseline`, `PERFSUITE_CACHE`), a `--perf-store` that cannot be opened, a path "
    "option written as two words that moved pytest's rootdir (write `--perf-out=DIR`)",
    "NO_TESTS_COLLECTED": "nothing to measure: the profile and options plan no point (one line "
    "says which dimension left none, e.g. a CNN precision for an LLM profile)",
}


def gen_exit_codes() -> str:
    import pytest

    found: dict[str, int] = {}
    for mod in _cli_modules():
        for name, value in vars(mod).items():
            is_code = name.startswith("EXIT_") and isinstance(value, int)
            if is_code and found.setdefault(name, value) != value:
                raise PluginError(f"perfsuite reference: {name} differs between modules")
    missing = set(EXIT_MEANINGS) - set(found)
    if missing:
        raise PluginError(f"perfsuite reference: exit-code constants not found: {sorted(missing)}")
    rows = [[found[n], f"`{n}`", EXIT_MEANINGS.get(n, "")] for n in sorted(found, key=found.get)]
    out = ["## `perfsuite`\n", _table(["code", "constant", "meaning"], rows, "CLI exit codes")]
    rows = [[pytest.ExitCode[n].value, f"`ExitCode.{n}`", m] for n, m in PYTEST_MEANINGS.items()]
    out += ["## `pytest` with the plugin\n", _table(["code", "pytest name", "meaning"], rows, "")]
    return "\n".join(out)


def gen_environment() -> str:
    where: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in re.findall(r"\bPERFSUITE_[A-Z][A-Z0-9_]*\b", path.read_text()):
            where.setdefault(name, set()).add(str(path.relative_to(PACKAGE.parent)))
    rows = [[f"`{n}`", ", ".join(f"`{p}`" for p in sorted(where[n]))] for n in sorted(where)]
    return _table(["variable", "read in"], rows, "environment variables")


def _type_of(schema: dict, defs: dict) -> str:
    if "$ref" in schema:
        return f"`{schema['$ref'].rsplit('/', 1)[-1]}`"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(_type_of(s, defs) for s in schema["anyOf"])
    t = schema.get("type", "any")
    if t == "array" and "items" in schema:
        return f"array of {_type_of(schema['items'], defs)}"
    if t == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type_of(schema['additionalProperties'], defs)}"
    return t


def _describe(schema: dict, defs: dict, comment: str) -> str:
    if schema.get("description"):
        return schema["description"]
    if comment:
        return comment
    for s in [schema, *schema.get("anyOf", [])]:
        ref = s.get("$ref")
        if ref:
            target = defs.get(ref.rsplit("/", 1)[-1], {})
            return target.get("description") or target.get("title", "")
    return schema.get("title", "")


def _record_comments(title: str) -> dict[str, str]:
    """The field comments of the record class a schema was generated from, if it has one."""
    records = importlib.import_module("perfsuite.records")
    cls = getattr(records, title, None)
    return _field_comments(cls) if inspect.isclass(cls) else {}


def gen_schemas() -> str:
    folder = PACKAGE / "schemas"
    files = sorted(folder.glob("*.schema.json"))
    if not files:
        raise PluginError(f"perfsuite reference: no schemas in {folder}")
    out = []
    for path in files:
        schema = json.loads(path.read_text())
        props, defs = schema.get("properties"), schema.get("$defs", {})
        if not props:
            raise PluginError(f"perfsuite reference: {path.name} has no properties")
        required = set(schema.get("required", []))
        comments = _record_comments(schema.get("title", ""))
        version = props.get("schema", {}).get("const", "")
        out.append(f"## {schema.get('title', path.stem)} (`{version}`)\n")
        out.append(
            f"`perfsuite/schemas/{path.name}`"
            + (f": {_cell(schema['description'])}" if schema.get("description") else "")
            + "\n"
        )
        rows = [
            [
                f"`{name}`",
                _type_of(p, defs),
                "yes" if name in required else "",
                _code(json.dumps(p["default"])) if "default" in p else "",
                _describe(p, defs, comments.get(name, "")),
            ]
            for name, p in props.items()
        ]
        out.append(
            _table(["property", "type", "required", "default", "description"], rows, path.name)
        )
    return "\n".join(out)


GENERATORS = {
    "cli": gen_cli,
    "pytest": gen_pytest,
    "profiles": gen_profiles,
    "gate": gen_gate,
    "exit-codes": gen_exit_codes,
    "environment": gen_environment,
    "schemas": gen_schemas,
}


def on_page_markdown(markdown: str, page, config, files) -> str:
    def replace(match: re.Match) -> str:
        name = match.group(1)
        gen = GENERATORS.get(name)
        if gen is None:
            raise PluginError(
                f"{page.file.src_path}: no generator {name!r}; known: {', '.join(GENERATORS)}"
            )
        try:
            return gen()
        except PluginError:
            raise
        except Exception as exc:  # an import or a format the hook does not know: fail loudly
            raise PluginError(
                f"{page.file.src_path}: generating {name!r} failed: {exc.__class__.__name__}: {exc}"
            ) from exc

    return MARKER.sub(replace, markdown)
