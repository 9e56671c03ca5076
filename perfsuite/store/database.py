"""The results history: a SQL database chosen by SQLAlchemy URL, as pytest-benchmark chooses
its storage. The embedded default is a SQLite file in the user's data directory; a
``postgresql+psycopg://`` URL serves a fleet. The schema (store/schema.py) is brought to the
newest Alembic revision whenever a store is opened.

Every write is one transaction, and everything imported is keyed by a hash of its content,
so importing a run directory, baseline or qualification report twice adds nothing."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import json
import os
import random
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import sqlalchemy as sa
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from perfsuite import records
from perfsuite.store import schema as t
from perfsuite.store.baseline import BaselineError, Saved, merged, thin_samples
from perfsuite.store.files import SUMMARY, read_run
from perfsuite.urls import MASK, hide_secrets, secrets_of

MIGRATIONS = Path(__file__).parent / "migrations"
ENV = "PERFSUITE_STORE"
METRICS = ("latency_median_ms", "latency_p90_ms", "latency_p99_ms", "throughput_ips")


class StoreError(ValueError):
    """A store that cannot be opened, read or written, or an input that cannot be imported
    (exit 2); one line, with any password in the store's URL hidden."""


class StoreBusy(StoreError):
    """SQLite said "database is locked"."""


LOCK_TRIES = 6
BUSY_TIMEOUT_S = 60.0  # SQLite waits this long for another writer's lock


def _retrying(write):
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
    from platformdirs import user_data_path

    return os.environ.get(ENV) or f"sqlite:///{user_data_path('perfsuite') / 'history.sqlite'}"


def _utc(value: dt.datetime) -> dt.datetime:
    # SQLite hands back naive datetimes; everything stored is UTC.
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _key(*parts) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _host_key(fp: records.Fingerprint) -> str:
    # A host is its hardware plus its name: software and clocks change, the host does not.
    ident = {k: v for k, v in fp.fields.items() if fp.classes.get(k) == "must_match"}
    ident["os.hostname"] = fp.fields.get("os.hostname")
    return _key(fp.hardware_class, ident)


@dataclass(frozen=True)
class Imported:
    kind: str  # run | baseline | qualification
    source: str
    added: bool  # False: already in the store


@dataclass(frozen=True)
class SeriesPoint:
    run_id: int
    run_key: str
    started_at: dt.datetime
    value: float
    low: float  # spread band: quartiles of the run's (thinned) samples
    high: float
    commit: str | None = None
    samples_s: tuple[float, ...] = ()  # thinned, as stored
    headline: records.Headline | None = None  # the run's gated rate (server/offline points)


@dataclass(frozen=True)
class StoredRun:
    """A run's line in the history (``runs``), with its host's class and its point count."""

    id: int
    run_key: str
    kind: str  # run | baseline
    host_id: int
    started_at: dt.datetime
    profile: str
    perfsuite_version: str | None
    software: dict
    commit: str | None
    source: str | None
    excluded: bool
    excluded_reason: str | None
    branch: str | None
    dirty: bool | None
    repository: str | None
    hardware_class: str
    points: int


@dataclass(frozen=True)
class Annotation:
    id: int
    benchmarks: str  # an fnmatch glob of point ids
    hardware_class: str | None  # None: every class
    run_id: int  # from this run on
    accepted: bool  # an accepted change starts the series anew
    text: str
    created_at: dt.datetime
    run_key: str
    started_at: dt.datetime


@dataclass(frozen=True)
class StoredQualification:
    host_id: int
    recorded_at: dt.datetime
    report: records.QualificationReport


