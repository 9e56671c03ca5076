"""Hostile but realistic input (issue 47), one test per class of failure, each with several
inputs of its class: secrets never printed or recorded, writers that respect what is at the
path, nothing non-finite written, records that hold what was measured, bad input answered
as bad input (exit 2, one line), empty plans not green, bounded LoadGen schedules, Ctrl-C
at any moment, ab sides as run directories, terminal-safe echoes, messages that say what
happened."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from history_data import write_run
from paths import REPO

from perfsuite import cli
from perfsuite.execute.interpreter import Interpreter
from perfsuite.execute.isolation import WorkerError
from perfsuite.host.provenance import provenance
from perfsuite.records import MeasureProtocol, Point, Provenance
from perfsuite.serve import MAX_SCHEDULED_QUERIES, ScenarioSettings, SettingsError
from perfsuite.store import open_store
from perfsuite.store.database import open_history
from perfsuite.store.engine import StoreError
from perfsuite.store.files import read_run
from perfsuite.sweep.plan import (
    PlanError,
    expand,
    load_profiles,
    require_points,
    select_profile,
)
from perfsuite.text import NotFinite, SafeTerminal
from perfsuite.urls import hide_secrets, mask_url, without_credentials
from perfsuite.writing import NotWritable, atomic_write_text, write_json

pytest_plugins = ["pytester"]
SECRET = "S3cretTok"
PID = "m00-fw-fp32-t1-unbound-b1"
PROFILES = load_profiles(REPO / "pyproject.toml")


@pytest.fixture
def run_dir(tmp_path) -> Path:
    return write_run(tmp_path / "runs", 0, {PID: 0.01})


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def main(argv: list[str]) -> int:
    """The CLI's exit code, argparse's usage errors (SystemExit) included."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return exc.code


def _one_line(err: str) -> str:
    assert err.count("\n") == 1, err
    return err


# 1 -------------------------------------------------------------------------------------------
SECRET_URLS = [
    f"postgresql+psycopg://alice@127.0.0.1:1/perf?password={SECRET}",
    f"postgresql+psycopg://alice:{SECRET}@127.0.0.1:1/perf",
    f"postgresql+psycopg://alice:p@{SECRET}@127.0.0.1:1/perf",  # a raw @ in the password
    f"postgresql+psycopg://127.0.0.1:1/perf?sslmode=disable&sslpassword={SECRET}",
    f"postgresql://bob@127.0.0.1:1/perf?user=bob&PassWord={SECRET}#frag",
    f"https://ghp_{SECRET}0123456789abcd@github.com/o/r.git",  # a token as the user name
]


@pytest.mark.parametrize("url", SECRET_URLS)
def test_no_secret_of_a_store_url_is_printed(url, tmp_path, capsys, monkeypatch):
    assert SECRET not in mask_url(url) and SECRET not in hide_secrets(f"store {url}, again")
    assert "127.0.0.1" in mask_url(url) or "github.com" in mask_url(url)
    for argv, env in (
        (["db", "--store", url, "runs"], None),
        (["db", "runs"], url),  # $PERFSUITE_STORE
        (["db", "--store", url, "runs", "--bogus", url], None),  # argparse's own line
        (["export", url, "--format", "bmf"], None),
    ):
        if env:
            monkeypatch.setenv("PERFSUITE_STORE", env)
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert SECRET not in out + err and _one_line(err), (argv, err)
        monkeypatch.delenv("PERFSUITE_STORE", raising=False)
    with pytest.raises(StoreError) as info:
        open_store(url.replace("https://", "postgresql+psycopg://"))
    assert SECRET not in str(info.value)


# 2 -------------------------------------------------------------------------------------------
REMOTES = [
    f"https://gitlab-ci-token:{SECRET}@gitlab.example.com/g/p.git",
    f"https://x-access-token:{SECRET}@github.com/o/r",
    f"https://{SECRET}@github.com/o/r.git",
    f"ssh://git:{SECRET}@host.example.com/o/r.git",
    f"https://github.com/o/r.git?private_token={SECRET}",
]


