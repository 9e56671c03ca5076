"""Reading the history (``HistoryQueries``): runs, a metric's series per benchmark and
hardware class, annotations, qualification reports, exports; and keeping the change points
found in those series."""

from __future__ import annotations

import datetime as dt
from fnmatch import fnmatchcase

import numpy as np
import sqlalchemy as sa

from perfsuite import records
from perfsuite.store import schema as t
from perfsuite.store.engine import Database, StoreError, retrying, utc
from perfsuite.store.protocols import Annotation, SeriesPoint, StoredQualification, StoredRun

# headline: a scenario or decode point's one number per run (a VALID server rate, tokens/s)
# ttft_s, tpot_s: an LLM point's, from its decode record (tg: medians; llm_server: the p99s
# at the rate its search found), lower is better
DECODE_METRICS = ("ttft_s", "tpot_s")
METRICS = ("latency_median_ms", "latency_p90_ms", "latency_p99_ms", "throughput_ips", "headline",
           *DECODE_METRICS)  # fmt: skip


class Queries(Database):
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
                decode=r.decode and records.DecodeRecord.model_validate(r.decode),
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
        return [StoredRun(**{**r._mapping, "started_at": utc(r.started_at)}) for r in rows]

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
        value = res["decode"] if metric in DECODE_METRICS else res[metric]
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
                runs = ()
                if metric in DECODE_METRICS:
                    v = (v or {}).get(metric)
                    if v is None:
                        continue
                if metric == "headline":  # its value; an INVALID rate is no point of the line
                    if not v or v.get("valid") is False:
                        continue
                    v, runs = v["value"], v.get("runs") or ()
                # a median of searches: their range is its band
                low, high = (min(runs), max(runs)) if runs else _band(samples, v, metric)
                point = SeriesPoint(
                    run_id, key, utc(at), float(v), low, high, sha, tuple(samples),
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
            StoredQualification(r.host_id, utc(r.recorded_at), load(r.report, "stored report"))
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
            run["started_at"] = utc(run["started_at"]).isoformat()
            run["results"] = [
                {k: v for k, v in row.items() if k not in ("id", "run_id", "benchmark_id")}
                for row in sorted(by_run.get(run["id"], []), key=lambda x: x["name"])
            ]
        return runs

    @retrying
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


def _headline(stored: dict | None) -> records.Headline | None:
    """A result's stored headline; None for records without one (and rows from before 0004)."""
    return records.Headline.model_validate(stored) if stored else None


def _band(samples: list[float] | None, value: float, metric: str) -> tuple[float, float]:
    if not samples or metric != "latency_median_ms":
        return value, value
    q1, q3 = np.percentile(np.asarray(samples) * 1e3, [25, 75])
    return float(q1), float(q3)


def _globs_meet(glob: str, pattern: str) -> bool:
    return fnmatchcase(pattern, glob) or fnmatchcase(glob, pattern) or glob == "*"
