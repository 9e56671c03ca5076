"""Runs, baselines and qualification reports into the history (``HistoryImporter``). Every
write is one transaction, and everything imported is keyed by a hash of its content, so
importing a run directory, baseline or qualification report twice adds nothing."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import sqlalchemy as sa

from perfsuite import records
from perfsuite.store import schema as t
from perfsuite.store.baseline import BaselineError, thin_samples
from perfsuite.store.engine import (
    Database,
    StoreError,
    check_storable,
    insert,
    retrying,
    serialise,
    utc,
)
from perfsuite.store.files import SUMMARY, read_run
from perfsuite.store.protocols import Imported


class Importer(Database):
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
            "started_at": utc(dt.datetime.fromisoformat(newest.replace("Z", "+00:00"))),
            "profile": base.profile,
            "perfsuite_version": fp.fields.get("software.perfsuite"),
            "software": results[0].software if results else {},
            "commit": None,
            "source": str(path),
        }
        return Imported("baseline", str(path), self._write(fp, run, results, {}))

    @retrying
    def import_qualification(self, path: Path, data: dict) -> Imported:
        try:
            qualification = records.load_qualification(data, str(path))
            fp = qualification.fingerprint
        except (records.RecordError, ValueError) as exc:
            raise StoreError(str(exc).splitlines()[0]) from None
        report = records.dump(qualification)
        key = _key("qualification", report)
        if saved := qualification.measurements.recorded_at:
            when = utc(dt.datetime.fromisoformat(saved))
        else:
            when = dt.datetime.fromtimestamp(Path(path).stat().st_mtime, dt.UTC)
        q = t.qualifications.c
        with self.writer.begin() as conn:
            serialise(conn)
            if conn.scalar(sa.select(q.id).where(q.report_key == key)):
                return Imported("qualification", str(path), False)
            insert(
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
        """The host's id, added if new; callers hold the importers' lock (``serialise``)."""
        key = _host_key(fp)
        found = conn.scalar(sa.select(t.hosts.c.id).where(t.hosts.c.fingerprint_hash == key))
        if found is not None:
            return found
        doc = {"hardware_class": fp.hardware_class, "fields": fp.fields, "classes": fp.classes}
        return insert(
            conn, t.hosts, fingerprint_hash=key, hardware_class=fp.hardware_class, fingerprint=doc
        )

    def _benchmarks(self, conn, results: list[records.Result]) -> dict[str, int]:
        b = t.benchmarks.c
        names = sorted({r.id for r in results})
        ids = dict(conn.execute(sa.select(b.name, b.id).where(b.name.in_(names))).all())
        for r in {r.id: r for r in results}.values():
            if r.id not in ids:
                ids[r.id] = insert(conn, t.benchmarks, name=r.id, point=records.dump(r.point))
        return ids

    @retrying
    def _write(self, fp: records.Fingerprint, run: dict, recs: list, verdicts: dict) -> bool:
        with self.writer.begin() as conn:
            serialise(conn)  # before the check: two importers of one run raced past it
            if conn.scalar(sa.select(t.runs.c.id).where(t.runs.c.run_key == run["run_key"])):
                return False
            run_id = insert(conn, t.runs, host_id=self._host(conn, fp), excluded=False, **run)
            bench = self._benchmarks(conn, recs)
            rows = [_result_row(run_id, bench[r.id], r) for r in recs]
            check_storable(t.results, *rows)
            conn.execute(t.results.insert(), rows)
            columns = {"verdict", "change", "p_value", "confirmed", "reason"}
            rows = [
                {"run_id": run_id, "benchmark_id": bench[v.id], **v.model_dump(include=columns)}
                for v in verdicts.values()
                if v.id in bench
            ]
            if rows:
                check_storable(t.verdicts, *rows)
                conn.execute(t.verdicts.insert(), rows)
        return True


def _key(*parts) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _host_key(fp: records.Fingerprint) -> str:
    # A host is its hardware plus its name: software and clocks change, the host does not.
    ident = {k: v for k, v in fp.fields.items() if fp.classes.get(k) == "must_match"}
    ident["os.hostname"] = fp.fields.get("os.hostname")
    return _key(fp.hardware_class, ident)


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
        "decode": r.decode and records.dump(r.decode),
    }
