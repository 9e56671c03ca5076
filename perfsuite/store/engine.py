"""The results history's database: opening a SQLAlchemy URL (the embedded default is a SQLite
file in the user's data directory; ``postgresql+psycopg://`` serves a fleet), one-line
errors with any password hidden, and the schema brought to the newest Alembic revision
whenever a store is opened. ``Database`` is the base every part of the history
(store.importing, store.queries, ...) builds on: each part alone is a usable store."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import random
import sqlite3
import time
from pathlib import Path
from urllib.parse import unquote

import sqlalchemy as sa
from platformdirs import user_data_path
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from perfsuite.store import schema as t
from perfsuite.urls import MASK, hide_secrets, secrets_of

MIGRATIONS = Path(__file__).parent / "migrations"
ENV = "PERFSUITE_STORE"


class StoreError(ValueError):
    """A store that cannot be opened, read or written, or an input that cannot be imported
    (exit 2); one line, with any password in the store's URL hidden."""


class StoreBusy(StoreError):
    """SQLite said "database is locked"."""


LOCK_TRIES = 6
BUSY_TIMEOUT_S = 60.0  # SQLite waits this long for another writer's lock


def retrying(write):
    """Run a write (one transaction: a failed try left nothing) again when SQLite said
    "database is locked" at once, without waiting out its busy timeout -- as it does where
    waiting could deadlock, e.g. two first openings turning the file to WAL together. A lock
    held past the whole timeout is an error, not a reason to wait six times as long."""

    @functools.wraps(write)
    def run(*args, **kwargs):
        for attempt in range(LOCK_TRIES):
            began = time.monotonic()
            try:
                return write(*args, **kwargs)
            except StoreBusy:
                waited = time.monotonic() - began
                if attempt == LOCK_TRIES - 1 or waited > BUSY_TIMEOUT_S / 2:
                    raise
                time.sleep(0.05 * 2**attempt * (1 + random.random()))
        raise AssertionError("unreachable")

    return run


def default_url() -> str:
    """``$PERFSUITE_STORE``, else a SQLite file in the user's data directory."""
    return os.environ.get(ENV) or f"sqlite:///{user_data_path('perfsuite') / 'history.sqlite'}"


def utc(value: dt.datetime) -> dt.datetime:
    # SQLite hands back naive datetimes; everything stored is UTC.
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


