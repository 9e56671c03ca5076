"""What other packages add to perfsuite, found through entry points (pytest finds its plugins
through ``pytest11`` the same way). perfsuite declares its own in its pyproject.toml:

- ``perfsuite.backends``: name -> a ``perfsuite.prepare.backends.Backend`` subclass;
- ``perfsuite.precisions``: name -> a ``perfsuite.prepare.quantize.Quantizer``;
- ``perfsuite.executors``: name -> an ``perfsuite.execute.executors.Executor`` class, built
  with keyword options (``timeout`` at least).

A package declares its own the same way (docs/design/architecture.md, "Where a change goes").
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, MutableMapping

from perfsuite import plugins

BACKENDS = "perfsuite.backends"
PRECISIONS = "perfsuite.precisions"
EXECUTORS = "perfsuite.executors"


class Registry(MutableMapping):
    """name -> object of one entry-point group (``perfsuite.plugins.load``, on first use and
    again when ``sys.path`` changed), plus run-time registrations (a conftest's ``Backend``
    subclass).

    ``make`` turns what an entry point names into the registered object (a class into its
    instance, say). Entries registered at run time win over entry points of the same name
    (a built-in backend registers both ways on import: the same class)."""

    def __init__(self, group: str, make: Callable[[object], object] = lambda obj: obj):
        self.group = group
        self._make = make
        self._found: dict = {}
        self._added: dict = {}
        self._path: tuple[str, ...] | None = None

    def _entries(self) -> dict:
        path = tuple(sys.path)
        if path != self._path:
            self._path = path  # first: loading defines classes that register here
            self._found = plugins.load(self.group, self._make)
        return {**self._found, **self._added}

    def named(self, name: str, what: str):
        """The entry ``name``; a ValueError listing the known ones when there is none."""
        if name not in self:
            known = ", ".join(self) or (
                f"no {self.group} entry points found: perfsuite's installed metadata is missing "
                "or stale (reinstall it: pip install -e .)"
            )
            raise ValueError(f"unknown {what} {name!r}; choose one of {known}")
        return self[name]

    def runtime_only(self) -> dict:
        """Entries registered at run time that no entry point declares (a conftest's)."""
        self._entries()
        return {k: v for k, v in self._added.items() if k not in self._found}

    def __getitem__(self, name: str):
        return self._entries()[name]

    def __setitem__(self, name: str, obj) -> None:
        self._added[name] = obj

    def __delitem__(self, name: str) -> None:
        if name not in self._entries():
            raise KeyError(name)
        self._added.pop(name, None)
        self._found.pop(name, None)  # until sys.path changes

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def __repr__(self) -> str:
        return f"Registry({self.group!r}, {sorted(self._entries())})"
