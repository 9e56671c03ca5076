"""Parse LoadGen's ``mlperf_log_summary.txt`` into fields, the VALID verdict and LoadGen's own
reasons for an INVALID one.

Keys are LoadGen's own labels ("Scheduled samples per second", "90.0th percentile latency
(ns)", "Min duration satisfied", "Early stopping 90.0th percentile estimate", ...) so that a
reader can grep the summary for them; numbers become floats, Yes/NO become booleans, anything
else ("VALID", "Server", "Skipped") stays text. The first occurrence of a label wins: the
results section comes before the additional stats and the test parameters.
"""

from __future__ import annotations

import re

FieldValue = float | bool | str

# Bulleted sections: a " * " line starts an item, an indented line without one continues it.
_BULLET_SECTIONS = {
    "Recommendations:",
    "Early Stopping Result:",
    "TTFT Early Stopping Result:",
    "TPOT Early Stopping Result:",
}
_ERRORS = re.compile(r"^\d+ ERRORS encountered")
# "2 warnings encountered. See detailed log." can close a VALID run: kept as a field, not a
# reason (a reason explains an INVALID result)
_WARNINGS = re.compile(r"^\d+ warnings encountered")
_ESTIMATE = re.compile(r"^\* (Early stopping .*percentile estimate)\s*:\s*(\S+)$")


class SummaryError(ValueError):
    """The text is not a LoadGen summary."""


def _value(text: str) -> FieldValue:
    if text == "Yes":
        return True
    if text in ("NO", "No"):
        return False
    try:
        return float(text)
    except ValueError:
        return text


def _bullets(lines: list[str]) -> list[str]:
    items: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("* ") or not items:
            items.append(stripped)
        else:
            items[-1] += " " + stripped
    return items


def parse_summary(text: str) -> tuple[dict[str, FieldValue], bool, list[str]]:
    """-> (fields, valid, reasons). Reasons are LoadGen's lines explaining an INVALID result
    (recommendations, unmet early stopping) plus any 'N ERRORS encountered' line."""
    fields: dict[str, FieldValue] = {}
    sections: dict[str, list[str]] = {}
    errors: list[str] = []
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in _BULLET_SECTIONS:
            section = sections.setdefault(stripped, [])
            continue
        if not stripped or stripped.startswith("===="):
            section = None
            continue
        if section is not None and (stripped.startswith("* ") or line.startswith(" ")):
            section.append(line)
            continue
        section = None
        if _ERRORS.match(stripped):
            errors.append(stripped)
            continue
        if _WARNINGS.match(stripped):
            fields.setdefault("Warnings", stripped)
            continue
        key, colon, value = stripped.partition(":")
        if colon and key.strip() and value.strip():
            fields.setdefault(key.strip(), _value(value.strip()))

    if "Result is" not in fields:
        raise SummaryError("not a LoadGen summary: no 'Result is' line")
    valid = fields["Result is"] == "VALID"

    reasons: list[str] = []
    for name, lines in sections.items():
        items = _bullets(lines)
        for item in items:
            match = _ESTIMATE.match(item)
            if match:
                fields.setdefault(match.group(1), _value(match.group(2)))
        if name == "Recommendations:" or (not valid and _early_stopping_failed(name, fields)):
            reasons.extend(items)
    return fields, valid, reasons + errors


def _early_stopping_failed(section: str, fields: dict[str, FieldValue]) -> bool:
    # LoadGen prints the early-stopping bullets for VALID runs too; they explain only a failure.
    return "Early Stopping" in section and fields.get("Early stopping satisfied") is False
