"""Writing files so that nothing is lost: atomic replace (temporary file + fsync + rename) and
the JSON encoding every record writer uses. Shared by the store, the reports and the
artefact cache."""

from __future__ import annotations

import html
import json
import math
import os
import re
import stat
import sys
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes, *, executable: bool = False) -> None:
    """Write ``data`` to ``path`` without losing anything, respecting what is there:

    - a regular file (or none): via a temporary file in the same directory and a rename, so
      readers never see a partial file (nor a script not yet executable), and a crash leaves
      the old content (or nothing) in place;
    - a symbolic link: the same, at the link's target (the link stays a link);
    - a FIFO, a device or ``/dev/stdout``: written directly (a rename would replace it with
      a regular file that no reader or device ever sees);
    - ``-``: standard output."""
    if str(path) == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    path = Path(path)
    kind = _kind(path)
    if kind == "directory":
        raise NotWritable(f"{path} is a directory, not a file")
    try:
        _write(path, kind, data, executable)
    except NotWritable:
        raise
    except OSError as exc:  # a full disk, a read-only or vanished folder: one line, named
        raise NotWritable(f"cannot write {path}: {exc.strerror or exc}") from None


def _write(path: Path, kind: str | None, data: bytes, executable: bool) -> None:
    if kind == "special":
        with open(path, "wb") as f:
            f.write(data)
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))  # a dangling link: its would-be target
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        mode = (0o777 if executable else 0o666) & ~umask  # not 0600: caches are shared
        if kind == "file":  # a file the user made (group-readable, say) keeps its mode
            mode = stat.S_IMODE(os.stat(path).st_mode) | (0o111 & mode if executable else 0)
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _kind(path: Path) -> str | None:
    """What is at ``path``, links followed: None, "file", "directory" or "special"."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(mode):
        return "directory"
    return "file" if stat.S_ISREG(mode) else "special"


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


def append_text(path: Path | str, text: str) -> None:
    """Add ``text`` at the end of a file others append to as well ($GITHUB_STEP_SUMMARY):
    an append, not a replace, so what earlier steps wrote stays."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def write_json(path: Path, data, **options) -> Path:
    """``data`` as indented JSON at ``path``, atomically: the form of every record file."""
    atomic_write_text(path, finite_json(data, indent=1, **options))
    return path


class NotWritable(OSError):
    """An output location that cannot take files; the message is one line naming it."""


def check_writable_dir(path: Path | str, what: str) -> None:
    """Fail before any work when ``path`` cannot become a writable directory: it is a file,
    or it (or the nearest existing ancestor it would be created under) is not writable.
    Leaves nothing behind."""
    path = Path(path)
    name = f"{what} {path}" if what else str(path)
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        where = "is a file" if probe == path else f"cannot be created: {probe} is a file"
        raise NotWritable(f"{name} {where}, not a directory")
    try:  # a real probe: access() says yes to root even on a read-only file system
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".perfsuite-probe-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        where = "is not writable" if probe == path else f"cannot be created under {probe}"
        raise NotWritable(f"{name} {where} ({exc.strerror})") from None


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
