"""Text that every reader accepts: JSON with no NaN (``finite_json``) and its encoding of
numpy values and paths, and data made safe to show -- one terminal line, a Markdown cell, a
matplotlib label. Pure functions, no files: the gate renders with them (the file writers
are perfsuite.writing)."""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path


def json_default(o):
    """json.dumps default: numpy scalars and arrays, paths; anything else is an error."""
    import numpy as np

    if isinstance(o, (np.generic, np.ndarray)):
        return o.tolist()  # a numpy scalar's tolist() is its item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def plain_value(value) -> bool | int | float | str:
    """A framework's setting as a JSON value of its own type: ``True``, ``1``, an OpenVINO
    element type by its short name (``"f32"``, as a precision hint is written), an enum by its
    member name; ``str()`` would record Python reprs such as ``<Type: 'float32'>``."""
    if isinstance(value, bool | int | float | str):
        return value
    if callable(short := getattr(value, "get_type_name", None)):
        return short()
    return getattr(value, "name", None) or str(value)


class NotFinite(ValueError):
    """A value with no JSON form (NaN, an infinity, often a finite input after a unit
    conversion); the message names where it is."""


def finite_json(data, **options) -> str:
    """``json.dumps`` that refuses NaN and infinities, naming the first one's place: what
    perfsuite writes is JSON that every reader accepts."""
    try:
        return json.dumps(data, allow_nan=False, **options)
    except ValueError:
        where = _first_non_finite(json.loads(json.dumps(data, default=options.get("default"))))
        if where is None:
            raise
        raise NotFinite(
            f"{where[0] or 'the value'} is {where[1]}, which JSON cannot hold"
        ) from None


def _first_non_finite(value, where: str = ""):
    if isinstance(value, float) and not math.isfinite(value):
        return where, value
    if isinstance(value, dict):
        items = ((f"[{k!r}]", v) for k, v in value.items())
    else:
        items = ((f"[{i}]", v) for i, v in enumerate(value if isinstance(value, list) else ()))
    for key, item in items:
        if found := _first_non_finite(item, where + key):
            return found
    return None


_LINE_BREAKS = re.compile(r"[\r\n\v\f\x85\u2028\u2029]+")
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _one_line(text) -> str:
    return _LINE_BREAKS.sub(" ", str(text))


def md_cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell or list item (a PR comment, a job summary):
    a ``|`` or a line break would end the cell, a backtick would open a code span, GitHub
    renders HTML such as ``<img>`` and images ``![x](url)``, and ``@name`` notifies a user."""
    text = html.escape(_one_line(text), quote=False)
    return re.sub(r"([|`\[\]@])", r"\\\1", text)


def md_code(text: str) -> str:
    """``text`` as inline code in a Markdown table cell: its fence is longer than any run of
    backticks inside (which would end it), and ``|`` is escaped (GitHub splits cells first)."""
    s = _one_line(text).replace("|", "\\|")
    fence = "`" * (max(map(len, re.findall("`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def terminal_line(text: str) -> str:
    """``text`` safe as one line of terminal output: control characters (an escape sequence
    that clears the screen or retitles the window, a carriage return that overwrites the
    line, a line break that forges another) are shown as ``\\xNN``, not obeyed."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


# what a terminal obeys, but colour (SGR, "ESC[...m"): kept so rich's styling still shows
_OBEYED = re.compile(r"(\x1b\[[0-9;]*m)|([\x00-\x08\x0b-\x1f\x7f-\x9f])")


class SafeTerminal:
    """A text stream (stdout, stderr) that shows control characters as ``\\xNN`` instead
    of passing them to the terminal: text read from files (a reference's SKU, a reason, a
    pattern) cannot clear the screen, move the cursor or retitle the window, whichever line
    prints it. Line breaks, tabs and colour codes pass; bytes (``.buffer``) pass untouched."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(_OBEYED.sub(_escape_unsafe, text))
        return len(text)

    def __getattr__(self, name):  # flush, fileno, isatty, encoding, buffer ...
        return getattr(self._stream, name)


def _escape_unsafe(m: re.Match) -> str:
    return m.group(1) or f"\\x{ord(m.group(2)):02x}"


def plot_label(text: str) -> str:
    """``text`` as literal matplotlib text: a ``$`` in a benchmark id or host name would
    otherwise start mathtext, and a page's charts fail to draw on it."""
    return str(text).replace("$", r"\$")