class Database:
    schemes = ("sqlite", "postgresql", "postgresql+psycopg")

    def __init__(self, url: str):
        self.url = url
        try:
            url_ = sa.engine.make_url(url)
        except (ArgumentError, ValueError):  # ValueError: a port that is not a number
            raise StoreError(f"result store {hide_secrets(url)!r} is not a URL") from None
        self.safe_url = hide_secrets(url)
        if "@" in str(url).split("://", 1)[-1].rpartition("@")[0]:  # the driver would split there
            raise StoreError(
                f"result store {self.safe_url!r}: its user or password holds a raw '@'; "
                "percent-encode it as %40"
            )
        kwargs: dict = {}
        if url_.get_backend_name() == "sqlite":
            _check_sqlite_url(url_, self.safe_url)
            if url_.database:
                folder = Path(url_.database).parent
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    msg = f"result store {self.safe_url}: {exc.strerror}: {folder}"
                    raise StoreError(msg) from None
            kwargs["connect_args"] = {"timeout": BUSY_TIMEOUT_S}  # for another writer's lock
        try:
            self.engine = sa.create_engine(url_, **kwargs)
        except (NoSuchModuleError, ImportError) as exc:
            raise StoreError(f"result store {self.safe_url}: no driver for it ({exc})") from None
        if url_.get_backend_name() == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
            sa.event.listen(self.engine, "begin", _sqlite_begin)
        sa.event.listen(self.engine, "handle_error", self._one_line)
        # writes take SQLite's write lock up front (_sqlite_begin); reads do not wait for it
        self.writer = self.engine.execution_options(write=True)
        self.migrate()

    def _one_line(self, context) -> StoreError | None:
        """Every database error (server gone, refused login, read-only or full or corrupt
        file) becomes one StoreError line naming the store; SQLAlchemy raises it instead.
        Anything else (Ctrl-C, a bug) goes on as it is."""
        if context.sqlalchemy_exception is None:  # not the driver's: not the store's fault
            return None
        return self._error(context.original_exception)

    def _error(self, exc: BaseException) -> StoreError:
        lines = str(exc).strip().splitlines()
        reason = lines[0] if lines else type(exc).__name__
        for secret in secrets_of(self.url):  # a driver may quote one, decoded or not
            reason = reason.replace(secret, MASK).replace(unquote(secret), MASK)
        reason = hide_secrets(reason)
        busy = "database is locked" in reason
        return (StoreBusy if busy else StoreError)(f"result store {self.safe_url}: {reason}")

    def close(self) -> None:
        self.engine.dispose()

    # --- schema -------------------------------------------------------------------------
    @retrying
    def migrate(self) -> None:
        """Bring the schema to this perfsuite's newest revision; a store written by a newer
        perfsuite is refused, never downgraded."""
        # lazy: Alembic takes 0.35 s to import, and the pytest plugin imports this module
        from alembic import command
        from alembic.config import Config
        from alembic.migration import MigrationContext
        from alembic.script import ScriptDirectory

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        scripts = ScriptDirectory.from_config(cfg)
        try:
            with self.engine.connect() as conn:  # a read: a read-only store at head opens
                current = MigrationContext.configure(conn).get_current_revision()
            if current == scripts.get_current_head():
                return
            if current and current not in {s.revision for s in scripts.walk_revisions()}:
                raise StoreError(
                    f"result store {self.safe_url}: written by a newer perfsuite (schema "
                    f"revision {current}; this one knows up to {scripts.get_current_head()})"
                    ": upgrade perfsuite to use it"
                )
            with self.schema_transaction() as conn:
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        except DBAPIError as exc:  # raised before the handle_error event could see it
            raise self._error(exc.orig or exc) from None

    @contextlib.contextmanager
    def schema_transaction(self):
        """A transaction to migrate in. SQLite: foreign keys off, as Alembic's batch mode
        needs -- it rebuilds a table by copy and drop, and with them on the drop cascades
        and deletes every result. PostgreSQL: two first openings take turns."""
        with self.writer.connect() as conn:
            raw = conn.connection.dbapi_connection if conn.dialect.name == "sqlite" else None
            if raw:
                self._pragma(raw, "foreign_keys=OFF")  # a no-op inside a transaction
            try:
                with conn.begin():
                    if not raw:
                        conn.execute(sa.text("SELECT pg_advisory_xact_lock(7070797265)"))
                    yield conn
            finally:
                if raw:
                    with contextlib.suppress(StoreError):  # not over the migration's own error
                        self._pragma(raw, "foreign_keys=ON")

    def _pragma(self, raw, setting: str) -> None:
        """On the driver's connection, which SQLAlchemy does not see: errors made one line."""
        try:
            raw.execute(f"PRAGMA {setting}")
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def revision(self) -> str | None:
        from alembic.migration import MigrationContext  # lazy, as in migrate

        with self.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    # --- shared by the parts --------------------------------------------------------------
    def _run_id(self, conn, ref: str) -> int:
        """A run by its id, or by a prefix of its key (at least 6 hex digits)."""
        ref = str(ref)
        as_id = int(ref) if ref.isascii() and ref.isdigit() and len(ref) < 19 else None  # int64
        if as_id and conn.scalar(sa.select(t.runs.c.id).where(t.runs.c.id == as_id)):
            return as_id
        if len(ref) >= 6:
            by_key = sa.select(t.runs.c.id).where(t.runs.c.run_key.startswith(ref.lower()))
            found = conn.scalars(by_key).all()
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                raise StoreError(f"run {ref!r} is ambiguous: {len(found)} runs match")
        raise StoreError(f"no run {ref!r} in {self.safe_url}")


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    dbapi_conn.isolation_level = None  # transactions are begun by _sqlite_begin
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")  # readers do not wait for the nightly writer
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _sqlite_begin(conn) -> None:
    """A write takes the write lock up front (BEGIN IMMEDIATE): a deferred transaction that
    reads and then writes fails at once (SQLITE_BUSY, no waiting) when another writer
    committed in between -- two concurrent importers lost runs that way. A read is one
    snapshot (BEGIN), so a reader never sees half of a run."""
    write = conn.get_execution_options().get("write")
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _check_sqlite_url(url: sa.engine.URL, safe_url: str) -> None:
    """A history must outlive the process: ``sqlite://`` and ``:memory:`` would take runs
    and forget them; ``sqlite://name`` (two slashes) is SQLAlchemy's in-memory form too."""
    if url.host:
        raise StoreError(
            f"result store {safe_url!r}: a SQLite file needs three slashes "
            f"(sqlite:///{url.host}{'/' + url.database if url.database else ''})"
        )
    if not url.database or url.database == ":memory:" or url.query.get("mode") == "memory":
        raise StoreError(
            f"result store {safe_url!r} is in memory and would forget every run when the "
            "process ends; give a file (sqlite:///path/history.sqlite)"
        )


def serialise(conn) -> None:
    """PostgreSQL: one importer at a time (a transaction-scoped advisory lock, re-entrant), as
    BEGIN IMMEDIATE makes SQLite writers take turns."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(7070797266)"))


def insert(conn, table: sa.Table, **values) -> int:
    check_storable(table, values)
    return conn.execute(table.insert().values(**values)).inserted_primary_key[0]


def _texts(value):
    """Every string in a column's value, JSON documents' keys and values included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(k)
            yield from _texts(v)
    elif isinstance(value, list | tuple):
        for v in value:
            if isinstance(v, str | dict | list | tuple):
                yield from _texts(v)


def check_storable(table: sa.Table, *rows: dict) -> None:
    """Refuse on every backend what PostgreSQL cannot keep -- NUL, text that is not UTF-8,
    text longer than its column -- so a history moves between SQLite and PostgreSQL, and the
    line names the field instead of the server's "value too long for type varchar(32)"."""
    for row in rows:
        for name, value in row.items():
            limit = getattr(table.c[name].type, "length", None) if name in table.c else None
            for text in _texts(value):
                where = f"{table.name}.{name}"
                if "\x00" in text:
                    raise StoreError(f"{where}: holds a NUL character, which no store keeps")
                if not text.isascii():
                    try:
                        text.encode()
                    except UnicodeEncodeError:
                        raise StoreError(f"{where}: text that is not valid UTF-8") from None
                if limit and isinstance(value, str) and len(value) > limit:
                    raise StoreError(f"{where}: {len(value)} characters; it keeps {limit}")
