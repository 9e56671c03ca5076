"""The file store: the one place that knows the on-disk layout."""

import pytest

from perfsuite.store.files import FileStore, open_store


def test_runs_started_in_the_same_second_get_their_own_directories(tmp_path):
    """Run directories were named to the second: two runs sharing --perf-out overwrote each
    other's records and summary.json. Now each claims its own with an exclusive mkdir."""
    store = open_store(tmp_path / "out", tmp_path / "b")
    a, b = store.new_run("smoke"), store.new_run("smoke")
    rec = {"id": "x-fw-fp32-t1-unbound-b1"}
    pa, pb = a.write_result(rec), b.write_result(rec)
    assert a.path != b.path and pa.exists() and pb.exists()
    assert b.path.name.startswith(a.path.name) or a.path.name.startswith(b.path.name)
    a.write_summary({"schema": "perfsuite.run/1"})
    assert store.runs() == [a.path]  # a run is listed once it has a summary


def test_store_urls(tmp_path):
    s = open_store(f"file://{tmp_path}/r", tmp_path / "b")
    assert isinstance(s, FileStore) and s.results == tmp_path / "r"
    assert (
        s.baseline_path("amd-zen4-2c-1n", "default") == tmp_path / "b/amd-zen4-2c-1n/default.json"
    )
    assert s.load_baseline("amd-zen4-2c-1n", "default") is None
    with pytest.raises(ValueError, match="unknown scheme 'postgresql'"):
        open_store("postgresql://localhost/perf", tmp_path)
