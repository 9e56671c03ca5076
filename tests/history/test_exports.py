"""Exports to the dashboards teams read (github-action-benchmark, Bencher, Conbench), each
checked against the consumer's rules (tests/data/export_schemas/: Conbench's transcribed from
its server code) and, for Conbench, by its own client library ``benchadapt``; the figures a
scenario, decode or kernel benchmark is known by are in every one of them; and the run's
provenance (commit, branch, dirty flag, repository)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import warnings
from pathlib import Path

import jsonschema
import pytest
from paths import DATA

from perfsuite import records
from perfsuite.cli import main
from perfsuite.history import exports
from perfsuite.host.provenance import from_actions, from_git, provenance
from perfsuite.records import Provenance
from perfsuite.store.files import read_run
from perfsuite.sweep.session import run_summary
from perfsuite.writing import write_json

RUN = DATA / "golden" / "run"
SCHEMA = {
    "github-action-benchmark": "github-action-benchmark.schema.json",
    "bmf": "bmf.schema.json",
    "conbench": "conbench-result.schema.json",
}
GITHUB = ["--repository", "https://github.com/example/perfsuite", "--commit", "c" * 40]
SOURCE = Provenance(repository="https://github.com/example/perfsuite", commit="c" * 40)
SERVER_RATE = 44.51
ROOFLINE = 0.44


def _schema(fmt: str) -> dict:
    return json.loads((DATA / "export_schemas" / SCHEMA[fmt]).read_text())


def _args(fmt: str) -> list[str]:
    return GITHUB if fmt == "conbench" else []


def _headline(name, value, unit, higher, **more) -> records.Headline:
    return records.Headline(name=name, value=value, unit=unit, higher_is_better=higher, **more)


def scenario_run(tmp_path: Path) -> Path:
    """The golden run with what a default sweep adds: a server point (VALID at 44.51
    scheduled samples/s), an offline point whose only LoadGen run was INVALID, a decode point
    at 44% of its roofline, and two kernel benchmarks. Written as a run directory."""
    golden = read_run(RUN)
    base = golden.results[0]

    def point(mode: str, **fields) -> records.Result:
        p = base.point.but(mode=mode)
        return base.model_copy(update={"id": p.id, "point": p, **fields})

    server = point(
        "server",
        headline=_headline(
            "Scheduled samples per second", SERVER_RATE, "samples/s", True, gated=True, valid=True
        ),
    )
    offline = point(
        "offline", headline=_headline("Samples per second", 51.47, "samples/s", True, valid=False)
    )
    decode = point("tg128", headline=_headline("tg128 tokens/s", 542.9, "tokens/s", True),
                   decode=records.DecodeRecord(
                       test="tg128", tokens=128, tokens_per_s=542.9, ttft_s=0.004,
                       tpot_s=0.0018, weight_bytes_per_token=10**7, triad_gbs=12.3,
                       roofline_tokens_per_s=1233.9, roofline_fraction=ROOFLINE))  # fmt: skip
    results = [*golden.results, server, offline, decode]
    summary = run_summary(golden.summary.profile, golden.summary.fingerprint, results)
    kernels = [
        records.KernelResult(id=f"test_gemm_f32[{n}-1]", group=f"kernels gemm n={n}",
                             figure=_headline("GFLOP/s", g, "GFLOP/s", True),
                             samples_s=[0.01, 0.011], timestamp=time.time())
        for n, g in ((256, 80.5), (1024, 101.2))
    ]  # fmt: skip
    summary = summary.model_copy(update={"kernels": kernels})
    out = tmp_path / "run"
    for r in results:
        write_json(out / "points" / f"{r.id}.json", records.dump(r))
    write_json(out / "summary.json", records.dump(summary))
    return out


@pytest.fixture
def scenarios(tmp_path) -> Path:
    return scenario_run(tmp_path)


@pytest.mark.parametrize("fmt", exports.FORMATS)
def test_each_export_is_accepted_by_its_consumers_schema(fmt, scenarios, tmp_path, capsys):
    out = tmp_path / f"{fmt}.json"
    assert main(["export", "--format", fmt, str(scenarios), "--out", str(out), *_args(fmt)]) == 0
    doc = json.loads(out.read_text())
    schema = _schema(fmt)
    for part in doc if fmt == "conbench" else [doc]:
        jsonschema.validate(part, schema)
    run = read_run(scenarios)
    ok = {r.id for r in run.results if r.ok}
    names = {"github-action-benchmark": lambda d: {e["name"] for e in d},
             "bmf": lambda d: set(d),
             "conbench": lambda d: {e["tags"]["name"] for e in d}}  # fmt: skip
    assert ok <= names[fmt](doc)
    if fmt == "github-action-benchmark":  # kernel rates: bigger is better
        rates = exports.github_action_benchmark(run, "throughput")
        jsonschema.validate(rates, schema)
        doc = rates
    assert {k.id for k in run.summary.kernels} <= names[fmt](doc)


@pytest.mark.parametrize("fmt", exports.FORMATS)
def test_a_run_kept_in_a_store_exports_as_its_directory_does(fmt, scenarios, tmp_path, capsys):
    """Kernel benchmarks are the summary's, which a store does not keep: compared without."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert main(["db", "--store", url, "import", str(scenarios)]) == 0
    from_dir, from_store = tmp_path / "dir.json", tmp_path / "store.json"
    args = ["export", "--format", fmt, *_args(fmt)]
    assert main([*args, str(scenarios), "--out", str(from_dir)]) == 0
    assert main([*args, url, "--out", str(from_store)]) == 0
    got, want = json.loads(from_store.read_text()), json.loads(from_dir.read_text())
    schema = _schema(fmt)
    for doc in got if fmt == "conbench" else [got]:
        jsonschema.validate(doc, schema)
    if fmt == "conbench":  # samples thinned as stored; the run's id names where it came from
        want = [r for r in want if "group" not in r["tags"]]
        assert [r["tags"] for r in got] == [r["tags"] for r in want]
        assert [r["machine_info"] for r in got] == [r["machine_info"] for r in want]
        assert [r["stats"] for r in got if r["tags"]["measure"] != "latency"] == [
            r["stats"] for r in want if r["tags"]["measure"] != "latency"
        ]
    elif fmt == "bmf":
        assert got == {k: v for k, v in want.items() if not k.startswith("test_")}
    else:
        assert got == [e for e in want if not e["name"].startswith("test_")]
    capsys.readouterr()
    assert main(["export", "--format", fmt, url, "--run", "ffffff", *_args(fmt)]) == 2
    assert "no run 'ffffff'" in capsys.readouterr().err


