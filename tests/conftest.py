"""Shared test fixtures: host snapshots expanded into sysfs/procfs trees."""

from __future__ import annotations

import os
import uuid
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


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(request, tmp_path_factory):
    """Tests build models into a fresh cache (cold, like CI), never the user's; benchmark
    runs use the user's cache so a second run is warm."""
    import os

    if request.config.getoption("benchmark_only", False):
        yield
        return
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


@pytest.fixture
def postgres_url():
    """A throwaway database on the PostgreSQL server $PERFSUITE_TEST_POSTGRES names (.ci/run
    starts one), dropped afterwards."""
    import sqlalchemy as sa

    admin_url = os.environ.get(PG_ENV)
    if not admin_url:
        pytest.skip(f"no PostgreSQL server: ${PG_ENV} is unset (.ci/run starts one)")
    name = f"perfsuite_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    yield str(sa.engine.make_url(admin_url).set(database=name))
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()
