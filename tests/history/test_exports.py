"""Exports to the dashboards teams read (github-action-benchmark, Bencher, Conbench), each
checked against the consumer's schema written from its documentation (tests/data/
export_schemas/), and the run's provenance (commit, branch, dirty flag, repository)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from paths import DATA

from perfsuite.cli import main
from perfsuite.history import exports
from perfsuite.host.provenance import from_actions, from_git, provenance
from perfsuite.records import Provenance
from perfsuite.store.files import read_run

RUN = DATA / "golden" / "run"
SCHEMA = {
    "github-action-benchmark": "github-action-benchmark.schema.json",
    "bmf": "bmf.schema.json",
    "conbench": "conbench-result.schema.json",
}


def _schema(fmt: str) -> dict:
    return json.loads((DATA / "export_schemas" / SCHEMA[fmt]).read_text())


@pytest.mark.parametrize("fmt", exports.FORMATS)
def test_each_export_is_accepted_by_its_consumers_schema(fmt, tmp_path, capsys):
    out = tmp_path / f"{fmt}.json"
    assert main(["export", "--format", fmt, str(RUN), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    schema = _schema(fmt)
    if fmt == "conbench":
        assert doc, "one BenchmarkResult per point"
        for result in doc:
            jsonschema.validate(result, schema)
    else:
        jsonschema.validate(doc, schema)
    run = read_run(RUN)
    ok = sorted(r.id for r in run.results if r.ok)
    names = {"github-action-benchmark": lambda d: sorted(e["name"] for e in d),
             "bmf": lambda d: sorted(d),
             "conbench": lambda d: sorted(e["tags"]["name"] for e in d)}  # fmt: skip
    assert names[fmt](doc) == ok


@pytest.mark.parametrize("fmt", exports.FORMATS)
def test_a_run_kept_in_a_store_exports_as_its_directory_does(fmt, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert main(["db", "--store", url, "import", str(RUN)]) == 0
    from_dir, from_store = tmp_path / "dir.json", tmp_path / "store.json"
    assert main(["export", "--format", fmt, str(RUN), "--out", str(from_dir)]) == 0
    assert main(["export", "--format", fmt, url, "--out", str(from_store)]) == 0
    got, want = json.loads(from_store.read_text()), json.loads(from_dir.read_text())
    schema = _schema(fmt)
    for doc in got if fmt == "conbench" else [got]:
        jsonschema.validate(doc, schema)
    if fmt == "conbench":  # samples thinned as stored; the run's id names where it came from
        assert [r["tags"] for r in got] == [r["tags"] for r in want]
        assert [r["machine_info"] for r in got] == [r["machine_info"] for r in want]
    else:
        assert got == want  # statistics as measured
    capsys.readouterr()
    assert main(["export", "--format", fmt, url, "--run", "ffffff"]) == 2
    assert "no run 'ffffff'" in capsys.readouterr().err


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
    cb = exports.conbench(run)[0]
    for bad in ({**cb, "stats": {**cb["stats"], "unit": "ms"}},
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
    cb = {e["tags"]["name"]: e for e in exports.conbench(run)}[r.id]
    assert cb["stats"]["data"] == r.samples_s and cb["stats"]["unit"] == "s"


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
