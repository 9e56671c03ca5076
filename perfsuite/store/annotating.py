"""What people add to the history after the fact (``HistoryAnnotations``): a note or an
accepted change from a run on, and a run left out of every series."""

from __future__ import annotations

import datetime as dt

from perfsuite.store import schema as t
from perfsuite.store.engine import Database, check_storable, insert, retrying


class Annotating(Database):
    @retrying
    def exclude(self, run_ref: str, reason: str) -> int:
        """Leave a run out of every series (a broken night), with the reason."""
        with self.writer.begin() as conn:
            run_id = self._run_id(conn, run_ref)
            check_storable(t.runs, {"excluded_reason": reason})
            row = t.runs.update().where(t.runs.c.id == run_id)
            conn.execute(row.values(excluded=True, excluded_reason=reason))
        return run_id

    @retrying
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
            return insert(
                conn,
                t.annotations,
                benchmarks=benchmarks,
                hardware_class=hardware_class,
                run_id=self._run_id(conn, run_ref),
                accepted=accepted,
                text=text,
                created_at=dt.datetime.now(dt.UTC),
            )
