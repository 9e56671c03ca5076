"""Terminal tables shared by the verbs (``db`` and fleet qualification)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from perfsuite.text import terminal_line

LONG_TABLE = 200  # rows past which rich's layout costs seconds (100,000 rows: about 30 s)


def table(title: str, columns: list[str], rows: list[list]) -> None:
    if len(rows) > LONG_TABLE:
        _aligned(title, columns, rows)
        return
    t = Table(title=_plain(title))
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*[_plain(x) for x in r])
    Console(width=200).print(t)


def _aligned(title: str, columns: list[str], rows: list[list]) -> None:
    """A long table as plain aligned lines: as greppable, and as fast as printing."""
    cells = [[terminal_line(c) for c in row] for row in [columns, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = [terminal_line(title)]
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    print("\n".join(lines))


def _plain(value) -> Text:
    """A cell as plain text: ``[bold]`` in a host name is not rich markup, and control
    characters are shown, not obeyed."""
    return Text(terminal_line(value))


def fleet_table(scores, verdicts: dict[str, str], missing: dict[str, str] | None = None) -> None:
    """host | class | its own qualification verdict | fleet verdict | failing | outliers; a
    host of the fleet that brought no report back is a MISSING row with the reason."""
    rows = []
    for s in scores:
        failing = ", ".join(
            f"{f.metric} ({f.category}"
            + (f" {f.deviation:+.1%})" if f.deviation is not None else " missing)")
            for f in s.failures
        )
        outliers = ", ".join(s.outliers)
        rows.append(
            [s.host, s.hardware_class, verdicts[s.host], s.verdict, failing or "-", outliers or "-"]
        )
    rows += [[host, "?", "no report", "MISSING", why, "-"] for host, why in (missing or {}).items()]
    columns = ["host", "class", "qualify", "fleet", "failing", "outliers (|z|>3.5)"]
    cls = scores[0].hardware_class if scores else "?"
    table(f"fleet of {cls}: {len(rows)} hosts", columns, rows)
