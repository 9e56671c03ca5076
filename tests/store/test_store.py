"""Stores chosen by URL (perfsuite.store): the file store's layout, baselines kept in a
database as in a folder, a run added from memory, and a store another package registers."""

import os
import sys

import numpy as np
import pytest
from fake_dist import install
from history_data import fingerprint, host_fingerprint, record

from perfsuite import records
from perfsuite.cli import main as cli_main
from perfsuite.store import STORES, FileStore, StoreError, open_store
from perfsuite.store.database import HistoryStore


def _result(pid="x-fw-fp32-t1-unbound-b1", median=0.01, seed=0):
    return records.load_result(record(pid, median, 1.79e9, np.random.default_rng(seed)))


def _summary(results):
    return records.RunSummary.model_validate(
        {
            "schema": records.RUN,
            "profile": {"name": "smoke"},
            "fingerprint": fingerprint(),
            "points": [{"id": r.id, "status": r.status} for r in results],
        }  # fmt: skip
    )


def test_runs_started_in_the_same_second_get_their_own_directories(tmp_path):
    """Run directories were named to the second: two runs sharing --perf-out overwrote each
    other's records and summary.json. Now each claims its own with an exclusive mkdir."""
    store = open_store(str(tmp_path / "out"))
    a, b = store.new_run("smoke"), store.new_run("smoke")
    rec = _result()
    pa, pb = a.write_result(rec), b.write_result(rec)
    assert a.path != b.path and pa.exists() and pb.exists()
    assert b.path.name.startswith(a.path.name) or a.path.name.startswith(b.path.name)
    a.write_summary(_summary([rec]))
    assert store.runs() == [a.path]  # a run is listed once it has a summary


def test_store_urls(tmp_path):
    s = open_store(f"file://{tmp_path}/b")
    assert isinstance(s, FileStore) and s.root == tmp_path / "b"
    assert s.baseline_location("amd-zen4-2c-1n", "default") == str(
        tmp_path / "b/amd-zen4-2c-1n/default.json"
    )
    assert s.load_baseline("amd-zen4-2c-1n", "default") is None
    assert isinstance(open_store(f"sqlite:///{tmp_path}/h.db"), HistoryStore)
    with pytest.raises(StoreError, match="unknown scheme 'mongodb'"):
        open_store("mongodb://localhost/perf")


def _db_urls(tmp_path):
    urls = [f"sqlite:///{tmp_path}/h.db"]
    if os.environ.get("PERFSUITE_TEST_POSTGRES"):
        urls.append(os.environ["PERFSUITE_TEST_POSTGRES"])
    return urls


def test_a_database_keeps_baselines_as_a_folder_does(tmp_path):
    """The same merge (baseline.merged) in a file and in a database: the same entries, runs
    and refusals; and `perfsuite compare` takes the database URL as the baseline."""
    fp = host_fingerprint()
    first, second = [_result(seed=1)], [_result(median=0.0101, seed=2)]
    for url in [str(tmp_path / "folder"), *_db_urls(tmp_path)]:
        store = open_store(url)
        profile = f"p{abs(hash(url)) % 10**6}"  # a shared PostgreSQL keeps earlier tests' rows
        assert store.load_baseline(fp.hardware_class, profile) is None
        saved = store.save_baseline(fp, profile, first)
        assert saved.added == [first[0].id]
        with pytest.raises(ValueError, match="--perf-update-baseline"):
            store.save_baseline(fp, profile, second)
        store.save_baseline(fp, profile, second, add_run=True)
        got = store.load_baseline(fp.hardware_class, profile)
        assert len(got.entries[first[0].id].runs) == 2, url
        assert [h.action for h in got.history] == ["created", "run-added"]
        store.close()


def test_compare_takes_a_database_url_as_the_baseline(tmp_path, capsys):
    fp = host_fingerprint()
    results = [_result(f"m{i}-fw-fp32-t1-unbound-b1", seed=i) for i in range(3)]
    run = records.Run(summary=_summary(results), results=results)
    run_dir = open_store(str(tmp_path / "runs")).new_run("smoke")
    run_dir.write(run)
    url = f"sqlite:///{tmp_path}/h.db"
    open_store(url).save_baseline(fp, "smoke", results)
    assert cli_main(["compare", url, str(run_dir.path)]) == 0
    assert "3 unchanged" in capsys.readouterr().out
    assert cli_main(["compare", f"sqlite:///{tmp_path}/empty.db", str(run_dir.path)]) == 2
    assert "no baseline at" in capsys.readouterr().err


def test_a_run_is_added_from_memory_once(tmp_path):
    """The history takes the run from the objects the sweep holds; the same run read back
    from its directory is the same run (keyed by content), so it is not added twice."""
    results = [_result(seed=3)]
    run = records.Run(summary=_summary(results), results=results, source="mem")
    for url in _db_urls(tmp_path):
        store = open_store(url)
        folder = open_store(str(tmp_path / "runs")).new_run("smoke")
        folder.write(run)
        first = store.add_run(run)
        assert store.import_run(folder.path).added is False
        assert first or url != _db_urls(tmp_path)[0]  # a fresh SQLite file: added the first time
        store.close()


FAKE_STORE = '''
from perfsuite.store.files import FileStore


class MemoStore(FileStore):
    """A third-party store: file layout under the path after memo://."""

    schemes = ("memo",)

    def __init__(self, url):
        super().__init__(url.removeprefix("memo://"))
'''


def test_a_store_from_another_package_is_chosen_by_its_scheme(tmp_path, monkeypatch):
    """A package declares a store under the perfsuite.stores entry-point group; perfsuite's
    own files are not touched."""
    entry_points = "[perfsuite.stores]\nmemo = memostore:MemoStore\n"
    install(tmp_path, monkeypatch, "memostore", "memostore", FAKE_STORE, entry_points)
    monkeypatch.delitem(STORES, "memo", raising=False)
    store = open_store(f"memo://{tmp_path}/kept")
    assert type(store).__name__ == "MemoStore" and store.root == tmp_path / "kept"
    saved = store.save_baseline(host_fingerprint(), "smoke", [_result()])
    assert saved.location == tmp_path / "kept" / "amd-zen4-2c-1n" / "smoke.json"
    STORES.pop("memo")
    sys.modules.pop("memostore", None)
