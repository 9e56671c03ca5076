"""Baselines kept in the history (the ``BaselineStore`` part of a database store): the whole
document, one row per hardware class and profile."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from perfsuite import records
from perfsuite.store import schema as t
from perfsuite.store.baseline import BaselineError, Saved, merged
from perfsuite.store.engine import Database, check_storable, retrying


class BaselineRows(Database):
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

    @retrying
    def save_baseline(
        self, fingerprint: records.Fingerprint, profile: str, results, **how
    ) -> Saved:
        """``baseline.merged`` in one transaction that holds the write lock (SQLite: BEGIN
        IMMEDIATE; PostgreSQL: an advisory lock), so two runs saving take turns."""
        hw = fingerprint.hardware_class
        where = self.baseline_location(hw, profile)
        with self.writer.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(7070797267)"))
            doc = conn.scalar(_baseline_query(hw, profile))
            old = None if doc is None else records.load_baseline(doc, where)
            new, added, updated = merged(old, fingerprint, profile, results, where=where, **how)
            check_storable(t.baselines, {"hardware_class": hw, "profile": profile})
            c = t.baselines.c
            if old is None:
                row = t.baselines.insert().values(hardware_class=hw, profile=profile)
            else:
                row = t.baselines.update().where(c.hardware_class == hw, c.profile == profile)
            conn.execute(row.values(document=records.dump(new), saved_at=dt.datetime.now(dt.UTC)))
        return Saved(where, added, updated)


def _baseline_query(hardware_class: str, profile: str):
    c = t.baselines.c
    return sa.select(c.document).where(c.hardware_class == hardware_class, c.profile == profile)
