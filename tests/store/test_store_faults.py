"""Database faults on the results history: each is one line naming the store and the
problem, exit code 2 from `perfsuite db`, a password in the URL never shown, and nothing
already stored lost. (The sweep's side, a store that goes away mid-run: test_plugin.py.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import sqlalchemy as sa
from history_data import step_history
from tcp_proxy import Proxy

from perfsuite.cli import main
from perfsuite.store.database import HistoryStore
from perfsuite.store.engine import StoreError

SECRET = "S3cretPw"


def _db(capsys, url: str, *argv: str) -> str:
    """`perfsuite db --store URL ARGV...`: exit 2 and one stderr line, which comes back."""
    assert main(["db", "--store", url, *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and SECRET not in err, err
    return err


def _store_with_runs(tmp_path, n=2) -> tuple[str, list]:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    runs = step_history(tmp_path / "runs", n + 1, 2, step_point=None)
    store = HistoryStore(url)
    for r in runs[:n]:
        store.import_path(r)
    store.close()
    return url, runs


def test_server_unreachable_or_refusing_the_login(capsys):
    err = _db(capsys, f"postgresql+psycopg://perfsuite:{SECRET}@127.0.0.1:1/x", "runs")
    assert "Connection refused" in err and "perfsuite:***@127.0.0.1:1" in err
    admin = os.environ.get("PERFSUITE_TEST_POSTGRES")
    if not admin:
        pytest.skip("no PostgreSQL server: $PERFSUITE_TEST_POSTGRES is unset")
    wrong = sa.engine.make_url(admin).set(username="no_such_role", password=SECRET)
    err = _db(capsys, wrong.render_as_string(hide_password=False), "runs")
    assert 'role "no_such_role" does not exist' in err


def test_server_gone_mid_session_is_one_line_and_keeps_what_was_stored(postgres_url, tmp_path):
    target = sa.engine.make_url(postgres_url)
    proxy = Proxy(target.host, target.port)
    url = target.set(port=proxy.port).render_as_string(hide_password=False)
    runs = step_history(tmp_path / "runs", 2, 2, step_point=None)
    store = HistoryStore(url)
    store.import_path(runs[0])
    proxy.cut()
    with pytest.raises(StoreError, match=r"^result store postgresql\+psycopg://\S+: ") as exc:
        store.import_path(runs[1])
    assert len(str(exc.value).splitlines()) == 1
    assert [r.points for r in HistoryStore(postgres_url).runs()] == [2]


def test_read_only_file_is_read_and_refuses_writes(tmp_path, capsys):
    url, runs = _store_with_runs(tmp_path)
    read_only = f"sqlite:///file:{tmp_path / 'h.sqlite'}?mode=ro&uri=true"
    assert main(["db", "--store", read_only, "runs"]) == 0  # trend pages from a shared copy
    capsys.readouterr()
    err = _db(capsys, read_only, "import", str(runs[2]))
    assert "attempt to write a readonly database" in err
    assert len(HistoryStore(url).runs()) == 2


def _mount_tmpfs(folder, size: str) -> None:
    folder.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)]
    if os.geteuid() != 0 or subprocess.run(mount, capture_output=True).returncode:
        pytest.skip(f"cannot mount a {size} tmpfs (needs root and CAP_SYS_ADMIN)")


def test_a_store_on_read_only_media_is_one_line(tmp_path, capsys):
    """A WAL store closed cleanly has no -shm file, and read-only media cannot get one: SQLite
    cannot open it at all (reads included); the line says so."""
    media = tmp_path / "media"
    _mount_tmpfs(media, "20m")
    try:
        url, runs = _store_with_runs(media)
        subprocess.run(["mount", "-o", "remount,ro", str(media)], check=True)
        assert "unable to open database file" in _db(capsys, url, "runs")
    finally:
        subprocess.run(["umount", "--lazy", str(media)], check=True)


def test_full_disk_keeps_every_whole_run(tmp_path, capsys):
    small = tmp_path / "small"
    _mount_tmpfs(small, "400k")
    try:
        url = f"sqlite:///{small / 'h.sqlite'}"
        runs = step_history(tmp_path / "runs", 40, 30, step_point=None)
        err = _db(capsys, url, "import", *map(str, runs))
        assert "database or disk is full" in err
        store = HistoryStore(url)
        kept = store.runs()
        store.close()
        assert 0 < len(kept) < 40 and {r.points for r in kept} == {30}  # whole runs only
    finally:
        subprocess.run(["umount", "--lazy", str(small)], check=True)  # the CLI's files close late


def test_store_from_a_newer_perfsuite_is_refused_not_downgraded(tmp_path, capsys):
    url, _ = _store_with_runs(tmp_path)
    with HistoryStore(url).writer.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_future'")
    err = _db(capsys, url, "runs")
    assert "written by a newer perfsuite (schema revision 9999_future" in err
    with sa.create_engine(url).connect() as conn:  # untouched: no downgrade, no rewrite
        assert conn.scalar(sa.text("SELECT version_num FROM alembic_version")) == "9999_future"


def test_corrupt_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"not a database, just bytes " * 400)
    assert "file is not a database" in _db(capsys, f"sqlite:///{path}", "runs")


def test_first_openings_at_once_never_say_locked(tmp_path):
    """Four processes open one new SQLite file at once: SQLite may answer "database is
    locked" without waiting where waiting could deadlock; the store tries again."""
    code = (
        "import sys; from perfsuite.store.database import HistoryStore\n"
        "HistoryStore(sys.argv[1]).runs()"
    )
    for i in range(5):
        url = f"sqlite:///{tmp_path / f'h{i}.sqlite'}"
        procs = [
            subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE, text=True)
            for _ in range(4)
        ]
        errors = [p.communicate()[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, errors
