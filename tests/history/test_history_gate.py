"""The nightly gate over the results history (``perfsuite db gate``): a point judged against
its own previous runs, gathering history before that, an accepted annotation restarting the
series, the suspect commit range, and the Markdown a job summary shows."""

from __future__ import annotations

import json

import pytest
from history_data import point_id, write_run

from perfsuite.cli import main
from perfsuite.history.gate import gate_history, markdown
from perfsuite.store.database import HistoryStore

BASE = {point_id(i): 0.010 * (1 + i) for i in range(3)}


def _night(store, root, i, medians, commit):
    run = write_run(root, i, medians)
    store.import_path(run, commit=commit)
    return run


def _store(tmp_path):
    return HistoryStore(f"sqlite:///{tmp_path / 'h.sqlite'}")


def test_first_nights_gather_then_a_point_slow_twice_in_a_row_fails_with_its_commits(tmp_path):
    store = _store(tmp_path)
    _night(store, tmp_path, 1, BASE, "c1" * 20)
    first = gate_history(store)
    assert first.gathering == dict.fromkeys(BASE, 0) and not first.failing
    assert "gated by the history after 3 more run(s)" in markdown(first)
    for i in (2, 3):
        _night(store, tmp_path, i, BASE, f"c{i}" * 20)
        assert not gate_history(store).failing
    slow = dict(BASE, **{point_id(1): BASE[point_id(1)] * 1.10})
    _night(store, tmp_path, 4, slow, "c4" * 20)
    once = gate_history(store)
    assert not once.failing and [s.id for s in once.pending] == [point_id(1)]
    assert f"watch {point_id(1)}" in markdown(once)
    _night(store, tmp_path, 5, slow, "c5" * 20)
    gate = gate_history(store)
    assert [s.id for s in gate.failing] == [point_id(1)] and not gate.pending
    (suspect,) = gate.failing
    assert (suspect.good, suspect.bad) == ("c3" * 20, "c4" * 20)  # the first slow run
    assert "regressed +10" in suspect.why and "2 runs in a row" in suspect.why
    page = markdown(gate)
    assert "FAILED" in page and point_id(1) in page and suspect.commits in page
    assert gate_history(store, confirm=1, run=store.runs()[1].run_key).failing  # one is enough


def test_one_slow_night_between_normal_ones_never_fails(tmp_path):
    store = _store(tmp_path)
    blip = dict(BASE, **{point_id(0): BASE[point_id(0)] * 1.40})
    for i, medians in enumerate([BASE, BASE, BASE, blip, BASE, BASE], start=1):
        _night(store, tmp_path, i, medians, f"{i:040d}")
        assert not gate_history(store).failing, i


def test_an_accepted_annotation_makes_the_next_night_pass(tmp_path, capsys):
    store = _store(tmp_path)
    slow = dict(BASE, **{point_id(0): BASE[point_id(0)] * 1.10})
    for i, medians in enumerate([BASE, BASE, BASE, slow, slow], start=1):
        _night(store, tmp_path, i, medians, f"{i:040d}")
    assert gate_history(store).failing
    fourth = store.runs()[1].run_key[:10]
    store.annotate(point_id(0), fourth, "new kernel: accepted", accepted=True)
    _night(store, tmp_path, 6, slow, f"{6:040d}")
    gate = gate_history(store)
    assert not gate.failing, gate.failing
    assert gate.gathering == {point_id(0): 2}  # its series starts again at night 4


def test_db_gate_cli_exit_codes_summary_and_json(tmp_path, capsys):
    store = _store(tmp_path)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    slow = dict(BASE, **{point_id(2): BASE[point_id(2)] * 1.10})
    for i, medians in enumerate([BASE, BASE, BASE, slow, slow], start=1):
        _night(store, tmp_path, i, medians, f"{i:040d}")
    summary, out = tmp_path / "summary.md", tmp_path / "gate.json"
    summary.write_text("earlier step's summary\n")
    rc = main(["db", "--store", url, "gate", "--summary", str(summary), "--json", str(out)])
    assert rc == 1
    text = capsys.readouterr().out
    assert f"REGRESSION {point_id(2)}" in text and "history gate: FAILED" in text
    assert summary.read_text().startswith("earlier step's summary\n")  # appended
    assert point_id(2) in summary.read_text()
    data = json.loads(out.read_text())
    assert data["failing"][0]["id"] == point_id(2) and data["passed"] is False
    # the night before (its first slow run) passes when gated again by its key, unless one
    # run is enough
    fourth = store.runs()[1].run_key[:10]
    assert main(["db", "--store", url, "gate", "--run", fourth]) == 0
    assert main(["db", "--store", url, "gate", "--run", fourth, "--confirm-runs", "1"]) == 1


def test_db_gate_on_an_empty_store_is_one_line_and_exit_2(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    assert main(["db", "--store", url, "gate"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no runs in" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("factor", [1.0, 1.01])
def test_steady_or_tiny_changes_do_not_fail(tmp_path, factor):
    store = _store(tmp_path)
    for i in range(1, 7):
        medians = {k: v * (factor if i == 6 else 1.0) for k, v in BASE.items()}
        _night(store, tmp_path, i, medians, f"{i:040d}")
    assert not gate_history(store).failing
