"""Writing files so that nothing is lost: atomic replace (temporary file + fsync + rename) and
the JSON encoding every record writer uses. Shared by the store, the reports and the
artefact cache."""

from __future__ import annotations

import html
import json
import os
import re
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes, *, executable: bool = False) -> None:
    """Write via a temporary file in the same directory and rename: readers never see a
    partial file (nor a script not yet executable), and a crash leaves the old content (or
    nothing) in place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, (0o777 if executable else 0o666) & ~umask)  # not 0600: caches are shared
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def json_default(o):
    """json.dumps default: numpy scalars and arrays, paths; anything else is an error."""
    import numpy as np

    if isinstance(o, (np.generic, np.ndarray)):
        return o.tolist()  # a numpy scalar's tolist() is its item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def atomic_write_text(path: Path, text: str, *, executable: bool = False) -> None:
    atomic_write_bytes(path, text.encode(), executable=executable)


def write_json(path: Path, data, **options) -> Path:
    """``data`` as indented JSON at ``path``, atomically: the form of every record file."""
    atomic_write_text(path, json.dumps(data, indent=1, **options))
    return path


class NotWritable(OSError):
    """An output location that cannot take files; the message is one line naming it."""


def check_writable_dir(path: Path | str, what: str) -> None:
    """Fail before any work when ``path`` cannot become a writable directory: it is a file,
    or it (or the nearest existing ancestor it would be created under) is not writable.
    Leaves nothing behind."""
    path = Path(path)
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        where = "is a file" if probe == path else f"cannot be created: {probe} is a file"
        raise NotWritable(f"{what} {path} {where}, not a directory")
    try:  # a real probe: access() says yes to root even on a read-only file system
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".perfsuite-probe-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        where = "is not writable" if probe == path else f"cannot be created under {probe}"
        raise NotWritable(f"{what} {path} {where} ({exc.strerror})") from None


_LINE_BREAKS = re.compile(r"[\r\n\v\f\x85\u2028\u2029]+")
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _one_line(text) -> str:
    return _LINE_BREAKS.sub(" ", str(text))


def hide_passwords(text: str) -> str:
    """``text`` with the password of every URL in it (``scheme://user:password@host``)
    masked: for lines that echo what the user typed."""
    return re.sub(r"(://[^:/@\s]*:)\S*@", r"\1***@", str(text))  # to the last @: a raw @


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


def plot_label(text: str) -> str:
    """``text`` as literal matplotlib text: a ``$`` in a benchmark id or host name would
    otherwise start mathtext, and a page's charts fail to draw on it."""
    return str(text).replace("$", r"\$")