@pytest.mark.parametrize("remote", REMOTES)
def test_repository_credentials_are_never_recorded(remote, tmp_path, run_dir, capsys):
    repo = tmp_path / "checkout"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    subprocess.run([*git, "remote", "add", "origin", remote], check=True)
    for source in (
        provenance(repo, env={}),
        provenance(repo, env={}, overrides={"repository": remote}),  # --perf-repository
        Provenance(repository=remote),
    ):
        assert source.repository and SECRET not in source.repository
        assert "@" not in without_credentials(remote).split("://", 1)[1]
    # an older run directory that recorded it: every reader strips it
    _edit(
        run_dir / "summary.json",
        lambda d: d.update(source={"commit": "a" * 40, "repository": remote}),
    )
    store = f"sqlite:///{tmp_path / 'h.sqlite'}"
    outputs = [tmp_path / f"out.{fmt}" for fmt in ("gab", "bmf", "conbench")]
    # Conbench takes GitHub repositories only: another is refused, in a line without the secret
    conbench = 0 if "://github.com/" in without_credentials(remote) else 2
    for out, fmt in zip(outputs, ("github-action-benchmark", "bmf", "conbench"), strict=True):
        code = main(["export", str(run_dir), "--format", fmt, "--out", str(out)])
        assert code == (conbench if fmt == "conbench" else 0)
    assert main(["db", "--store", store, "import", str(run_dir)]) == 0
    assert main(["db", "--store", store, "export", "--out", str(tmp_path / "db.json")]) == 0
    assert (
        main(["export", store, "--format", "conbench", "--out", str(tmp_path / "c2")]) == conbench
    )
    files = [*outputs, tmp_path / "db.json", tmp_path / "c2", tmp_path / "h.sqlite"]
    assert not [f for f in files if f.exists() and SECRET.encode() in f.read_bytes()]
    assert SECRET not in "".join(capsys.readouterr())


