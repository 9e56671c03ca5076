"""Shared test fixtures: host snapshots expanded into sysfs/procfs trees, a PostgreSQL
server for the history-store tests."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

HOSTS = Path(__file__).parent / "data" / "hosts"


def expand_snapshot(snapshot: Path, root: Path) -> Path:
    """Write each '== /path' section of a snapshot below root; returns root."""
    name, lines = None, []

    def flush():
        if name is not None:
            target = root / name.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(lines).rstrip("\n") + "\n")

    for line in snapshot.read_text().splitlines():
        if line.startswith("== /"):
            flush()
            name, lines = line[3:], []
        else:
            lines.append(line)
    flush()
    return root


@pytest.fixture(scope="session")
def host_tree(tmp_path_factory):
    """host_tree('epyc7763-2s-nps4') -> root directory of that machine's sysfs/procfs."""
    cache: dict[str, Path] = {}

    def make(name: str) -> Path:
        if name not in cache:
            root = tmp_path_factory.mktemp(name)
            cache[name] = expand_snapshot(HOSTS / f"{name}.tree", root)
        return cache[name]

    return make


def pytest_collection_modifyitems(config, items):
    """Under --benchmark-only, deselect (rather than skip one by one) the non-benchmarks, so
    the run's summary lists only what ran."""
    if not config.getoption("benchmark_only", False):
        return
    keep = [i for i in items if "benchmark" in getattr(i, "fixturenames", ())]
    dropped = [i for i in items if "benchmark" not in getattr(i, "fixturenames", ())]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(autouse=True)
def _inner_runs_are_not_xdist_workers(monkeypatch):
    """A pytest run inside a test (pytester, or a workflow step's subprocess) is a session
    of its own: under xdist it would inherit the worker's PYTEST_XDIST_WORKER, and
    pytest-benchmark disables itself there."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(request, tmp_path_factory):
    """Tests build models into a fresh cache (cold, like CI), never the user's; benchmark
    runs use the user's cache so a second run is warm."""
    import os

    if request.config.getoption("benchmark_only", False):
        yield
        return
    from perfsuite.prepare.cache import cache_dir

    # the export tools' venv (~1 GB, ~20 s to make) is shared by test runs and xdist workers
    # (made under a lock), as a user's runs share it; exports themselves stay cold
    os.environ.setdefault("PERFSUITE_EXPORT_HOME", str(cache_dir()))
    old = os.environ.get("PERFSUITE_CACHE")
    os.environ["PERFSUITE_CACHE"] = str(tmp_path_factory.mktemp("perfsuite-cache"))
    yield
    if old is None:
        os.environ.pop("PERFSUITE_CACHE", None)
    else:
        os.environ["PERFSUITE_CACHE"] = old


@pytest.fixture
def empty_node_root(tmp_path, host_tree):
    """The 2-vCPU guest plus a memory-only NUMA node 1 (CXL, or all its CPUs offline)."""
    import shutil

    root = tmp_path / "root"
    shutil.copytree(host_tree("kvm-zen3-2vcpu"), root)
    node1 = root / "sys/devices/system/node/node1"
    node1.mkdir()
    (node1 / "cpulist").write_text("\n")
    (node1 / "meminfo").write_text("Node 1 MemTotal:       1048576 kB\n")
    (root / "sys/devices/system/node/online").write_text("0-1\n")
    return root


PG_ENV = "PERFSUITE_TEST_POSTGRES"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A new results history on each engine: a SQLite file, and a PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.sqlite'}"
    return request.getfixturevalue("postgres_url")


def pytest_configure(config):
    """The PostgreSQL tests run wherever a server can be started: $PERFSUITE_TEST_POSTGRES
    names one, else the session starts its own (about 2 s) and names it there, for the
    tests, their subprocesses and xdist's workers alike."""
    if os.environ.get(PG_ENV) or config.getoption("benchmark_only", False):
        return
    if hasattr(config, "workerinput"):  # an xdist worker: the controller started it
        return
    started = _start_postgres()
    if started:
        os.environ[PG_ENV], config._perfsuite_pg_stop = started


def pytest_unconfigure(config):
    stop = getattr(config, "_perfsuite_pg_stop", None)
    if stop:
        stop()
        os.environ.pop(PG_ENV, None)


@pytest.fixture
def postgres_url():
    """A throwaway database on the PostgreSQL server $PERFSUITE_TEST_POSTGRES names (this
    session's own when it is unset), dropped afterwards."""
    import sqlalchemy as sa

    admin_url = os.environ.get(PG_ENV)
    if not admin_url:
        pytest.skip(
            f"no PostgreSQL server: ${PG_ENV} is unset and none could be started here "
            "(no initdb: install Debian's postgresql)"
        )
    name = f"perfsuite_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    yield str(sa.engine.make_url(admin_url).set(database=name))
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()


def _start_postgres() -> tuple[str, Callable[[], None]] | None:
    """A throwaway PostgreSQL cluster on a free loopback port where the server's programs
    exist (Debian: postgresql), its admin URL and how to stop it. pg_ctl refuses to run as
    root, so as root the cluster runs as the ``postgres`` user (runuser), as in .ci/run;
    pytest-postgresql's process fixture has no such switch."""
    import pwd
    import shutil
    import socket
    import subprocess
    import tempfile

    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    initdb = str(bins[-1]) if bins else shutil.which("initdb")
    if initdb is None:
        return None
    pg_ctl = str(Path(initdb).with_name("pg_ctl"))
    as_user: list[str] = []
    data = Path(tempfile.mkdtemp(prefix="perfsuite-pg-"))
    if os.getuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            return None
        os.chown(data, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    quiet = {"check": True, "capture_output": True, "timeout": 120}
    try:
        subprocess.run(
            [*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"], **quiet
        )
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-l", str(data / "log"), "-w", "-o",
                        f"-h 127.0.0.1 -p {port} -k {data}", "start"], **quiet)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        shutil.rmtree(data, ignore_errors=True)
        return None

    def stop() -> None:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(data, ignore_errors=True)

    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", stop
