"""Hostile text (issue 31, item 4): whatever a run, a host or a Spark worker says is data, never
markup, in every page, table and terminal line perfsuite renders, and the history store
keeps it exactly or refuses it in one line."""

from __future__ import annotations

import random
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from history_data import DAY, T0, fingerprint

from perfsuite import records
from perfsuite.execute.measure import summarize
from perfsuite.store.database import HistoryStore
from perfsuite.store.engine import StoreError

MARKER = "zqxhostile"
# every context at once: element, attribute (both quotes), URL, style, entity, mathtext,
# cell; within the store's shortest column it fills (hosts.hardware_class, 128)
HTML_PAYLOAD = (
    f"{MARKER}<script>alert(1)</script>\"><img src=x onerror=x>' onmouseover='x "
    "javascript:x </style><svg onload=x> &amp; & $x^$ |"
)
TERM_PAYLOAD = f"{MARKER}[bold red]red[/]\x1b[2J\x1b]0;title\x07\rover\x08\x7f\x9b31m"


class _Parsed(HTMLParser):
    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str, str]] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [(tag, name, value or "") for name, value in attrs]

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def result(text: str, threads: int = 1, status: str = "ok", timestamp: float = T0):
    """A result whose model, framework, hardware class, software and error are ``text``."""
    point = records.Point(model=text, framework="fw", precision="fp32", threads=threads,
                          batch=1, mode="latency")  # fmt: skip
    samples = list(0.01 * (1 + 0.01 * np.arange(5)) * threads)
    measured = dict(samples_s=samples, stats=summarize(samples)) if status == "ok" else {}
    return records.Result(
        id=point.id, point=point, hardware_class=text, timestamp=timestamp, status=status,
        software={"software.fw": text}, error=text if status == "error" else None,
        source=records.Provenance(branch=text, repository=text), **measured,
    )  # fmt: skip


def run(text: str, day: int = 0) -> records.Run:
    """A run with ``text`` in every text field: ids, names, host, software, provenance
    (cut to the store's short columns: version 32, profile 64)."""
    recs = [result(text, timestamp=T0 + day * DAY), result(text, threads=2, status="error")]
    fp = fingerprint(host=text, hardware_class=text)
    fp["fields"]["software.perfsuite"] = text[:32]
    summary = records.RunSummary(
        profile={"name": text[:64]}, fingerprint=fp, source=recs[0].source,
        points=[records.RunPoint(id=r.id, status=r.status, error=r.error) for r in recs],
    )  # fmt: skip
    return records.Run(summary=summary, results=recs, source=text)


def run_report(text: str, tmp_path) -> str:
    from perfsuite.sweep.run_report import SlowInt8, html_page, report_lines

    recs = [result(text), result(text, threads=2)]
    fp = records.Fingerprint.model_validate(fingerprint(host=text, hardware_class=text))
    slow = [SlowInt8(recs[0].id, recs[1].id, 0.5, [text])]
    return html_page(recs, fp, report_lines(recs, fp), slow, text, None, icount=[text])


def comparison(text: str):
    from perfsuite.gate.judge import Comparison, Side

    recs = [result(text), result(text, threads=2)]
    verdicts = tuple(
        records.Verdict(
            id=r.id, verdict="regressed", change=0.2, ci=(0.1, 0.3), p_value=0.01, reason=text
        )  # fmt: skip
        for r in recs
    )
    differences = {"cpu.model": (text, text + "2")}
    c = Comparison(verdicts, False, differences, (text,), {"software.fw": (text, text)})
    side = Side.of_results(
        records.Fingerprint.model_validate(fingerprint(text, text)), recs, source=text
    )
    return c, side


def gate_page(text: str, tmp_path) -> str:
    from perfsuite.gate.report import html_report

    c, side = comparison(text)
    return html_report(c, side, side)


