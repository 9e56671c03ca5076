"""The results history (perfsuite.store.database, history.changes, perfsuite db): the same tests
on SQLite always and on a real PostgreSQL (tests/conftest.py starts a throwaway cluster where
initdb exists, or $PERFSUITE_TEST_POSTGRES names one)."""

from __future__ import annotations

import json
import multiprocessing

import pytest
import sqlalchemy as sa
from history_data import point_id, qualification, step_history, write_run

from perfsuite.cli import main
from perfsuite.history.changes import detect
from perfsuite.store import schema
from perfsuite.store.database import HistoryStore
from perfsuite.store.engine import MIGRATIONS, StoreError


def test_migrations_match_the_schema_and_go_both_ways(store_url, tmp_path):
    from alembic import command
    from alembic.autogenerate import compare_metadata
    from alembic.config import Config
    from alembic.migration import MigrationContext

    store = HistoryStore(store_url)
    assert store.revision() == "0005"
    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), schema.metadata) == []
    for run in step_history(tmp_path / "runs", 2, 3, step_point=None):
        store.import_path(run)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    for target, tables in [("0002", 9), ("base", 0)]:
        with store.schema_transaction() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, target)
        with store.engine.connect() as conn:
            assert len(set(sa.inspect(conn).get_table_names()) - {"alembic_version"}) == tables
            if target == "0002":  # 0003's columns went by a table copy (SQLite): rows stay
                assert conn.scalar(sa.select(sa.func.count()).select_from(schema.results)) == 6
    HistoryStore(store_url)  # opening migrates again
    with store.engine.connect() as conn:
        assert set(schema.metadata.tables) <= set(sa.inspect(conn).get_table_names())


def test_import_is_idempotent_and_keeps_what_the_runs_said(store_url, tmp_path):
    runs = step_history(tmp_path / "runs", 4, 3, step_point=None)
    store = HistoryStore(store_url)
    assert all(store.import_path(r).added for r in runs)
    assert not any(store.import_path(r).added for r in runs)  # twice adds nothing
    assert not store.import_path(runs[0] / "summary.json").added
    listed = store.runs()
    assert len(listed) == 4 and all(r.points == 3 for r in listed)
    assert listed[0].started_at > listed[-1].started_at  # newest first
    series = store.series("m0*")
    (name, hw), values = next(iter(series.items()))
    assert (name, hw) == (point_id(0), "amd-zen4-2c-1n") and len(values) == 4
    assert values[0].low <= values[0].value <= values[0].high
    exported = store.export()
    assert [len(r["results"]) for r in exported] == [3, 3, 3, 3]
    assert exported[0]["results"][0]["name"] == point_id(0)


def test_a_run_keeps_its_provenance_and_commit_overrides_only_the_commit(store_url, tmp_path):
    source = {"commit": "a" * 40, "branch": "main", "dirty": True, "repository": "org/repo"}
    runs = step_history(tmp_path / "runs", 2, 1, step_point=None)
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        (run / "summary.json").write_text(json.dumps({**summary, "source": source}))
    store = HistoryStore(store_url)
    store.import_path(runs[0])
    store.import_path(runs[1], commit="b" * 40)
    newest, oldest = store.runs()
    assert (oldest.commit, oldest.branch, oldest.dirty, oldest.repository) == tuple(source.values())
    assert (newest.commit, newest.branch, newest.dirty) == ("b" * 40, "main", True)


def test_baselines_and_qualification_reports_import_too(store_url, tmp_path):
    store = HistoryStore(store_url)
    base = "baselines/amd-zen4-2c-1n/default.json"
    assert store.import_path(base).added and not store.import_path(base).added
    assert [r.kind for r in store.runs()] == ["baseline"]
    assert store.series() == {}  # history series are runs, not baselines
    q = qualification(tmp_path, "host-a", 30.0)
    assert store.import_path(q).added and not store.import_path(q).added
    assert len(store.qualifications("amd-zen4-2c-1n")) == 1


