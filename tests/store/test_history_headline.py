"""The results history keeps a result's headline (revision 0004), and the history gate judges
a gated one (a LoadGen server or offline rate) instead of the point's samples, which are
latencies at different loads. On SQLite always and on PostgreSQL when
$PERFSUITE_TEST_POSTGRES names one."""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa
from history_data import DAY, T0, fingerprint, host_fingerprint, point_id, record

from perfsuite import records
from perfsuite.history.gate import gate_history
from perfsuite.store import schema
from perfsuite.store.database import HistoryStore
from perfsuite.store.engine import MIGRATIONS

SERVER = "m00-fw-fp32-t1-unbound-b1-server"
PLAIN = point_id(1)  # a latency point: no headline
STEADY = point_id(2)


def rate(value: float, *, gated: bool = True) -> records.Headline:
    return records.Headline(
        name="server rate", value=value, unit="queries/s", higher_is_better=True, gated=gated
    )


def result(pid: str, median_s: float, ts: float, rng, headline=None) -> records.Result:
    rec = record(pid, median_s, ts, rng)
    if pid.endswith("server"):
        rec["point"]["mode"] = pid.rsplit("-", 1)[1]
    if headline is not None:
        rec["headline"] = records.dump(headline)
    return records.Result.model_validate(rec)


def run(index: int, points: dict[str, tuple[float, records.Headline | None]]) -> records.Run:
    """Run ``index`` (one a day from T0): point -> (median seconds, headline or None)."""
    rng = np.random.default_rng(index)
    results = [
        result(pid, m, T0 + index * DAY + k, rng, head)
        for k, (pid, (m, head)) in enumerate(sorted(points.items()))
    ]
    summary = records.RunSummary(
        profile={"name": "nightly"},
        fingerprint=fingerprint(),
        points=[records.RunPoint(id=r.id, status="ok") for r in results],
    )
    return records.Run(summary=summary, results=results, source=f"run-{index}")


def test_a_server_points_headline_round_trips(store_url):
    store = HistoryStore(store_url)
    assert store.revision() == "0005"
    assert store.add_run(run(0, {SERVER: (0.010, rate(123.5)), PLAIN: (0.010, None)}))
    loaded = {r.id: r for r in store.load_run().results}
    assert loaded[SERVER].headline == rate(123.5)
    assert loaded[PLAIN].headline is None
    series = store.series()
    assert series[(SERVER, "amd-zen4-2c-1n")][0].headline == rate(123.5)
    assert series[(PLAIN, "amd-zen4-2c-1n")][0].headline is None
    exported = {r["name"]: r for r in store.export()[0]["results"]}
    assert exported[SERVER]["headline"]["value"] == 123.5 and exported[PLAIN]["headline"] is None


def test_the_headline_is_a_history_metric_and_an_invalid_rate_no_point_of_its_line(
    store_url, capsys
):
    """``--metric headline``: the rate per run, its change points found like any metric's;
    a run whose rate LoadGen called INVALID leaves a gap, not a low point."""
    from perfsuite.cli import main
    from perfsuite.history.changes import detect

    store = HistoryStore(store_url)
    rates = [100.0] * 6 + [60.0] * 6
    for i, value in enumerate(rates):
        store.add_run(run(i, {SERVER: (0.010, rate(value)), PLAIN: (0.010, None)}))
    invalid = rate(5.0).model_copy(update={"valid": False})
    store.add_run(run(len(rates), {SERVER: (0.010, invalid), PLAIN: (0.010, None)}))
    series = store.series(metric="headline")
    assert list(series) == [(SERVER, "amd-zen4-2c-1n")]  # the plain point has no headline
    assert [p.value for p in series[(SERVER, "amd-zen4-2c-1n")]] == rates
    (change,) = detect(store, SERVER, metric="headline", save=False)
    assert change.before == 100.0 and change.after == 60.0
    assert main(["db", "--store", store_url, "history", SERVER, "--metric", "headline"]) == 0
    assert "history of headline" in capsys.readouterr().out


def test_change_points_read_a_server_points_rate_whatever_the_metric(store_url):
    """The default metric (median latency) is the wrong line for a server point: its latencies
    sit at a load that follows its rate. Its change points come from its gated rate, and a
    median of searches has their range as its band."""
    from perfsuite.history.changes import detect

    store = HistoryStore(store_url)
    for i in range(12):  # the rate falls by 40% at run 6; latencies stay put
        value = 100.0 if i < 6 else 60.0
        head = rate(value).model_copy(update={"runs": [value * 0.97, value, value * 1.02]})
        store.add_run(run(i, {SERVER: (0.010, head), PLAIN: (0.010, None)}))
    (change,) = detect(store, "*", save=False)
    assert (change.benchmark, change.metric) == (SERVER, "headline")
    assert change.before == 100.0 and change.after == 60.0
    point = store.series(SERVER, metric="headline")[(SERVER, "amd-zen4-2c-1n")][0]
    assert (point.low, point.high) == (97.0, 102.0)


