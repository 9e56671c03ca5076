"""Serving benchmarks: MLPerf LoadGen scenarios over any inference callable
(``loadgen.run_scenario``), its summary parser, and the server-rate search."""

from perfsuite.serve.loadgen import (
    MAX_SCHEDULED_QUERIES,
    SCENARIOS,
    ScenarioRun,
    ScenarioSettings,
    SettingsError,
    SUTError,
    run_scenario,
)
from perfsuite.serve.search import ServerSearch, estimate_capacity_qps, search_server_rate
from perfsuite.serve.summary import parse_summary

__all__ = [
    "MAX_SCHEDULED_QUERIES",
    "SCENARIOS",
    "ScenarioRun",
    "ScenarioSettings",
    "SettingsError",
    "SUTError",
    "ServerSearch",
    "estimate_capacity_qps",
    "parse_summary",
    "run_scenario",
    "search_server_rate",
]