# 3 -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    ["sqlite://", "sqlite:///:memory:", "sqlite:///file:h?mode=memory&uri=true",
     "sqlite://relative.sqlite", "sqlite://host/h.sqlite"],
)  # fmt: skip
def test_a_store_that_cannot_outlive_the_process_is_refused(url, run_dir, capsys):
    assert main(["db", "--store", url, "import", str(run_dir)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "in memory" in err or "three slashes" in err
    with pytest.raises(StoreError):
        open_store(url)  # what --perf-store opens before measuring


# 4 -------------------------------------------------------------------------------------------
def test_writers_respect_what_is_at_the_path(tmp_path, capfd):
    target = tmp_path / "target.json"
    target.write_text("old")
    target.chmod(0o640)
    link, dangling = tmp_path / "link.json", tmp_path / "dangling.json"
    link.symlink_to(target)
    dangling.symlink_to(tmp_path / "sub" / "new.json")
    (tmp_path / "sub").mkdir()
    for path, read in ((link, target), (dangling, tmp_path / "sub" / "new.json")):
        atomic_write_text(path, "new")
        assert path.is_symlink() and read.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # a user's file keeps its mode
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    atomic_write_text(fifo, "through the pipe")
    assert reader.communicate(timeout=10)[0] == b"through the pipe"
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    atomic_write_text(Path("/dev/null"), "gone")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    atomic_write_text(Path("-"), "to stdout")
    assert capfd.readouterr().out == "to stdout"
    with pytest.raises(NotWritable, match="is a directory"):
        atomic_write_text(tmp_path, "x")
    if os.path.exists("/dev/full"):
        with pytest.raises(NotWritable, match="cannot write /dev/full"):
            atomic_write_text(Path("/dev/full"), "x")
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert not list(tmp_path.glob(".*.tmp"))


# 5 -------------------------------------------------------------------------------------------
TOP = ("latency_p90_ms", "latency_p99_ms", "latency_max_ms")


@pytest.mark.parametrize(
    "huge",
    [dict.fromkeys(TOP, 1e308),  # upper_value: 1e308 ms in ns
     dict.fromkeys(("latency_p50_ms", *TOP), 2e302),  # value
     dict.fromkeys(("latency_min_ms", "latency_p50_ms", *TOP), 1e303)],  # lower_value too
)  # fmt: skip
def test_nothing_written_is_non_finite(huge, run_dir, tmp_path, capsys):
    (point,) = (run_dir / "points").glob("*.json")
    _edit(point, lambda d: d["stats"].update(huge))
    assert main(["export", str(run_dir), "--format", "bmf", "--out", str(tmp_path / "b")]) == 2
    assert "which JSON cannot hold" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "b").exists()
    for bad in (float("nan"), float("inf"), [1, {"x": -float("inf")}]):
        with pytest.raises(NotFinite):
            write_json(tmp_path / "x.json", {"v": bad})
    assert not (tmp_path / "x.json").exists()


# 6 -------------------------------------------------------------------------------------------
def test_llm_points_refuse_a_batch_they_do_not_measure(host_tree):
    from perfsuite.host.topology import read_topology

    profile = select_profile(PROFILES, "llm", {"batch": ["1", "4", "16"]})
    points = expand(profile, read_topology(host_tree("epyc9654-1s-nps1")))
    batched = [p for p in points if p.batch > 1]
    assert batched and all("batch 1" in p.skip for p in batched)
    assert any(p.batch == 1 and not p.skip for p in points)


# 7 -------------------------------------------------------------------------------------------
GITHUB = ["--repository", "https://github.com/o/r", "--commit", "c" * 40]


def test_bad_input_is_exit_2_and_one_line(tmp_path, run_dir, capsys):
    afile = tmp_path / "a-file"
    afile.write_text("")
    bad_surrogate = write_run(tmp_path / "s", 1, {PID: 0.01})
    text = (bad_surrogate / "summary.json").read_text()
    (bad_surrogate / "summary.json").write_text(text.replace('"nightly"', '"n\\ud800"'))
    bad_types = write_run(tmp_path / "t", 2, {PID: 0.01})
    _edit(bad_types / "summary.json",
          lambda d: d["fingerprint"]["fields"].update({"cpu.physical_cores": "two"}))  # fmt: skip
    late = write_run(tmp_path / "u", 3, {PID: 0.01})
    (point,) = (late / "points").glob("*.json")
    _edit(point, lambda d: d.update(timestamp=1e15))
    store = f"sqlite:///{tmp_path / 'h.sqlite'}"
    cases = [
        ["export", str(run_dir), "--format", "bmf", "--out", str(tmp_path)],
        ["export", str(run_dir), "--format", "bmf", "--out", str(afile / "x.json")],
        ["export", str(run_dir), "--format", "bmf", "--out", ""],
        ["db", "--store", "", "runs"],
        ["db", "--store", "sqlite://relative.sqlite", "runs"],
        ["db", "--store", store, "import", str(bad_surrogate)],
        ["export", str(bad_types), "--format", "conbench", *GITHUB],
        ["export", str(late), "--format", "conbench", *GITHUB],
        ["db", "--store", store, "export", "--run", "9" * 40],
        ["db", "--store", store, "gate", "--json", str(tmp_path)],
        ["db", "--store", store, "trends", "--out", str(afile / "t.html")],
        ["qualify", "--out", str(afile / "q")],
        ["qualify", "--save-reference", str(tmp_path)],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = _one_line(capsys.readouterr().err)
        assert "internal error" not in err and "Traceback" not in err, err


# 8 -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,overrides,says",
    [("llm", {"precisions": ["int8_static"]}, "no precision"),
     ("smoke", {"mode": ["tg128"]}, "no mode"),
     ("default", {"models": ["llm_tiny"], "mode": ["latency"]}, "no mode")],
)  # fmt: skip
def test_a_plan_with_nothing_to_measure_is_not_green(name, overrides, says, host_tree):
    from perfsuite.host.topology import read_topology

    profile = select_profile(PROFILES, name, overrides)
    with pytest.raises(PlanError, match=f"plans nothing to measure: {says}"):
        require_points(profile, expand(profile, read_topology(host_tree("epyc9654-1s-nps1"))))


@pytest.mark.parametrize("mode", ["server", "tg8"])
def test_ab_with_no_point_in_turns_is_a_usage_error(mode, tmp_path, capsys):
    argv = ["ab", "--a", sys.executable, "--b", sys.executable, "--profile", "smoke",
            "--mode", mode, "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 2
    assert "perfsuite ab: profile 'smoke' plans" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


# 9 -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("qps,seconds", [(1e7, 10), (1e8, 600), (4000, 600), (2e5 + 1, 10)])
def test_loadgen_schedules_are_bounded_and_the_limit_stated(qps, seconds):
    with pytest.raises(PlanError, match=f"at most {MAX_SCHEDULED_QUERIES:,}"):
        select_profile(PROFILES, "serving", {"server_target_qps": qps,
                                             "loadgen_min_duration": seconds})  # fmt: skip
    with pytest.raises(SettingsError, match=f"at most {MAX_SCHEDULED_QUERIES:,}"):
        ScenarioSettings("server", latency_bound_ms=100, target_qps=qps, min_duration_s=seconds,
                         max_duration_s=2 * seconds)  # fmt: skip
    ok = MAX_SCHEDULED_QUERIES / seconds
    assert select_profile(PROFILES, "serving", {"server_target_qps": ok,
                                                "loadgen_min_duration": seconds})  # fmt: skip


# 10 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["build_parser", "verb_module", "forced_isa_problem"])
def test_ctrl_c_at_any_moment_is_one_line_and_130(where, monkeypatch, capsys):
    from perfsuite import kernels

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(kernels if where == "forced_isa_problem" else cli, where, interrupt)
    assert main(["info"]) == 130
    assert capsys.readouterr().err == "perfsuite: interrupted\n"


def test_ab_outputs_appear_together_or_not_at_all(tmp_path, monkeypatch, capsys):
    from perfsuite.cli import ab as ab_cli

    monkeypatch.setattr(ab_cli.ab, "run_sequential", lambda *a, **k: (ab_cli.ab.AbRun(), []))
    argv = ["ab", "--a", sys.executable, "--b", sys.executable, "--profile", "smoke",
            "--out", str(tmp_path)]  # fmt: skip

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    real = ab_cli.ab_report.write
    monkeypatch.setattr(ab_cli.ab_report, "write", interrupted)
    assert main(argv) == 130
    assert not list(tmp_path.iterdir())  # no ab.json without ab.md and ab.html
    monkeypatch.setattr(ab_cli.ab_report, "write", real)
    assert main(argv) == 0
    (run,) = tmp_path.iterdir()
    assert {p.name for p in run.iterdir()} >= {"ab.json", "ab.md", "ab.html"}


# 11 ------------------------------------------------------------------------------------------
def test_ab_sides_are_ordinary_run_directories(tmp_path):
    from perfsuite.host.fingerprint import fingerprint
    from perfsuite.sweep import ab

    point = Point(model="small_cnn", framework="onnxruntime", precision="fp32", threads=1,
                  numa_node=None, batch=1, mode="latency")  # fmt: skip
    record = json.loads(next((write_run(tmp_path, 0, {point.id: 0.01}) / "points").iterdir())
                        .read_text())  # fmt: skip
    run = ab.AbRun()
    for side in ("a", "b"):
        run.samples[side][point.id] = [0.01, 0.011, 0.012]
        run.medians[side][point.id] = [0.011]
        run.last[side][point.id] = _Last(record)
    ab.write(tmp_path / "ab", run, [point], fingerprint("/"), {"name": "smoke"}, [])
    for side in ("a", "b"):
        loaded = read_run(tmp_path / "ab" / side)
        assert [r.id for r in loaded.results] == [point.id]
        assert main(["export", str(tmp_path / "ab" / side), "--format", "bmf",
                     "--out", str(tmp_path / f"{side}.json")]) == 0  # fmt: skip


class _Last:
    """What ``ab.write`` reads of a side's last round: its measurement and software."""

    def __init__(self, record: dict):
        from perfsuite.records import Measurement

        keep = {k: v for k, v in record.items() if k in Measurement.model_fields}
        self.measurement = Measurement.model_validate(keep)
        self.software = record.get("software", {})


# 12 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["\x1b[2J", "\x1b]0;pwned\x07", "a\rb", "\x9b31m", "\x00\x7f"])
def test_text_from_data_is_not_obeyed_by_the_terminal(text, tmp_path, capsys):
    import io

    buffer = io.StringIO()
    print(f"sku {text} \x1b[1mbold\x1b[0m", file=SafeTerminal(buffer))
    shown = buffer.getvalue()
    assert text not in shown and "\x1b[1mbold\x1b[0m" in shown and shown.endswith("\n")
    store = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert main(["db", "--store", store, "history", f"x{text}"]) == 2  # an echoed pattern
    out, err = capsys.readouterr()
    assert text not in err


# 13 ------------------------------------------------------------------------------------------
def test_messages_say_what_happened(tmp_path, run_dir, capsys):
    point = Point(model="small_cnn", framework="onnxruntime", precision="fp32", threads=1,
                  numa_node=None, batch=1, mode="latency")  # fmt: skip
    slow, killed = tmp_path / "slow", tmp_path / "killed"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    killed.write_text("#!/bin/sh\nkill -KILL $$\n")
    for script in (slow, killed):
        script.chmod(0o755)
    with pytest.raises(WorkerError, match="timed out after 0.5 s"):
        Interpreter(timeout=0.5, python=str(slow)).run(point, MeasureProtocol())
    with pytest.raises(WorkerError, match="killed by signal SIGKILL"):
        Interpreter(timeout=10, python=str(killed)).run(point, MeasureProtocol())
    (rec,) = (run_dir / "points").glob("*.json")
    rec.write_text(rec.read_text()[:50])
    assert main(["export", str(run_dir), "--format", "bmf"]) == 2
    assert f"{rec} is unreadable" in _one_line(capsys.readouterr().err)
    store = f"sqlite:///{tmp_path / 'h.sqlite'}"
    open_history(store).close()
    for verb in (["history", "nope*"], ["changes", "nope*"], ["trends", "nope*"]):
        assert main(["db", "--store", store, *verb]) == 2
        assert "no benchmark matches 'nope*'" in _one_line(capsys.readouterr().err)
    good = write_run(tmp_path / "g", 0, {PID: 0.01})
    for argv, says in (
        (["export", str(good), "--format", "bmf", "--measure", "throughput"], "--measure"),
        (["export", str(good), "--format", "bmf", "--run", "1"], "--run picks"),
    ):
        assert main(argv) == 2
        assert says in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("args", [["--perf-profile", "llm", "--perf-precisions", "int8_static"],
                                  ["--perf-profile", "smoke", "--perf-mode", "tg128"]])  # fmt: skip
def test_the_plugin_ends_an_empty_plan_with_no_tests_collected(args, pytester):
    pytester.makepyfile("def test_sweep(perf_point, perf_run):\n    perf_run(perf_point)\n")
    r = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    assert r.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "plans nothing to measure" in r.stdout.str() + r.stderr.str()


@pytest.mark.parametrize(
    "store,says",
    [("", "an empty URL"), ("sqlite://", "in memory"), ("sqlite:///:memory:", "in memory")],
)
def test_the_plugin_refuses_a_store_that_keeps_nothing_before_measuring(store, says, pytester):
    pytester.makepyfile("def test_sweep(perf_point, perf_run):\n    perf_run(perf_point)\n")
    r = pytester.runpytest_subprocess(f"--perf-store={store}", "--perf-profile", "smoke")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert says in r.stdout.str() + r.stderr.str() and not list(pytester.path.glob("perf-results"))
