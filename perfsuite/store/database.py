"""The results history: a SQL database chosen by SQLAlchemy URL (store.engine), as
pytest-benchmark chooses its storage. ``HistoryStore`` is the whole of it -- the ``Store`` a
sweep writes to and every history protocol (store.protocols) -- made of one part per
protocol; a caller that needs one part opens only that part (``open_queries`` and so on)."""

from __future__ import annotations

from typing import TypeVar

from perfsuite.store.annotating import Annotating
from perfsuite.store.baseline_rows import BaselineRows
from perfsuite.store.engine import Database, StoreError, default_url
from perfsuite.store.importing import Importer
from perfsuite.store.protocols import HistoryAnnotations, HistoryImporter, HistoryQueries
from perfsuite.store.queries import Queries


class HistoryStore(Importer, BaselineRows, Annotating, Queries):
    """Every part over one connection: ``Store``, ``HistoryImporter``, ``HistoryQueries``
    and ``HistoryAnnotations``."""


Part = TypeVar("Part", bound=Database)


def _opened(part: type[Part], url: str | None) -> Part:
    """None (not given) is the default store; an empty URL is an error rather than silently
    the default."""
    if url is not None and not str(url).strip():
        raise StoreError("result store '': an empty URL (leave the option out for the default)")
    return part(default_url() if url is None else url)


def open_history(url: str | None = None) -> HistoryStore:
    """The whole history at ``url`` (None: the default store)."""
    return _opened(HistoryStore, url)


def open_importer(url: str | None = None) -> HistoryImporter:
    return _opened(Importer, url)


def open_queries(url: str | None = None) -> HistoryQueries:
    return _opened(Queries, url)


def open_annotations(url: str | None = None) -> HistoryAnnotations:
    return _opened(Annotating, url)