def ab_page(text: str, tmp_path) -> str:
    from perfsuite.records import Verdict
    from perfsuite.sweep.ab_report import html_page

    judged = Verdict(id=text, verdict="regressed", change=0.05, ci=(0.03, 0.07), p_value=0.001,
                     rounds=3, ratios=[1.04, 1.05, 1.06], threshold=0.02, alpha=0.01,
                     look=1)  # fmt: skip
    failed = Verdict(id=text + "2", verdict="error", rounds=0, reason=text)
    return html_page([judged, failed], text, text, text)


def trends_page(text: str, tmp_path) -> str:
    from perfsuite.history.trends import render

    store = HistoryStore(f"sqlite:///{tmp_path / 'h.sqlite'}")
    for day in range(3):
        store.add_run(run(text, day))
    store.annotate("*", store.runs()[0].run_key[:8], text, accepted=False)
    return render(store)


def qualification_page(text: str, tmp_path) -> str:
    """A host's page; a fleet writes one per host, titled with the host's name."""
    from perfsuite.qualify.checks import html

    check = records.Check(group=text, name=text, status="FAIL", measured=text,
                          expected={"x": text}, detail=text)  # fmt: skip
    return html([check], f"qualification of {text}")


PAGES = [run_report, gate_page, ab_page, trends_page, qualification_page]


@pytest.mark.parametrize("page", PAGES, ids=lambda f: f.__name__)
def test_no_element_or_attribute_of_a_page_comes_from_data(page, tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "hostile").mkdir()
    template = _Parsed(page("plain", tmp_path / "plain"))
    hostile = _Parsed(page(HTML_PAYLOAD, tmp_path / "hostile"))
    assert hostile.tags <= template.tags
    assert not [a for a in hostile.attrs if a[1].startswith("on")]
    # data may be an attribute's value (an id), but only whole: escaped, not broken out of
    leaked = [a for a in hostile.attrs if MARKER in a[2] and HTML_PAYLOAD not in a[2]]
    assert not leaked
    assert HTML_PAYLOAD in "".join(hostile.text)  # shown as text, not swallowed


def test_trend_pages_load_nothing_from_the_network(tmp_path):
    page = _Parsed(trends_page(HTML_PAYLOAD, tmp_path))
    remote = [
        a for a in page.attrs if a[1] in ("src", "href") and re.match(r"\s*(https?:)?//", a[2])
    ]
    assert not remote and "script" not in page.tags  # self-contained: no SRI to keep in step


MD_PAYLOAD = f"{MARKER} | cell\nrow\r``tick`<img src=x onerror=alert(1)>"


