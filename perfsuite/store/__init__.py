"""Where runs and baselines are kept, chosen by URL (pytest-benchmark's ``load_storage``):
a plain path or ``file://`` (run directories and baseline files), ``sqlite:///FILE`` or
``postgresql+psycopg://...`` (the results history, ``store.database``). Every store offers
the same ``Store`` protocol; a new kind is a class with ``schemes`` registered here, or by
another package under the ``perfsuite.stores`` entry-point group. The history's readers and
writers open the part they need (``open_queries``, ``open_importer``, ``open_annotations``)
and are typed on its protocol (store.protocols), not on the database class."""

from __future__ import annotations

from perfsuite import plugins, records
from perfsuite.store.baseline import BaselineError, Saved
from perfsuite.store.database import HistoryStore, open_annotations, open_importer, open_queries
from perfsuite.store.engine import ENV, StoreError
from perfsuite.store.files import FileStore
from perfsuite.store.protocols import (
    BaselineStore,
    HistoryAnnotations,
    HistoryImporter,
    HistoryQueries,
    Store,
)
from perfsuite.store.queries import METRICS
from perfsuite.urls import hide_secrets

STORES: dict[str, type] = {}


def register(cls: type) -> type:
    STORES.update(dict.fromkeys(cls.schemes, cls))
    return cls


for _cls in (FileStore, HistoryStore):
    register(_cls)


def scheme_of(url: str) -> str:
    return str(url).split("://", 1)[0] if "://" in str(url) else "file"


def open_store(url: str) -> Store:
    """The store for ``url``: a path or file:// URL, or a database URL."""
    scheme = scheme_of(url)
    if scheme not in STORES:
        plugins.load("perfsuite.stores", register)
    if scheme not in STORES:
        known = ", ".join(f"{s}://" for s in sorted(STORES))
        raise StoreError(
            f"result store {hide_secrets(url)!r}: unknown scheme {scheme!r} (known: {known})"
        )
    return STORES[scheme](url)


def find_baseline(
    url: str, hardware_class: str, profile: str
) -> tuple[records.Baseline | None, str]:
    """The baseline of a class and profile in the store at ``url`` (None if it has none) and
    where it is, or would be. A store that cannot be opened is a BaselineError."""
    try:
        store = open_store(url)
    except StoreError as exc:
        raise BaselineError(str(exc)) from None
    found = store.load_baseline(hardware_class, profile)
    return found, store.baseline_location(hardware_class, profile)


__all__ = [
    "BaselineError", "BaselineStore", "ENV", "HistoryAnnotations", "HistoryImporter",
    "HistoryQueries", "METRICS", "Saved", "Store", "StoreError", "find_baseline",
    "open_annotations", "open_importer", "open_queries", "open_store", "register", "STORES",
]  # fmt: skip