class HistoryStore:
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

    # --- schema -------------------------------------------------------------------------
    @_retrying
    def migrate(self) -> None:
        """Bring the schema to this perfsuite's newest revision; a store written by a newer
        perfsuite is refused, never downgraded."""
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
        import sqlite3

        try:
            raw.execute(f"PRAGMA {setting}")
        except sqlite3.Error as exc:
            raise self._error(exc) from None

    def revision(self) -> str | None:
        from alembic.migration import MigrationContext

        with self.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    # --- writing ------------------------------------------------------------------------
    def import_path(self, path: Path, *, commit: str | None = None) -> Imported:
        """Import a run directory (or its summary.json), a baseline file or a
        qualification.json; which one it is, is read from the files."""
        path = Path(path)
        if path.is_dir() or path.name == SUMMARY:
            return self.import_run(path, commit=commit)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: unreadable: {exc}") from None
        schema = str(data.get("schema", "")) if isinstance(data, dict) else ""
        if schema.startswith("perfsuite.baseline/"):
            return self.import_baseline(path, data)
        if schema.startswith("perfsuite.qualification/"):
            return self.import_qualification(path, data)
        raise StoreError(
            f"{path}: neither a run directory, a baseline nor a qualification report "
            f"(schema {schema or 'missing'})"
        )

    def import_run(self, path: Path, *, commit: str | None = None) -> Imported:
        try:
            run = read_run(path)
        except BaselineError as exc:
            raise StoreError(str(exc)) from None
        return Imported("run", run.source, self.add_run(run, commit=commit))

    def add_run(self, run: records.Run, *, commit: str | None = None) -> bool:
        """Keep a finished run, from the objects in memory; False when it is here already
        (keyed by its content: the same run from memory or from its directory is one).
        ``commit`` overrides the one the run recorded."""
        fp = run.summary.fingerprint
        results = run.results
        verdicts = {v.id: v for v in run.gate.verdicts} if run.gate else {}
        started = dt.datetime.fromtimestamp(min(r.timestamp for r in results), dt.UTC)
        # keyed by every field of each result, whether the file had it or not
        content = [r.model_dump(mode="json", by_alias=True) for r in results]
        row = {
            "run_key": _key("run", fp.fields, content),
            "kind": "run",
            "started_at": started,
            "profile": run.summary.profile_name or "?",
            "perfsuite_version": fp.fields.get("software.perfsuite"),
            "software": results[0].software,
            "source": run.source,
            **(run.summary.source or records.Provenance()).model_dump(exclude={"commit"}),
            "commit": commit or (run.summary.source and run.summary.source.commit),
        }
        return self._write(fp, row, results, verdicts)

    def import_baseline(self, path: Path, data: dict) -> Imported:
        """A baseline as one run of kind 'baseline' (its entries' samples), dated by its
        newest entry; history series leave baselines out."""
        try:
            base = records.load_baseline(data, f"baseline {path}")
        except records.RecordError as exc:
            raise StoreError(str(exc)) from None
        fp = base.fingerprint.model_copy(update={"hardware_class": base.hardware_class})
        results = [
            records.Result(
                id=pid, point=e.point, hardware_class=base.hardware_class, software=e.software,
                timestamp=1.0, status="ok", samples_s=e.samples_s, stats=e.stats,
                headline=e.headline,
            )
            for pid, e in base.entries.items()
        ]  # fmt: skip
        newest = max(e.recorded for e in base.entries.values())
        run = {
            "run_key": _key("baseline", records.dump(base)),
            "kind": "baseline",
            "started_at": _utc(dt.datetime.fromisoformat(newest.replace("Z", "+00:00"))),
            "profile": base.profile,
            "perfsuite_version": fp.fields.get("software.perfsuite"),
            "software": results[0].software if results else {},
            "commit": None,
            "source": str(path),
        }
        return Imported("baseline", str(path), self._write(fp, run, results, {}))

    # --- baselines (the Store protocol): the whole document, one row per class/profile -------
    def baseline_location(self, hardware_class: str, profile: str) -> str:
        return f"{self.safe_url} (baseline {hardware_class}/{profile})"

    def load_baseline(self, hardware_class: str, profile: str) -> records.Baseline | None:
        with self.engine.connect() as conn:
            doc = conn.scalar(_baseline_query(hardware_class, profile))
        if doc is None:
            return None
        try:
            return records.load_baseline(doc, self.baseline_location(hardware_class, profile))
        except records.RecordError as exc:
            raise BaselineError(str(exc)) from None

    @_retrying
    def save_baseline(
        self, fingerprint: records.Fingerprint | dict, profile: str, results, **how
    ) -> Saved:
        """``baseline.merged`` in one transaction that holds the write lock (SQLite: BEGIN
        IMMEDIATE; PostgreSQL: an advisory lock), so two runs saving take turns."""
        hw = records.Fingerprint.model_validate(fingerprint).hardware_class
        where = self.baseline_location(hw, profile)
        with self.writer.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(7070797267)"))
            doc = conn.scalar(_baseline_query(hw, profile))
            old = None if doc is None else records.load_baseline(doc, where)
            new, added, updated = merged(old, fingerprint, profile, results, where=where, **how)
            _check_storable(t.baselines, {"hardware_class": hw, "profile": profile})
            c = t.baselines.c
            if old is None:
                row = t.baselines.insert().values(hardware_class=hw, profile=profile)
            else:
                row = t.baselines.update().where(c.hardware_class == hw, c.profile == profile)
            conn.execute(row.values(document=records.dump(new), saved_at=dt.datetime.now(dt.UTC)))
        return Saved(where, added, updated)

    def close(self) -> None:
        self.engine.dispose()

    @_retrying
    def import_qualification(self, path: Path, data: dict) -> Imported:
        try:
            qualification = records.load_qualification(data, str(path))
            fp = records.Fingerprint.model_validate(qualification.fingerprint)
        except (records.RecordError, ValueError) as exc:
            raise StoreError(str(exc).splitlines()[0]) from None
        report = records.dump(qualification)
        key = _key("qualification", report)
        if saved := qualification.measurements.recorded_at:
            when = _utc(dt.datetime.fromisoformat(saved))
        else:
            when = dt.datetime.fromtimestamp(Path(path).stat().st_mtime, dt.UTC)
        q = t.qualifications.c
        with self.writer.begin() as conn:
            _serialise(conn)
            if conn.scalar(sa.select(q.id).where(q.report_key == key)):
                return Imported("qualification", str(path), False)
            _insert(
                conn,
                t.qualifications,
                report_key=key,
                host_id=self._host(conn, fp),
                recorded_at=when,
                verdict=qualification.verdict,
                report=report,
            )
        return Imported("qualification", str(path), True)

    def _host(self, conn, fp: records.Fingerprint) -> int:
        """The host's id, added if new; callers hold the importers' lock (``_serialise``)."""
        key = _host_key(fp)
        found = conn.scalar(sa.select(t.hosts.c.id).where(t.hosts.c.fingerprint_hash == key))
        if found is not None:
            return found
        doc = {"hardware_class": fp.hardware_class, "fields": fp.fields, "classes": fp.classes}
        return _insert(
            conn, t.hosts, fingerprint_hash=key, hardware_class=fp.hardware_class, fingerprint=doc
        )

    def _benchmarks(self, conn, results: list[records.Result]) -> dict[str, int]:
        b = t.benchmarks.c
        names = sorted({r.id for r in results})
        ids = dict(conn.execute(sa.select(b.name, b.id).where(b.name.in_(names))).all())
        for r in {r.id: r for r in results}.values():
            if r.id not in ids:
                ids[r.id] = _insert(conn, t.benchmarks, name=r.id, point=records.dump(r.point))
        return ids

    @_retrying
    def _write(self, fp: records.Fingerprint, run: dict, recs: list, verdicts: dict) -> bool:
        with self.writer.begin() as conn:
            _serialise(conn)  # before the check: two importers of one run raced past it
            if conn.scalar(sa.select(t.runs.c.id).where(t.runs.c.run_key == run["run_key"])):
                return False
            run_id = _insert(conn, t.runs, host_id=self._host(conn, fp), excluded=False, **run)
            bench = self._benchmarks(conn, recs)
            rows = [_result_row(run_id, bench[r.id], r) for r in recs]
            _check_storable(t.results, *rows)
            conn.execute(t.results.insert(), rows)
            columns = {"verdict", "change", "p_value", "confirmed", "reason"}
            rows = [
                {"run_id": run_id, "benchmark_id": bench[v.id], **v.model_dump(include=columns)}
                for v in verdicts.values()
                if v.id in bench
            ]
            if rows:
                _check_storable(t.verdicts, *rows)
                conn.execute(t.verdicts.insert(), rows)
        return True

    @_retrying
    def exclude(self, run_ref: str, reason: str) -> int:
        """Leave a run out of every series (a broken night), with the reason."""
        with self.writer.begin() as conn:
            run_id = self._run_id(conn, run_ref)
            _check_storable(t.runs, {"excluded_reason": reason})
            row = t.runs.update().where(t.runs.c.id == run_id)
            conn.execute(row.values(excluded=True, excluded_reason=reason))
        return run_id

    @_retrying
    def annotate(
        self,
        benchmarks: str,
        run_ref: str,
        text: str,
        *,
        accepted: bool,
        hardware_class: str | None = None,
    ) -> int:
        """An annotation from run ``run_ref`` on; an accepted change starts the series
        (for change detection) anew there, as Conbench's reference reset does."""
        with self.writer.begin() as conn:
            return _insert(
                conn,
                t.annotations,
                benchmarks=benchmarks,
                hardware_class=hardware_class,
                run_id=self._run_id(conn, run_ref),
                accepted=accepted,
                text=text,
                created_at=dt.datetime.now(dt.UTC),
            )

    def run(self, ref: str | None = None) -> StoredRun:
        """A run by its id or key prefix; None: the newest measured run (not a baseline)."""
        with self.engine.connect() as conn:
            run_id = None if ref is None else self._run_id(conn, ref)
        for r in self.runs():  # newest first
            if r.id == run_id or (run_id is None and r.kind == "run"):
                return r
        raise StoreError(f"no runs in {self.safe_url} yet")

    def load_run(self, ref: str | None = None) -> records.Run:
        """A stored run (default: the newest measured one) for exports, as kept: samples
        thinned, stats as measured. Built without the ``stats.n == len(samples_s)`` check
        that its files passed when they were imported."""
        run = self.run(ref)
        res, b = t.results.c, t.benchmarks.c
        q = sa.select(t.results, b.name, b.point).join(t.benchmarks, b.id == res.benchmark_id)
        with self.engine.connect() as conn:
            rows = conn.execute(q.where(res.run_id == run.id).order_by(b.name)).all()
        source = records.Provenance(
            commit=run.commit, branch=run.branch, dirty=run.dirty, repository=run.repository
        )
        results = [
            records.Result.model_construct(
                id=r.name, point=records.Point.model_validate(r.point), status=r.status,
                hardware_class=run.hardware_class, software=run.software, error=r.error,
                timestamp=run.started_at.timestamp(), samples_s=list(r.samples_s), source=source,
                stats=records.Stats.model_validate(r.stats) if r.stats else None,
                headline=_headline(r.headline),
            )
            for r in rows
        ]  # fmt: skip
        summary = records.RunSummary(
            profile={"name": run.profile},
            fingerprint=self.fingerprint_of(run),
            points=[records.RunPoint(id=r.id, status=r.status) for r in results],
            source=source,
        )
        return records.Run.model_construct(
            summary=summary, results=results, source=f"{self.safe_url} (run {run.run_key[:12]})"
        )

    def fingerprint_of(self, run: StoredRun) -> records.Fingerprint:
        with self.engine.connect() as conn:
            fp = conn.scalar(sa.select(t.hosts.c.fingerprint).where(t.hosts.c.id == run.host_id))
        return records.Fingerprint.model_validate(fp)

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

    @_retrying
    def save_change_points(self, examined: list[tuple[int, str, str]], found: list[dict]) -> None:
        """Replace the stored change points of every examined series (benchmark id,
        hardware class, metric) with ``found``."""
        now = dt.datetime.now(dt.UTC)
        cp = t.change_points.c
        with self.writer.begin() as conn:
            for b, hw, metric in set(examined):
                series = (cp.benchmark_id == b, cp.hardware_class == hw, cp.metric == metric)
                conn.execute(t.change_points.delete().where(*series))
            if found:
                conn.execute(t.change_points.insert(), [c | {"detected_at": now} for c in found])

    # --- reading ------------------------------------------------------------------------
    def runs(self, *, limit: int | None = None) -> list[StoredRun]:
        n = sa.func.count(t.results.c.id).label("points")
        q = (
            sa.select(t.runs, t.hosts.c.hardware_class, n)
            .join(t.hosts, t.hosts.c.id == t.runs.c.host_id)
            .outerjoin(t.results, t.results.c.run_id == t.runs.c.id)
            .group_by(t.runs.c.id, t.hosts.c.hardware_class)
            .order_by(t.runs.c.started_at.desc(), t.runs.c.id.desc())
        )
        if limit:
            q = q.limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(q).all()
        return [StoredRun(**{**r._mapping, "started_at": _utc(r.started_at)}) for r in rows]

    def benchmark_names(self, pattern: str = "*") -> dict[str, int]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(t.benchmarks.c.name, t.benchmarks.c.id)).all()
        return {name: i for name, i in rows if fnmatchcase(name, pattern)}

    def series(
        self,
        pattern: str = "*",
        *,
        metric: str = "latency_median_ms",
        hardware_class: str | None = None,
    ) -> dict[tuple[str, str], list[SeriesPoint]]:
        """Per (benchmark, hardware class): one value per run, oldest first; runs of kind
        'run' that are not excluded, with results that are ok."""
        if metric not in METRICS:
            raise StoreError(f"unknown metric {metric!r}")
        names = self.benchmark_names(pattern)
        if not names:
            return {}
        b, h, r, res = t.benchmarks.c, t.hosts.c, t.runs.c, t.results.c
        value = res[metric]
        q = (
            sa.select(
                b.name,
                h.hardware_class,
                r.id,
                r.run_key,
                r.started_at,
                value,
                res.samples_s,
                r.commit,
                res.headline,
            )
            .join(t.results, res.benchmark_id == b.id)
            .join(t.runs, r.id == res.run_id)
            .join(t.hosts, h.id == r.host_id)
            .where(b.id.in_(list(names.values())), r.kind == "run", r.excluded.is_(False))
            .where(res.status == "ok", value.is_not(None))
            .order_by(r.started_at, r.id)
        )
        if hardware_class:
            q = q.where(h.hardware_class == hardware_class)
        out: dict[tuple[str, str], list[SeriesPoint]] = {}
        with self.engine.connect() as conn:
            for name, hw, run_id, key, at, v, samples, sha, headline in conn.execute(q):
                low, high = _band(samples, v, metric)
                point = SeriesPoint(
                    run_id, key, _utc(at), float(v), low, high, sha, tuple(samples),
                    _headline(headline),
                )  # fmt: skip
                out.setdefault((name, hw), []).append(point)
        return out

    def annotations(self, pattern: str = "*") -> list[Annotation]:
        q = (
            sa.select(t.annotations, t.runs.c.run_key, t.runs.c.started_at)
            .join(t.runs, t.runs.c.id == t.annotations.c.run_id)
            .order_by(t.runs.c.started_at)
        )
        with self.engine.connect() as conn:
            rows = [Annotation(**r._mapping) for r in conn.execute(q)]
        return [a for a in rows if pattern == "*" or _globs_meet(a.benchmarks, pattern)]

    def qualifications(self, hardware_class: str | None = None) -> list[StoredQualification]:
        """The newest qualification report of each host (of one class)."""
        qc, h = t.qualifications.c, t.hosts.c
        q = (
            sa.select(qc.report, qc.recorded_at, h.id.label("host_id"), h.hardware_class)
            .join(t.hosts, h.id == qc.host_id)
            .order_by(qc.recorded_at)
        )
        if hardware_class:
            q = q.where(h.hardware_class == hardware_class)
        with self.engine.connect() as conn:  # oldest first: a host's newest report wins
            newest = {r.host_id: r for r in conn.execute(q)}
        load = records.load_qualification
        return [
            StoredQualification(r.host_id, _utc(r.recorded_at), load(r.report, "stored report"))
            for r in newest.values()
        ]

    def export(self, run_ref: str | None = None) -> list[dict]:
        """Runs with their results as plain JSON (all runs, or one)."""
        with self.engine.connect() as conn:
            q = (
                sa.select(t.runs, t.hosts.c.hardware_class)
                .join(t.hosts, t.hosts.c.id == t.runs.c.host_id)
                .order_by(t.runs.c.started_at)
            )
            if run_ref is not None:
                q = q.where(t.runs.c.id == self._run_id(conn, run_ref))
            runs = [dict(r._mapping) for r in conn.execute(q)]
            res = sa.select(t.results, t.benchmarks.c.name).join(t.benchmarks)
            by_run: dict[int, list[dict]] = {}
            for r in conn.execute(res.where(t.results.c.run_id.in_([x["id"] for x in runs]))):
                by_run.setdefault(r.run_id, []).append(dict(r._mapping))
        for run in runs:
            run["started_at"] = _utc(run["started_at"]).isoformat()
            run["results"] = [
                {k: v for k, v in row.items() if k not in ("id", "run_id", "benchmark_id")}
                for row in sorted(by_run.get(run["id"], []), key=lambda x: x["name"])
            ]
        return runs


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