def test_invalid_inputs_are_one_line_errors(store_url, tmp_path):
    store = HistoryStore(store_url)
    bad = write_run(tmp_path, 0, {point_id(0): 0.01})
    rec = bad / "points" / f"{point_id(0)}.json"
    data = json.loads(rec.read_text())
    data["samples_s"][3] = float("nan")
    rec.write_text(json.dumps(data))
    with pytest.raises(StoreError, match="samples_s.3"):
        store.import_path(bad)
    (tmp_path / "x.json").write_text('{"schema": "something/1"}')
    with pytest.raises(StoreError, match="neither a run directory"):
        store.import_path(tmp_path / "x.json")
    with pytest.raises(StoreError, match="no run 'zzzzzzzz'"):
        store.annotate("*", "zzzzzzzz", "x", accepted=True)
    assert store.runs() == []  # nothing half-written


def test_a_15_percent_step_is_found_at_its_run_and_nowhere_else(store_url, tmp_path, capsys):
    runs = step_history(tmp_path / "runs", 120, 6, step_point=2, step_at=70, step=0.15)
    store = HistoryStore(store_url)
    for r in runs:
        store.import_path(r)
    rc = main(["db", "--store", store_url, "changes", "--json"])
    found = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert [c["benchmark"] for c in found] == [point_id(2)], found
    assert abs(found[0]["index"] - 70) <= 1 and 0.12 < found[0]["change"] < 0.18
    assert found[0]["p_value"] < 0.001
    with store.engine.connect() as conn:  # stored, and replaced (not duplicated) next time
        assert conn.scalar(sa.select(sa.func.count()).select_from(schema.change_points)) == 1
    assert main(["db", "--store", store_url, "changes", "--fail-on-change"]) == 1
    with store.engine.connect() as conn:
        assert conn.scalar(sa.select(sa.func.count()).select_from(schema.change_points)) == 1


def test_an_accepted_change_starts_the_series_anew(store_url, tmp_path):
    runs = step_history(tmp_path / "runs", 90, 2, step_point=0, step_at=50, step=0.2)
    store = HistoryStore(store_url)
    for r in runs:
        store.import_path(r)
    (change,) = detect(store)
    store.annotate(point_id(0), change.run_key[:10], "new ORT release: accepted", accepted=True)
    assert detect(store) == []
    with store.engine.connect() as conn:  # the stored change point went with it
        assert conn.scalar(sa.select(sa.func.count()).select_from(schema.change_points)) == 0
    assert store.annotations(point_id(0))[0].text == "new ORT release: accepted"


def test_an_excluded_run_leaves_every_series(store_url, tmp_path):
    runs = step_history(tmp_path / "runs", 10, 2, step_point=None)
    store = HistoryStore(store_url)
    for r in runs:
        store.import_path(r)
    victim = store.runs()[3]
    store.exclude(str(victim.id), "host was being patched")
    assert all(len(s) == 9 for s in store.series().values())
    assert store.runs()[3].excluded_reason == "host was being patched"


def _import(url, paths):
    store = HistoryStore(url)
    for p in paths:
        store.import_path(p)


def test_concurrent_importers_lose_nothing(store_url, tmp_path):
    """Two processes open a new store (both migrate) and import at once: every run lands
    (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock around migrations)."""
    a = step_history(tmp_path / "a", 15, 4, step_point=None, seed=1)
    b = step_history(tmp_path / "b", 15, 4, step_point=None, seed=2)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_import, args=(store_url, paths)) for paths in (a, b)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert len(HistoryStore(store_url).runs()) == 30


def _annotate_and_exclude(url, n):
    store = HistoryStore(url)
    done: list[int] = []
    while len(done) < n:
        for run in [r for r in store.runs() if r.id not in done][: n - len(done)]:
            store.annotate("m0*", run.run_key[:12], f"note {len(done)}", accepted=False)
            if len(done) % 3 == 0:
                store.exclude(str(run.id), f"broken night {len(done)}")
            done.append(run.id)


def _read_whole_runs(url, seconds, out):
    """A reader that never may see a run with some of its points: writes the smallest point
    count it saw to ``out``."""
    import time

    store = HistoryStore(url)
    seen, end = set(), time.monotonic() + seconds
    while time.monotonic() < end:
        runs = store.runs()
        seen |= {r.points for r in runs}
        store.series("m0*")
    out.write_text(json.dumps(sorted(seen)))