def _md_tables(text: str) -> list[list[str]]:
    """Each table row's cells as GitHub splits them (on ``|`` not escaped)."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [re.split(r"(?<!\\)\|", row)[1:-1] for row in rows]


def gate_md(text: str) -> str:
    from perfsuite.gate.report import markdown

    c, side = comparison(text)
    return markdown(c, text, text)


def ab_md(text: str) -> str:
    from perfsuite.records import Verdict
    from perfsuite.sweep.ab_report import markdown

    verdicts = [Verdict(id=text, verdict="error", rounds=0, reason=text)]
    return markdown(verdicts, text, text, text)


def history_md(text: str) -> str:
    from types import SimpleNamespace

    from perfsuite.history.gate import HistoryGate, Suspect, markdown

    stored = SimpleNamespace(run_key="0" * 64, hardware_class=text, profile=text, commit=text)
    gate = HistoryGate(stored, None, {}, None, text, failing=[Suspect(text, text, text, text)])
    return markdown(gate)


@pytest.mark.parametrize("summary", [gate_md, ab_md, history_md], ids=lambda f: f.__name__)
def test_markdown_tables_keep_their_cells_and_show_html_as_text(summary):
    plain, hostile = _md_tables(summary("plain")), _md_tables(summary(MD_PAYLOAD))
    assert [len(r) for r in hostile] == [len(r) for r in plain]  # no cell or row added
    text = summary(MD_PAYLOAD)
    outside_code = re.sub(r"(?<![\\`])(`+)(?!`).*?(?<!`)\1(?!`)", "", text)  # \` is no fence
    assert "<img" not in outside_code and MARKER in text
    assert text.count("\n") == summary("plain").count("\n")


def test_terminal_output_obeys_no_control_sequence_nor_rich_markup(capsys):
    from perfsuite.cli.tables import table
    from perfsuite.gate.report import terminal
    from perfsuite.sweep.run_report import report_lines

    table(TERM_PAYLOAD, ["host"], [[TERM_PAYLOAD]])
    table(TERM_PAYLOAD, ["host", "n"], [[TERM_PAYLOAD, i] for i in range(300)])  # plain lines
    c, side = comparison(TERM_PAYLOAD)
    terminal(print, c, TERM_PAYLOAD, TERM_PAYLOAD)
    recs = [result(TERM_PAYLOAD)]
    print(
        "\n".join(
            report_lines(
                recs, records.Fingerprint.model_validate(fingerprint(TERM_PAYLOAD, TERM_PAYLOAD))
            )
        )
    )
    out = capsys.readouterr().out
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)  # Console writes no colour here
    assert "[bold red]red[/]" in out and out.count(MARKER) > 5  # markup shown as written


def test_a_spark_workers_reason_reaches_the_terminal_inert(monkeypatch, capsys, tmp_path):
    from perfsuite.cli import qualify
    from perfsuite.fleet.qualification import FleetRun

    monkeypatch.setattr(
        qualify, "qualify_fleet", lambda *a, **k: FleetRun({}, {TERM_PAYLOAD: TERM_PAYLOAD}, {}, {})
    )
    args = [
        "--spark-master=local[1]",
        "--hosts=1",
        f"--out={tmp_path}",
        f"--store=sqlite:///{tmp_path}/h.db",
    ]
    from perfsuite.cli import main

    assert main(["qualify", *args]) == 1
    out = capsys.readouterr().out
    assert MARKER in out and not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)


def _stored(store: HistoryStore, text: str) -> None:
    """Every text field read back exactly: run, results, host, annotation, exclusion."""
    key = store.runs()[0].run_key[:8]
    store.annotate("*", key, text, accepted=False)
    store.exclude(key, text)
    row = store.runs()[0]
    loaded = store.load_run(key)
    assert (row.profile, row.excluded_reason, row.hardware_class, row.branch) == (text,) * 4
    assert row.repository == text and row.software == {"software.fw": text}
    assert {r.point.model for r in loaded.results} == {text}
    assert [r.error for r in loaded.results if not r.ok] == [text]
    assert store.fingerprint_of(row).fields["os.hostname"] == text
    assert [a.text for a in store.annotations()] == [text]


SQL_TEXT = 'it\'s "x"; DROP runs--%_%s%(x)s\\'  # within varchar(32): perfsuite_version


def test_sql_metacharacters_are_kept_exactly(store_url):
    store = HistoryStore(store_url)
    assert store.add_run(run(SQL_TEXT))
    _stored(store, SQL_TEXT)


REFUSED = {
    # Not storable on every backend (PostgreSQL refuses NUL in text and jsonb, varchar(255)
    # names, and lone surrogates are not UTF-8): refused in one line on both, so a history
    # moves between SQLite and PostgreSQL.
    "nul": "a\x00b",
    "10kB": "".join(random.Random(0).choices("abc<>'\"%_;", k=10_000)),
    "not-utf8": b"host\xff\xfe".decode("utf-8", "surrogateescape"),
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_unstorable_text_is_refused_in_one_line_and_nothing_is_written(store_url, text):
    store = HistoryStore(store_url)
    with pytest.raises(StoreError) as refused:
        store.add_run(run(text))
    assert "\n" not in str(refused.value) and store.runs() == []