def test_a_baseline_in_the_database_keeps_its_entries_headlines(store_url):
    """Baselines are stored as whole documents (JSON): an entry's headline goes with it."""
    store = HistoryStore(store_url)
    base = run(0, {SERVER: (0.010, rate(99.0)), PLAIN: (0.010, None)})
    store.save_baseline(host_fingerprint(), "nightly", base.results)
    entries = store.load_baseline("amd-zen4-2c-1n", "nightly").entries
    assert entries[SERVER].headline == rate(99.0) and entries[PLAIN].headline is None


def test_a_store_at_0003_upgrades_and_its_results_have_no_headline(store_url):
    from alembic import command
    from alembic.config import Config

    store = HistoryStore(store_url)
    for i in range(2):
        store.add_run(run(i, {SERVER: (0.010, rate(100.0)), PLAIN: (0.010, None)}))
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with store.schema_transaction() as conn:  # an old store, as perfsuite 0003 left it
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0003")
    assert store.revision() == "0003"
    with store.engine.connect() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("results")}
        assert "headline" not in columns and "samples_s" in columns
    store.close()
    store = HistoryStore(store_url)  # opening migrates
    assert store.revision() == "0005"
    with store.engine.connect() as conn:
        assert conn.scalar(sa.select(sa.func.count()).select_from(schema.results)) == 4
    assert all(r.headline is None for r in store.load_run().results)
    assert all(p.headline is None for s in store.series().values() for p in s)
    gate = gate_history(store, min_runs=1, confirm=1)  # judged on samples again, as before
    assert {v.id for v in gate.history.verdicts} == {SERVER, PLAIN}
    assert all("rate threshold" not in (v.reason or "") for v in gate.history.verdicts)


def test_the_history_gate_judges_a_server_point_on_its_rate(store_url):
    """The rate fell 40% in the last two runs while its latencies halved (a lower load): the
    samples alone would read as a big improvement. A plain point 25% slower is still found on
    its samples, and a steady one passes."""
    store = HistoryStore(store_url)
    for i in range(6):
        slow = i >= 4
        store.add_run(
            run(
                i,
                {
                    SERVER: (0.005 if slow else 0.010, rate(60.0 if slow else 100.0)),
                    PLAIN: (0.0125 if slow else 0.010, None),
                    STEADY: (0.010, None),
                },
            )
        )
    gate = gate_history(store)
    verdicts = {v.id: v for v in gate.history.verdicts}
    server = verdicts[SERVER]
    assert server.verdict == "regressed", server
    assert server.change == pytest.approx(100 / 60 - 1)  # the rate's, not the samples' -50%
    assert "server rate 100 (4 baseline runs, 100-100) -> 60 queries/s" in server.reason
    assert verdicts[PLAIN].verdict == "regressed" and 0.2 < verdicts[PLAIN].change < 0.3
    assert "rate threshold" not in verdicts[PLAIN].reason
    assert verdicts[STEADY].verdict == "unchanged", verdicts[STEADY]
    failing = {s.id: s for s in gate.failing}
    assert set(failing) == {SERVER, PLAIN}
    assert "2 runs in a row" in failing[SERVER].why


def test_a_headline_that_is_not_gated_leaves_the_point_on_its_samples(store_url):
    store = HistoryStore(store_url)
    for i in range(6):
        slow = i >= 4
        store.add_run(run(i, {SERVER: (0.0125 if slow else 0.010, rate(100.0, gated=False))}))
    verdict = gate_history(store).history.verdicts[0]
    assert verdict.verdict == "regressed" and 0.2 < verdict.change < 0.3
    assert "rate threshold" not in verdict.reason


def test_an_llm_points_ttft_and_tpot_are_history_metrics(store_url):
    """``--metric ttft_s`` / ``tpot_s`` read a decode record's TTFT and TPOT (an llm_server
    point's p99s): a TPOT that doubles at run 6 is a change point on that line, while the
    point's gated goodput stays the default metric's line."""
    from perfsuite.history.changes import detect

    llm = "llm-fw-fp32-t1-unbound-b1-llm_server"
    store = HistoryStore(store_url)
    for i in range(12):
        tpot = 0.010 if i < 6 else 0.020
        rng = np.random.default_rng(i)
        rec = result(llm, 0.2, T0 + i * DAY, rng, rate(20.0))
        rec = rec.model_copy(update={"decode": records.DecodeRecord(
            test="llm_server", tokens=48, tokens_per_s=600.0, ttft_s=0.05, tpot_s=tpot,
            weight_bytes_per_token=10**6)})  # fmt: skip
        summary = records.RunSummary(profile={"name": "nightly"}, fingerprint=fingerprint(),
                                     points=[records.RunPoint(id=llm, status="ok")])  # fmt: skip
        store.add_run(records.Run(summary=summary, results=[rec], source=f"run-{i}"))
    series = store.series(metric="tpot_s")[(llm, "amd-zen4-2c-1n")]
    assert [p.value for p in series] == [0.010] * 6 + [0.020] * 6
    assert [p.value for p in store.series(metric="ttft_s")[(llm, "amd-zen4-2c-1n")]] == [0.05] * 12
    (change,) = detect(store, llm, metric="tpot_s", save=False)
    assert change.metric == "tpot_s" and (change.before, change.after) == (0.010, 0.020)
    assert not store.series(metric="tpot_s", pattern=PLAIN)