@pytest.mark.slow
def test_importers_annotators_and_readers_at_once_lose_and_duplicate_nothing(store_url, tmp_path):
    """Two importers with overlapping runs, an annotator that also excludes, and a reader,
    all at once on one store: every distinct run lands once, every annotation and exclusion
    lands, no "database is locked" reaches anyone, the reader never sees half a run."""
    shared = step_history(tmp_path / "s", 16, 12, step_point=None, seed=3)
    own = [step_history(tmp_path / f"o{i}", 4, 12, step_point=None, seed=10 + i) for i in (0, 1)]
    HistoryStore(store_url)  # migrated before the race: the migration race is tested above
    ctx = multiprocessing.get_context("spawn")
    seen = tmp_path / "seen.json"
    procs = [
        ctx.Process(target=_import, args=(store_url, shared + own[0])),
        ctx.Process(target=_import, args=(store_url, list(reversed(shared)) + own[1])),
        ctx.Process(target=_annotate_and_exclude, args=(store_url, 12)),
        ctx.Process(target=_read_whole_runs, args=(store_url, 8.0, seen)),
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        if p.is_alive():  # a hung writer fails the test, it must not hang the suite
            p.kill()
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    store = HistoryStore(store_url)
    runs = store.runs()
    assert len(runs) == 24 and len({r.run_key for r in runs}) == 24  # 16 shared + 2 x 4 own
    assert all(r.points == 12 for r in runs)
    assert len(store.annotations()) == 12
    assert sum(r.excluded for r in runs) == 4
    assert json.loads(seen.read_text()) in ([], [12])  # whole runs only


def test_db_cli_exit_codes(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    runs = step_history(tmp_path / "runs", 3, 2, step_point=None)
    assert main(["db", "--store", url, "import", *map(str, runs)]) == 0
    assert "3 added, 0 already stored" in capsys.readouterr().out
    assert main(["db", "--store", url, "import", str(runs[0])]) == 0
    assert "0 added, 1 already stored" in capsys.readouterr().out
    assert main(["db", "--store", url, "history", "m01*", "--json"]) == 0
    (series,) = json.loads(capsys.readouterr().out)
    assert series["benchmark"] == point_id(1) and len(series["runs"]) == 3
    assert main(["db", "--store", url, "export", "--out", str(tmp_path / "e.json")]) == 0
    assert len(json.loads((tmp_path / "e.json").read_text())["runs"]) == 3
    capsys.readouterr()
    for argv, message in [
        (["history", "nothing*"], "no benchmark matches"),
        (["import", str(tmp_path / "missing")], "no such file"),
        (["annotate", "*", "--run", "999", "--text", "x"], "no run '999'"),
        (["--store", "nosuchdb://x", "runs"], "no driver"),
    ]:
        argv = argv if argv[0] == "--store" else ["--store", url, *argv]
        assert main(["db", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_fleet_scoring_names_the_odd_host_out(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    paths = [qualification(tmp_path, f"h{i}", 30.0 + 0.2 * i) for i in range(5)]
    paths.append(qualification(tmp_path, "slowmem", 26.0))  # -13% bandwidth
    paths.append(qualification(tmp_path, "nogemm", 30.1, gemm_efficiency=None))
    assert main(["db", "--store", url, "import", *map(str, paths)]) == 0
    capsys.readouterr()
    out = tmp_path / "fleet"
    rc = main(
        [
            "db",
            "--store",
            url,
            "fleet",
            "--json",
            "--out",
            str(out),
            "--save-reference",
            str(tmp_path / "ref.json"),
        ]
    )
    scores = {s["host"]: s for s in json.loads(capsys.readouterr().out.split("\nper-host")[0])}
    assert rc == 1
    assert {h for h, s in scores.items() if s["verdict"] == "FAIL"} == {"slowmem", "nogemm"}
    assert scores["slowmem"]["failures"][0]["category"] == "memory"
    assert "bandwidth_gbs.0" in scores["slowmem"]["outliers"]
    assert scores["nogemm"]["failures"][0]["value"] is None  # missing metric fails
    assert json.loads((out / "slowmem.json").read_text())["verdict"] == "FAIL"
    ref = json.loads((tmp_path / "ref.json").read_text())
    assert ref["bandwidth_gbs_per_node"]["expected"] == 30.4  # median of the 5 passing
    from perfsuite import records

    records.load_reference(ref)
    (tmp_path / "bad.toml").write_text("[[rules]]\nname='x'\nmetrics='('\n")
    assert main(["db", "--store", url, "fleet", "--rules", str(tmp_path / "bad.toml")]) == 2
    assert "rule file" in capsys.readouterr().err