def test_the_headline_figures_are_in_every_output_and_an_invalid_rate_in_none(scenarios):
    """The server point's VALID rate and the decode point's roofline fraction: in
    summary.json, and in all three exports; the INVALID offline rate is in summary.json with
    its verdict, and exported by none as a rate."""
    run = read_run(scenarios)
    server = next(r for r in run.results if r.point.mode == "server")
    decode = next(r for r in run.results if r.point.mode == "tg128")
    offline = next(r for r in run.results if r.point.mode == "offline")
    figures = {p.id: p.figures for p in run.summary.points}
    assert figures[server.id][0].value == SERVER_RATE and figures[server.id][0].valid is True
    assert [f.name for f in figures[decode.id]] == [
        "tg128 tokens/s", "TTFT", "TPOT", "roofline fraction"]  # fmt: skip
    assert figures[offline.id][0].valid is False

    up = {e["name"]: e for e in exports.github_action_benchmark(run, "throughput")}
    down = {e["name"]: e for e in exports.github_action_benchmark(run)}
    assert up[f"{server.id} Scheduled samples per second"]["value"] == SERVER_RATE
    assert "VALID" in up[f"{server.id} Scheduled samples per second"]["extra"]
    assert up[f"{decode.id} roofline fraction"]["value"] == ROOFLINE
    assert down[f"{decode.id} TPOT"]["unit"] == "s"
    assert all(e["extra"].startswith("customBiggerIsBetter") for e in up.values())
    assert all(e["extra"].startswith("customSmallerIsBetter") for e in down.values())
    bmf = exports.bmf(run)
    assert bmf[server.id]["scheduled-samples-per-second"]["value"] == SERVER_RATE
    assert bmf[decode.id]["roofline-fraction"]["value"] == ROOFLINE
    cb = exports.conbench(run, SOURCE)
    (rate,) = [
        e for e in cb if e["tags"]["name"] == server.id and e["tags"]["measure"] != "latency"
    ]
    assert rate["stats"]["data"] == [SERVER_RATE] and rate["stats"]["unit"] == "i/s"
    assert rate["validation"] == {"loadgen": "VALID"}
    assert all(e["info"]["roofline-fraction"] == ROOFLINE for e in cb
               if e["tags"]["name"] == decode.id)  # fmt: skip
    cb_names = [f"{e['tags']['name']} {e['tags']['measure']}" for e in cb]
    for names in (up, down, cb_names):
        assert not any(offline.id in n and "Samples per second" in n for n in names)
    assert "samples-per-second" not in bmf[offline.id]


def test_every_conbench_result_is_accepted_by_benchadapt(scenarios):
    """Conbench's client library builds a BenchmarkResult from every entry, with no
    "not publishable" warning, and publishes exactly what perfsuite wrote."""
    from benchadapt import BenchmarkResult

    doc = exports.conbench(read_run(scenarios), SOURCE)
    # a latency result per point (11), the server rate, tokens/s, TTFT, TPOT, two kernels
    assert len(doc) == 11 + 1 + 3 + 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for entry in doc:
            published = BenchmarkResult(**entry).to_publishable_dict()
            assert {k: v for k, v in published.items() if k != "run_name"} == {
                "run_tags": {},
                **entry,
            }
    with pytest.raises(ValueError, match="repository"):  # what Conbench makes of no github
        BenchmarkResult(**{**doc[0], "github": {"commit": "c" * 40}})


