"""Crashes mid-write (issue 31, item 2): a writer SIGKILLed during an import, an annotation, a
migration or a baseline save leaves the store with the whole change or none of it, and
importing again adds exactly what is missing.

The writer is a child process (this file run as a script) that stops, right after its n-th SQL
statement (or before the n-th file rename), inside the open transaction and waits to be
killed: the kill lands mid-write every time, not by luck of timing. The seeds pick n across
the whole write."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from history_data import T0, host_fingerprint, point_id, record, step_history

from perfsuite import records
from perfsuite.cli import main
from perfsuite.store import baseline, schema
from perfsuite.store.database import HistoryStore
from perfsuite.store.engine import MIGRATIONS

RUNS, POINTS, NOTES, SAVES = 30, 12, 30, 20
SEEDS = range(3)


def _result(i: int) -> records.Result:
    rng = __import__("numpy").random.default_rng(i)
    return records.Result.model_validate(record(point_id(i), 0.01, T0 + i, rng))


# --- the child: one writer, stopped inside its n-th write ------------------------------------
def _pause_at(target: int):
    count = 0

    def pause(*_args, **_kw):
        nonlocal count
        count += 1
        if count == target:
            print("paused", flush=True)
            time.sleep(120)  # killed here, inside the transaction

    return pause


def _child(op: str, url: str, target: str, *args: str) -> None:
    pause = _pause_at(int(target))
    if op == "migrate":

        def after_ddl(_conn, _cursor, statement, *_rest):  # the reads before it do not count
            if statement.lstrip().upper().startswith(("CREATE", "ALTER", "DROP", "UPDATE")):
                pause()

        sa.event.listen(sa.engine.Engine, "after_cursor_execute", after_ddl)
        HistoryStore(url)
        print("ok", flush=True)
        return
    if op == "file-baseline":
        import os

        rename = os.replace

        def replace(*a):
            pause()  # the new document is written to its temporary file, not yet renamed
            rename(*a)

        os.replace = replace
        for i in range(SAVES):
            baseline.save(Path(url), host_fingerprint(), "nightly", [_result(i)])
            print("ok", flush=True)
        return
    store = HistoryStore(url)
    sa.event.listen(store.engine, "after_cursor_execute", pause)
    if op == "import":
        for path in args:
            store.import_path(Path(path))
            print("ok", flush=True)
    elif op == "annotate":
        for i in range(NOTES):
            store.annotate("m0*", args[0], f"note {i}", accepted=i % 2 == 0)
            print("ok", flush=True)
    elif op == "baseline":
        for i in range(SAVES):
            store.save_baseline(host_fingerprint(), "nightly", [_result(i)])
            print("ok", flush=True)
    print("done", flush=True)


def _crash(op: str, url: str, target: int, *args) -> int:
    """Run the writer, kill it once it stopped inside write ``target``; the writes it
    finished (acknowledged) before."""
    proc = subprocess.Popen(
        [sys.executable, __file__, op, url, str(target), *map(str, args)],
        stdout=subprocess.PIPE,
        text=True,
        # history_data, and the perfsuite under test (not another installed checkout)
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, Path(__file__).parents[1:3]))},
    )
    acked = 0
    try:
        for line in proc.stdout:
            if line.strip() == "paused":
                break
            assert line.strip() == "ok", f"the writer finished before write {target}"
            acked += 1
        else:
            pytest.fail(f"the writer exited ({proc.wait()}) before statement {target}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    return acked


def _target(seed: int, writes: int) -> int:
    """A statement somewhere in the first ``writes`` statements (fixed by the seed)."""
    return random.Random(seed).randrange(1, writes)


# --- the tests ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_a_killed_import_leaves_whole_runs_and_importing_again_adds_the_rest(
    store_url, tmp_path, seed, capsys
):
    runs = step_history(tmp_path / "runs", RUNS, POINTS, step_point=None, seed=seed)
    HistoryStore(store_url).close()  # migrated: the kill lands in the imports
    acked = _crash("import", store_url, _target(seed, 4 * RUNS), *runs)
    assert main(["db", "--store", store_url, "runs", "--json"]) == 0  # the next command
    stored = json.loads(capsys.readouterr().out)
    assert len(stored) == acked  # the kill came before the commit: that run is not there
    assert all(r["points"] == POINTS for r in stored)  # no run with some of its results
    renamed = tmp_path / "renamed"
    shutil.copytree(runs[0], renamed)  # the same run under another name is the same run
    assert main(["db", "--store", store_url, "import", *map(str, runs), str(renamed)]) == 0
    out = capsys.readouterr().out
    assert f"{RUNS - len(stored)} added, {len(stored) + 1} already stored" in out
    assert f"already stored: run {renamed}" in out
    after = HistoryStore(store_url).runs()
    assert len(after) == RUNS == len({r.run_key for r in after})
    assert all(r.points == POINTS for r in after)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_killed_annotation_is_there_whole_or_not_at_all(store_url, tmp_path, seed):
    store = HistoryStore(store_url)
    for run in step_history(tmp_path / "runs", 3, 2, step_point=None):
        store.import_path(run)
    key = store.runs()[1].run_key[:12]
    acked = _crash("annotate", store_url, _target(seed + 10, 2 * NOTES), key)
    notes = store.annotations()
    assert len(notes) == acked
    assert [(n.text, n.accepted, n.run_key[:12]) for n in notes] == [
        (f"note {i}", i % 2 == 0, key) for i in range(len(notes))
    ]
    assert main(["db", "--store", store_url, "annotate", "m0*", "--run", key, "--text", "x"]) == 0
    assert len(store.annotations()) == len(notes) + 1  # no lock left behind


def _at_revision(url: str, revision: str, tmp_path) -> int:
    """A store at an older ``revision`` holding some runs (imported at head, then
    downgraded): the run count."""
    from alembic import command
    from alembic.config import Config

    store = HistoryStore(url)
    for run in step_history(tmp_path / "runs", 5, 3, step_point=None):
        store.import_path(run)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with store.schema_transaction() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
    store.close()
    return 5


def _columns(url: str) -> dict[str, set[str]]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        inspector = sa.inspect(conn)
        found = {
            t: {c["name"] for c in inspector.get_columns(t)} for t in inspector.get_table_names()
        }
    engine.dispose()
    return found


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("start", ["0001", "0002"])
def test_a_killed_migration_leaves_the_old_schema_and_the_next_opening_migrates(
    store_url, tmp_path, start, seed
):
    """Killed after its first, second or third DDL statement (0002 -> 0003 has four: three
    ALTERs and the version UPDATE): all steps are one transaction, so the store is still at
    the old revision with the old columns, never one in between."""
    n_runs = _at_revision(store_url, start, tmp_path)
    old = _columns(store_url)
    _crash("migrate", store_url, _target(seed + 20, 4))
    engine = sa.create_engine(store_url)
    with engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == start
    engine.dispose()
    assert _columns(store_url) == old
    store = HistoryStore(store_url)  # the next opening finishes the job
    assert store.revision() == "0005" and len(store.runs()) == n_runs
    assert all(r.points == 3 for r in store.runs())
    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), schema.metadata) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_a_killed_database_baseline_save_keeps_the_old_document_or_the_new(store_url, seed):
    acked = _crash("baseline", store_url, _target(seed + 30, 3 * SAVES))
    store = HistoryStore(store_url)
    saved = store.load_baseline("amd-zen4-2c-1n", "nightly")  # validates the whole document
    entries = sorted(saved.entries) if saved else []
    assert len(entries) == acked
    assert entries == sorted(point_id(i) for i in range(len(entries)))
    store.save_baseline(host_fingerprint(), "nightly", [_result(SAVES)])  # no lock left behind
    assert len(store.load_baseline("amd-zen4-2c-1n", "nightly").entries) == len(entries) + 1


@pytest.mark.parametrize("seed", SEEDS)
def test_a_killed_file_baseline_save_keeps_the_old_file_or_the_new(tmp_path, seed):
    root = tmp_path / "baselines"
    acked = _crash("file-baseline", str(root), _target(seed + 40, SAVES))
    path = baseline.path_for(root, "amd-zen4-2c-1n", "nightly")
    entries = sorted(baseline.load(path).entries) if path.exists() else []
    assert len(entries) == acked  # the rename had not happened: the old document
    assert entries == sorted(point_id(i) for i in range(acked))
    start = time.monotonic()  # the dead writer's lock is not held: the next save goes at once
    saved = baseline.save(root, host_fingerprint(), "nightly", [_result(SAVES)])
    assert time.monotonic() - start < 5 and saved.waited_s < 1
    assert len(baseline.load(path).entries) == acked + 1


if __name__ == "__main__":
    _child(*sys.argv[1:])
