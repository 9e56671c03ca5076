"""One policy for every entry-point group (``perfsuite.plugins``): a plugin that cannot be
loaded is skipped with one warning line naming its package, group and name; the plugins
beside it still load."""

from __future__ import annotations

import sys
import warnings

import pytest
from fake_dist import install

from perfsuite import plugins, store
from perfsuite.gate.judge import RULES, default_rules

BROKEN = "raise ImportError('needs libteam >= 2\\n(second line of the reason)')\n"
ENTRY_POINTS = """\
[perfsuite.rules]
strict = team_broken:StrictRule

[perfsuite.stores]
team = team_broken:TeamStore
"""


@pytest.fixture
def broken_package(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "team-plugins", "team_broken", BROKEN, ENTRY_POINTS)
    default_rules.cache_clear()
    yield
    default_rules.cache_clear()
    sys.modules.pop("team_broken", None)


def _skipped(load) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load()
    return [str(w.message) for w in caught if issubclass(w.category, plugins.PluginWarning)]


def test_a_broken_plugin_gives_the_same_one_line_in_every_group(broken_package):
    rules = _skipped(lambda: plugins.load("perfsuite.rules"))
    stores = _skipped(lambda: plugins.load("perfsuite.stores"))
    assert rules == [
        "perfsuite: skipped plugin 'strict' (team_broken:StrictRule) of package 'team-plugins' "
        "in entry-point group perfsuite.rules: ImportError: needs libteam >= 2"
    ]
    assert stores == [
        rules[0]
        .replace("'strict' (team_broken:StrictRule)", "'team' (team_broken:TeamStore)")
        .replace("perfsuite.rules", "perfsuite.stores")
    ]


def test_the_gate_and_the_stores_skip_a_broken_plugin_and_carry_on(broken_package):
    assert len(_skipped(lambda: default_rules())) == 1
    assert default_rules() == RULES  # the built-in rules, nothing of the broken package

    def open_team_store():
        with pytest.raises(store.StoreError, match="unknown scheme 'team'"):
            store.open_store("team://x")

    assert len(_skipped(open_team_store)) == 1
    assert "team" not in store.STORES
