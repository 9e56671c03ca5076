"""Writing files so that nothing is lost: atomic replace (temporary file + fsync + rename),
the one append (the CI step summary) and record files as JSON (perfsuite.text's
``finite_json``). Shared by the store, the reports and the artefact cache."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from perfsuite.text import finite_json


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


def atomic_write_text(path: Path, text: str, *, executable: bool = False) -> None:
    atomic_write_bytes(path, text.encode(), executable=executable)


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
