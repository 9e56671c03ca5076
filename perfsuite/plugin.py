"""perfsuite's pytest plugin (registered through the ``pytest11`` entry point): options,
hooks and fixtures only. Run-wide state lives in ``perfsuite.sweep.session.PerfSession``.

A test that takes the ``perf_point`` fixture is parametrized over the sweep's points; the
``perf_run`` fixture measures a point, feeds its raw samples to pytest-benchmark (so
``--benchmark-json``, ``--benchmark-only``/``-skip``/``-disable`` keep working) and puts
perfsuite's metrics in ``extra_info``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from perfsuite import kernels, records
from perfsuite.execute.interference import busiest_processes
from perfsuite.gate.config import GateConfigError, load_gate_config
from perfsuite.host.provenance import provenance
from perfsuite.options import OPTIONS, PLUGIN, add_options, profile_overrides
from perfsuite.prepare import cache
from perfsuite.store import ENV as STORE_ENV
from perfsuite.store import StoreError, open_store, scheme_of
from perfsuite.sweep.declared import ModelError, check_declared, declare_for_run
from perfsuite.sweep.plan import PlanError, Profile, load_profiles, select_profile
from perfsuite.sweep.session import PerfSession
from perfsuite.writing import NotWritable, check_writable_dir

SESSION = pytest.StashKey["object"]()
GATE = pytest.StashKey["object"]()
OUTCOME = pytest.StashKey["object"]()


def pytest_addoption(parser):
    add_options(parser.getgroup("perfsuite", "perfsuite inference sweep").addoption, PLUGIN)


def pytest_configure(config):
    o = config.getoption
    name = o("perf_profile") or ("default" if o("benchmark_only", False) else "smoke")
    _check_rootdir(config)
    overrides = profile_overrides(lambda key: o(f"perf_{key}"), PLUGIN)
    pyproject = config.rootpath / "pyproject.toml"
    try:
        overrides = declare_for_run(
            pyproject, o("perf_config"), o("perf_model"), o("perf_dims"), overrides
        )
        profile = select_profile(load_profiles(pyproject, o("perf_config")), name, overrides)
        check_declared(profile.models, max(profile.batch))
        problem = kernels.forced_isa_problem()  # else 'unavailable' in every record's fingerprint
        if problem:
            raise pytest.UsageError(f"perfsuite: {problem}")
        _check_outputs(config)
        gate = load_gate_config(
            pyproject if pyproject.is_file() else None, o("perf_threshold"), o("perf_alpha")
        )
    except (PlanError, ModelError, NotWritable, StoreError, GateConfigError) as exc:
        raise pytest.UsageError(f"perfsuite: {exc}") from None
    config.stash[SESSION] = _LazySession(
        profile,
        out_dir=o("perf_out"),
        counters=o("perf_counters"),
        executor=o("perf_executor"),
        baselines=o("perf_baseline"),
        spark_master=o("perf_spark_master"),
        source=provenance(
            overrides={k: o(f"perf_{k}") for k in ("commit", "branch", "repository")}
        ),
    )
    config.stash[GATE] = gate


# Options whose value is a path: "--perf-out DIR" in two words can steal pytest's rootdir.
PATH_OPTIONS = tuple(
    o.flags(PLUGIN)[0]
    for o in OPTIONS
    if o.plugin and (o.kwargs.get("type") is Path or o.name == "baseline")  # a folder or a URL
)


def _check_rootdir(config) -> None:
    """pytest finds its rootdir and ini file before it knows plugin options, so the value of
    ``--perf-out DIR`` (two words), when DIR exists, counts as a test path. Outside the project
    the rootdir becomes a common ancestor, and the project's [tool.pytest.ini_options] and
    [tool.perfsuite] (profiles, gate thresholds) would silently not be read: refuse, and say
    how to write it."""
    if config.inipath is not None:
        return
    here = config.invocation_params.dir
    args = [str(a) for a in config.invocation_params.args]
    for opt, value in zip(args, args[1:], strict=False):
        if opt in PATH_OPTIONS and (here / value).exists():
            ini = _project_ini(here)
            if ini is not None:
                raise pytest.UsageError(
                    f"perfsuite: pytest took {value} (the value of {opt}) for a test path and "
                    f"{config.rootpath} for its rootdir, so {ini} would not be read; write "
                    f"{opt}={value}"
                )


# pytest's configuration files in its own search order, and whether a file's text is one
INI_FILES = {
    "pytest.ini": lambda t: True,
    ".pytest.ini": lambda t: True,
    "pyproject.toml": lambda t: "ini_options" in tomllib.loads(t).get("tool", {}).get("pytest", {}),
    "tox.ini": lambda t: "[pytest]" in t,
    "setup.cfg": lambda t: "[tool:pytest]" in t,
}


def _project_ini(start: Path) -> Path | None:
    """The pytest configuration file pytest would find from ``start``."""
    for d in (start, *start.parents):
        for name, holds in INI_FILES.items():
            f = d / name
            try:
                if f.is_file() and holds(f.read_text()):
                    return f
            except (OSError, ValueError):
                continue
    return None


def _check_outputs(config) -> None:
    """Output locations are checked, and the stores opened (and migrated), before anything is
    measured, not after every point has run; a bad store URL is a usage error."""
    check_writable_dir(config.getoption("perf_out"), "--perf-out")
    baseline = config.getoption("perf_baseline")
    if config.getoption("perf_save_baseline") and scheme_of(baseline) == "file":
        check_writable_dir(baseline.removeprefix("file://"), "--perf-baseline")
    if os.environ.get(cache.ENV):
        check_writable_dir(os.environ[cache.ENV], cache.ENV)
    for url in (history_url(config), None if scheme_of(baseline) == "file" else baseline):
        if url:
            open_store(url).close()


def history_url(config) -> str | None:
    """Where runs are recorded: --perf-store, else $PERFSUITE_STORE; None: nowhere."""
    return config.getoption("perf_store") or os.environ.get(STORE_ENV) or None


class _LazySession:
    """Reads the topology and fingerprint only when a sweep test is collected."""

    def __init__(self, profile: Profile, **options):
        self.profile, self._options = profile, options
        self._session: PerfSession | None = None

    def get(self) -> PerfSession:
        if self._session is None:
            self._session = PerfSession(self.profile, **self._options)
        return self._session

    @property
    def started(self) -> bool:
        return self._session is not None


def pytest_generate_tests(metafunc):
    if "perf_point" not in metafunc.fixturenames:
        return
    session = metafunc.config.stash[SESSION].get()
    # the id is the parameter (the fixture below gives the Point): pytest-benchmark's JSON
    # holds parameters as they are, and a Point would be a Python repr there
    params = [
        pytest.param(p.id, id=p.id, marks=[pytest.mark.skip(reason=p.skip)] if p.skip else [])
        for p in _planned(session, metafunc.config)
    ]
    metafunc.parametrize("perf_point", params, indirect=True)


@pytest.fixture
def perf_point(request, perf_session):
    """The sweep point this test measures (parametrized by its id)."""
    return next(p for p in perf_session.points() if p.id == request.param)


EMPTY_PLAN = pytest.StashKey[str]()


def _planned(session: PerfSession, config) -> list:
    """The session's points; a plan with none is kept for ``pytest_collection_finish``,
    which ends the run with pytest's "no tests collected" code (5) and the reason, not
    green with "got empty parameter set"."""
    try:
        return session.points()
    except PlanError as exc:
        config.stash[EMPTY_PLAN] = str(exc)
        return []


def pytest_collection_finish(session):
    config = session.config
    lazy = config.stash[SESSION]
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if EMPTY_PLAN in config.stash:
        pytest.exit(f"perfsuite: {config.stash[EMPTY_PLAN]}", pytest.ExitCode.NO_TESTS_COLLECTED)
    if not config.getoption("perf_plan"):
        # sweep points were collected: pre-flight
        if lazy.started and tr is not None and (busy := busiest_processes()):
            tr.write_line(
                "perfsuite pre-flight: other processes are busy: "
                + "; ".join(busy)
                + " (their CPU use is accounted per point; disturbed windows are measured "
                "again, then flagged)",
                yellow=True,
            )
        return
    points = _planned(lazy.get(), config)
    tr.section(f"perfsuite plan: profile {lazy.profile.name}, {len(points)} point(s)")
    for p in points:
        tr.write_line(f"{p.id:<60} {'SKIP: ' + p.skip if p.skip else 'run'}")
    pytest.exit("plan printed (--perf-plan)", returncode=0)


@pytest.fixture(scope="session")
def perf_session(pytestconfig):
    return pytestconfig.stash[SESSION].get()


@pytest.fixture
def perf_run(perf_session, benchmark):
    """perf_run(point) -> result record; fails the test on a worker error or failing gate."""

    def run(point):
        result = perf_session.run(point)
        if not result.ok:
            pytest.fail(f"{point.id}: {result.error}", pytrace=False)
        acc = result.accuracy
        benchmark.group = f"{point.model} {point.framework}"  # compare's tables: like with like
        benchmark.extra_info |= {
            "perfsuite_id": point.id,
            **records.dump(point),
            **records.dump(result.stats),
            "settings": result.settings,
            "binding": result.binding and records.dump(result.binding),
            "accuracy": acc and records.dump(acc),
            "headline": result.headline and records.dump(result.headline),
            "figures": [records.dump(f) for f in result.figures],  # headline first
            "hardware_class": result.hardware_class,
        }
        if not benchmark.disabled:
            # The samples were timed by perfsuite's protocol (possibly in a bound worker);
            # hand them to pytest-benchmark as rounds of one call each.
            benchmark._mode = "perfsuite"
            bench_stats = benchmark._make_stats(1)
            for s in result.samples_s:
                bench_stats.update(s)
        if acc and not acc.passed:
            pytest.fail(
                f"{point.id}: accuracy gate failed: {acc.metric} = "
                f"{acc.value:.2f} (threshold {acc.threshold})",
                pytrace=False,
            )
        return result

    return run


def pytest_sessionfinish(session, exitstatus):
    """Save the baseline if asked, then gate against it (re-measuring regressions first)."""
    lazy = session.config.stash.get(SESSION, None)
    if lazy is None or not lazy.started:
        return
    try:
        if lazy.get().records:
            _finish(session, lazy)
    finally:
        lazy.get().close()


def _finish(session, lazy) -> None:
    # here, after a sweep: the gate's reports bring matplotlib, 0.6 s at every pytest start
    from perfsuite.sweep.finish import FinishOptions, Outcome, failures, finish

    o = session.config.getoption
    opts = FinishOptions(
        gate=session.config.stash[GATE],
        fail_on=o("perf_fail_on") or ("regression" if o("benchmark_only", False) else "never"),
        save_baseline=o("perf_save_baseline"),
        update_baseline=o("perf_update_baseline"),
        add_run=o("perf_add_baseline_run"),
        history=history_url(session.config),
    )
    try:
        outcome = finish(lazy.get(), opts)
    except Exception as exc:  # a broken gate must say so, not take the report down
        if os.environ.get("PERFSUITE_DEBUG"):
            raise
        why = f"perfsuite internal error: {exc.__class__.__name__}: {exc}"
        outcome = Outcome(lines=[why], fail=True, internal_error=True)
    session.config.stash[OUTCOME] = outcome
    if outcome.internal_error:
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
    elif failures(lazy.get().records, outcome) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config):
    lazy = config.stash.get(SESSION, None)
    if lazy is None or not lazy.started or not lazy.get().records:
        return
    session = lazy.get()
    tr = terminalreporter
    tr.section(
        f"perfsuite sweep: profile {session.profile.name} on {session.fingerprint.hardware_class}"
    )
    outcome = config.stash.get(OUTCOME, None)
    for line in outcome.report_lines if outcome is not None else []:
        tr.write_line(line)
    tr.write_line(f"results: {session.run_dir}/points/*.json, summary.json beside them")
    if outcome is not None and outcome.report is not None:
        tr.write_line(f"report: {outcome.report}")
    if outcome is not None:
        tr.section("perfsuite regression gate")
        for line in outcome.lines:
            tr.write_line(line)
