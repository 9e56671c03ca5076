"""Trend pages from the results history, opened in a real browser (headless Chromium from
Debian's ``chromium`` package) where it is installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from history_data import point_id, step_history

from perfsuite.cli import main
from perfsuite.history.trends import CHANGE_COLOUR, COLOURS
from perfsuite.store.database import HistoryStore

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trends")
    url = f"sqlite:///{tmp / 'h.sqlite'}"
    store = HistoryStore(url)
    for r in step_history(tmp / "runs", 60, 2, step_point=1, step_at=40, step=0.2):
        store.import_path(r)
    store.annotate(point_id(0), store.runs()[30].run_key[:8], "kernel update", accepted=False)
    out = tmp / "trends.html"
    assert main(["db", "--store", url, "trends", "--out", str(out)]) == 0
    return out


def test_the_page_is_self_contained_with_a_chart_per_benchmark(page):
    html = page.read_text()
    assert html.count("<figure class='trend'") == 2 and html.count("<svg") == 2
    assert "<script" not in html and not re.search(r"(src|href)=[\"']?https?:", html)
    assert re.search(r"amd-zen4-2c-1n: \+(1[5-9]|2[0-5])\.\d% at run (39|40|41) ", html)
    assert "no change point" in html  # the benchmark that did not step
    assert "note at run" in html and "kernel update" in html


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (Debian: chromium)")
def test_chromium_renders_the_charts(page, tmp_path):
    import matplotlib.image

    shot = tmp_path / "shot.png"
    common = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    subprocess.run(
        [*common, "--window-size=1000,1400", f"--screenshot={shot}", page.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
    )
    dom = subprocess.run(
        [*common, "--dump-dom", page.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert dom.count('class="trend"') == 2 and dom.count("<svg") == 2
    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (1400, 1000)

    def count(colour):
        return int(np.sum(np.all(np.abs(pixels - _rgb(colour)) < 0.06, axis=-1)))

    # The series lines and the change point's dashed marker are drawn, not just the text
    # (seen: ~125 pixels of the marker's red at this size, thousands of the line's blue).
    assert count(COLOURS[0]) > 1000, count(COLOURS[0])
    assert count(CHANGE_COLOUR) > 40, count(CHANGE_COLOUR)