def test_conbench_without_a_github_repository_is_refused_in_one_line(capsys):
    assert main(["export", "--format", "conbench", str(RUN)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "--perf-repository" in err and "--repository" in err
    gitlab = ["--repository", "https://gitlab.com/a/b", "--commit", "c" * 40]
    assert main(["export", "--format", "conbench", str(RUN), *gitlab]) == 2
    assert "not a https://github.com/ one" in capsys.readouterr().err
    assert main(["export", "--format", "bmf", str(RUN), *GITHUB]) == 2
    assert main(["export", "--format", "bmf", str(RUN), "--measure", "throughput"]) == 2
    assert "its file holds every measure" in capsys.readouterr().err


def test_the_schemas_refuse_what_a_bug_could_write():
    """The schemas can fail: each refuses a document with one field wrong."""
    run = read_run(RUN)
    gab = exports.github_action_benchmark(run)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{**gab[0], "value": "fast"}], _schema("github-action-benchmark"))
    bmf = exports.bmf(run)
    name = next(iter(bmf))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({name: {"latency": {"lower_value": 1.0}}}, _schema("bmf"))
    cb = exports.conbench(run, SOURCE)[0]
    for bad in ({**cb, "machine_info": {**cb["machine_info"], "gpu_count": None}},
                {k: v for k, v in cb.items() if k != "github"},
                {**cb, "stats": {**cb["stats"], "unit": "ms"}},
                {**cb, "tags": {"model": "x"}},
                {**cb, "github": {"repository": "https://gitlab.com/a/b", "commit": "abc"}},
                {k: v for k, v in cb.items() if k != "batch_id"}):  # fmt: skip
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, _schema("conbench"))


def test_values_are_the_runs_statistics_in_the_consumers_units():
    run = read_run(RUN)
    r = next(r for r in run.results if r.ok)
    gab = {e["name"]: e for e in exports.github_action_benchmark(run)}
    assert gab[r.id]["value"] == r.stats.latency_p50_ms and gab[r.id]["unit"] == "ms"
    up = {e["name"]: e for e in exports.github_action_benchmark(run, "throughput")}
    assert up[r.id]["value"] == r.stats.throughput_ips
    bmf = exports.bmf(run)[r.id]
    assert bmf["latency"]["value"] == pytest.approx(r.stats.latency_p50_ms * 1e6)  # ns
    assert bmf["latency"]["lower_value"] <= bmf["latency"]["value"]
    assert bmf["latency"]["value"] <= bmf["latency"]["upper_value"]
    cb = {e["tags"]["name"]: e for e in exports.conbench(run, SOURCE)}[r.id]
    assert cb["stats"]["data"] == r.samples_s and cb["stats"]["unit"] == "s"
    assert cb["machine_info"]["gpu_count"] == 0 and cb["machine_info"]["gpu_product_names"] == []


def test_a_run_with_a_github_commit_gives_conbench_its_github_object():
    run = read_run(RUN)
    source = Provenance(commit="a" * 40, branch="main", dirty=False,
                        repository="git@github.com:example/perfsuite.git")  # fmt: skip
    run = run.model_copy(update={"summary": run.summary.model_copy(update={"source": source})})
    cb = exports.conbench(run)[0]
    assert cb["github"] == {
        "commit": "a" * 40,
        "repository": "https://github.com/example/perfsuite",
    }
    assert cb["run_reason"] == "commit"
    jsonschema.validate(cb, _schema("conbench"))


def test_export_of_a_missing_run_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["export", "--format", "bmf", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfsuite export: ") and len(err.strip().splitlines()) == 1


# -- provenance --------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_provenance_from_git_sees_commit_branch_and_dirty(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    assert from_git(tmp_path) == Provenance()  # not a repository: unattributed, no error
    git("init", "-q", "-b", "trunk")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (tmp_path / "f.txt").write_text("1")
    git("add", "f.txt")
    git("commit", "-q", "-m", "one")
    git("remote", "add", "origin", "https://github.com/example/repo.git")
    clean = from_git(tmp_path)
    assert len(clean.commit) == 40 and clean.branch == "trunk" and clean.dirty is False
    assert clean.repository == "https://github.com/example/repo.git"
    (tmp_path / "f.txt").write_text("2")
    assert from_git(tmp_path).dirty is True


def test_provenance_in_actions_and_overrides():
    env = {"GITHUB_SHA": "b" * 40, "GITHUB_REF_NAME": "main", "GITHUB_REPOSITORY": "o/r",
           "GITHUB_SERVER_URL": "https://github.com"}  # fmt: skip
    assert from_actions(env) == Provenance(
        commit="b" * 40, branch="main", repository="https://github.com/o/r"
    )
    pr = from_actions({**env, "GITHUB_HEAD_REF": "feature"})
    assert pr.branch == "feature"  # a pull request's own branch, not the merge ref
    assert from_actions({}) == Provenance()
    got = provenance(Path("/"), env, {"commit": "c" * 40, "branch": None})
    assert got.commit == "c" * 40 and got.branch == "main"  # an option beats Actions
