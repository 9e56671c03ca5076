"""Entry points: how another package extends perfsuite (pytest finds its plugins through
``pytest11`` the same way). Every group (``perfsuite.backends``, ``.precisions``,
``.executors``, ``.rules``, ``.stores``) loads with one policy: the first entry point of a
name on ``sys.path`` wins, as for imports, and one that cannot be loaded is skipped with one
warning line naming its package, group and name: a broken plugin must not take perfsuite,
or the plugins of other packages, down with it."""

from __future__ import annotations

import importlib.metadata
import warnings
from collections.abc import Callable


class PluginWarning(UserWarning):
    """An entry point that could not be loaded, and was skipped."""


def load(group: str, make: Callable[[object], object] = lambda obj: obj) -> dict[str, object]:
    """name -> ``make(what the entry point names)`` for each entry point of ``group``
    (``make``: its instance, its registration); a failure in ``make`` skips it too."""
    found: dict[str, object] = {}
    for ep in importlib.metadata.entry_points(group=group):
        if ep.name in found:
            continue
        try:
            found[ep.name] = make(ep.load())
        except Exception as exc:
            warnings.warn(skipped(ep, exc), PluginWarning, stacklevel=2)
    return found


def skipped(ep: importlib.metadata.EntryPoint, exc: Exception) -> str:
    """The one line a broken entry point gets."""
    package = ep.dist.name if ep.dist is not None else "(unknown package)"
    why = next(iter(str(exc).strip().splitlines()), "")
    return (
        f"perfsuite: skipped plugin {ep.name!r} ({ep.value}) of package {package!r} in "
        f"entry-point group {ep.group}: {type(exc).__name__}: {why}"
    )
