"""Secrets (issue 31, item 7): the password of a store URL is never printed, logged, written into
a record, a report or an exception line -- each output checked, for stores that cannot be
opened and for one that can."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from history_data import step_history
from toy_backend import TOY_BACKEND

from perfsuite.cli import main
from perfsuite.store import open_store
from perfsuite.store.database import HistoryStore
from perfsuite.store.engine import StoreError

PASSWORD = "S3cretPw"
_SERVER = sa.engine.make_url(
    os.environ.get("PERFSUITE_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:1/postgres")
)
UNREACHABLE = [
    f"postgresql+psycopg://perfsuite:{PASSWORD}@127.0.0.1:1/x",  # nothing listens
    # the test server, when there is one: a role it does not know, an sslmode it refuses
    _SERVER.set(username="nouser", password=PASSWORD).render_as_string(hide_password=False),
    _SERVER.set(username="u", password=PASSWORD).render_as_string(hide_password=False)
    + "?sslmode=bogus",
    f"mysql://u:{PASSWORD}@127.0.0.1/db",  # no driver
    f"nosuch://u:{PASSWORD}@127.0.0.1/db",  # no such scheme
]
SWEEP = "def test_sweep(perf_point, perf_run):\n    perf_run(perf_point)\n"


def _files_under(root: Path) -> dict[Path, str]:
    return {p: p.read_text(errors="replace") for p in Path(root).rglob("*") if p.is_file()}


def _no_password(**outputs: str) -> None:
    leaks = [name for name, text in outputs.items() if PASSWORD in text]
    assert not leaks, {name: outputs[name] for name in leaks}


@pytest.fixture
def reachable(postgres_url):
    """A store that opens, reached by a URL with a password (the test server trusts any)."""
    return str(sa.engine.make_url(postgres_url).set(password=PASSWORD).render_as_string(False))


@pytest.mark.parametrize("url", UNREACHABLE)
def test_a_store_that_cannot_be_opened_is_named_without_its_password(url, tmp_path, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    run = step_history(tmp_path / "runs", 1, 1, step_point=None)[0]
    for argv in (
        ["db", "--store", url, "runs"],
        ["db", "--store", url, "import", str(run)],
        ["db", "--store", url, "trends", "--out", str(tmp_path / "t.html")],
        ["export", url, "--format", "bmf"],
        ["sweep", "--store", url, "--spark-master", "local[1]", "--out", str(tmp_path / "s")],
    ):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        _no_password(stdout=out, stderr=err, log=caplog.text)
        assert err.count("\n") == 1 and "***" in err or "nosuch" in err, err
    for opener in (HistoryStore, open_store):
        with pytest.raises(StoreError) as info:
            opener(url)
        _no_password(exception=str(info.value), repr=repr(info.value))
    _no_password(**{str(p): text for p, text in _files_under(tmp_path).items()})


def test_the_pytest_plugin_names_a_bad_store_without_its_password(tmp_path):
    (tmp_path / "conftest.py").write_text(TOY_BACKEND)
    (tmp_path / "test_toy.py").write_text(SWEEP)
    args = ["--perf-frameworks", "toyfw", "--perf-numa-nodes", "none", "--perf-threads", "1"]
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args,
         "--perf-store", UNREACHABLE[0], "--perf-out", str(tmp_path / "runs")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode != 0 and "127.0.0.1:1" in r.stdout + r.stderr, r.stdout + r.stderr
    _no_password(
        stdout=r.stdout, stderr=r.stderr, **{str(p): t for p, t in _files_under(tmp_path).items()}
    )


def test_a_store_reached_with_a_password_keeps_it_out_of_every_output(reachable, tmp_path, capsys):
    runs = step_history(tmp_path / "runs", 3, 2, step_point=None)
    out_dir = tmp_path / "out"
    outputs: dict[str, str] = {}
    for name, argv in {
        "import": ["db", "--store", reachable, "import", *map(str, runs)],
        "runs": ["db", "--store", reachable, "runs"],
        "runs --json": ["db", "--store", reachable, "runs", "--json"],
        "export": ["db", "--store", reachable, "export", "--out", str(out_dir / "e.json")],
        "trends": ["db", "--store", reachable, "trends", "--out", str(out_dir / "t.html")],
        "gate": ["db", "--store", reachable, "gate", "--json", str(out_dir / "g.json"),
                 "--summary", str(out_dir / "g.md")],
        "perfsuite export": ["export", reachable, "--format", "conbench"],
        "annotate missing run": ["db", "--store", reachable, "annotate", "*", "--run", "999",
                                 "--text", "x"],
    }.items():  # fmt: skip
        rc = main(argv)
        out, err = capsys.readouterr()
        assert rc in (0, 1, 2), (name, rc, err)
        outputs |= {f"{name} stdout": out, f"{name} stderr": err}
    assert "***" in outputs["import stdout"]  # it does name the store, masked
    store = HistoryStore(reachable)
    with store.engine.connect() as conn:  # every stored text column
        meta = sa.MetaData()
        meta.reflect(conn)
        stored = {
            f"table {t.name}": json.dumps([list(r) for r in conn.execute(t.select())], default=str)
            for t in meta.sorted_tables
        }
    assert json.loads(stored["table runs"])  # the runs are there to be checked
    with pytest.raises(StoreError) as info:
        store.run("ffffffffff")
    _no_password(
        **outputs,
        **stored,
        exception=str(info.value),
        baseline=store.baseline_location("x", "y"),
        **{str(p): t for p, t in _files_under(out_dir).items()},
    )