def _serialise(conn) -> None:
    """PostgreSQL: one importer at a time (a transaction-scoped advisory lock, re-entrant), as
    BEGIN IMMEDIATE makes SQLite writers take turns."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(7070797266)"))


def _insert(conn, table: sa.Table, **values) -> int:
    _check_storable(table, values)
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


def _check_storable(table: sa.Table, *rows: dict) -> None:
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


def _result_row(run_id: int, benchmark_id: int, r: records.Result) -> dict:
    stats = r.stats
    return {
        "run_id": run_id,
        "benchmark_id": benchmark_id,
        "status": r.status,
        "latency_median_ms": stats and stats.latency_p50_ms,
        "latency_p90_ms": stats and stats.latency_p90_ms,
        "latency_p99_ms": stats and stats.latency_p99_ms,
        "throughput_ips": stats and stats.throughput_ips,
        "cv": stats and stats.cv,
        "n": stats and stats.n,
        "samples_s": thin_samples(r.samples_s),
        "stats": stats and records.dump(stats),
        "interference": r.interference and records.dump(r.interference),
        "contaminated": bool(r.interference and r.interference.contaminated),
        "error": r.error,
        "headline": r.headline and records.dump(r.headline),
    }


def _headline(stored: dict | None) -> records.Headline | None:
    """A result's stored headline; None for records without one (and rows from before 0004)."""
    return records.Headline.model_validate(stored) if stored else None


def _band(samples: list[float] | None, value: float, metric: str) -> tuple[float, float]:
    if not samples or metric != "latency_median_ms":
        return value, value
    q1, q3 = np.percentile(np.asarray(samples) * 1e3, [25, 75])
    return float(q1), float(q3)


def _baseline_query(hardware_class: str, profile: str):
    c = t.baselines.c
    return sa.select(c.document).where(c.hardware_class == hardware_class, c.profile == profile)


def _globs_meet(glob: str, pattern: str) -> bool:
    return fnmatchcase(pattern, glob) or fnmatchcase(glob, pattern) or glob == "*"


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


def open_history(url: str | None = None) -> HistoryStore:
    """The history at ``url``; None (not given) is the default store, an empty URL is an
    error rather than silently the default."""
    if url is not None and not str(url).strip():
        raise StoreError("result store '': an empty URL (leave the option out for the default)")
    return HistoryStore(default_url() if url is None else url)
