"""Baselines: what a run adds to one (``merged``, the same for every store) and the file
form, ``<dir>/<hardware-class>/<profile>.json``, schema ``perfsuite.baseline/2``
(``perfsuite.records.Baseline``; older files are upgraded on load; every load and every save
validates).

Saving is explicit, atomic, and refuses to lose data: a baseline of another hardware class is
never overwritten, and existing entries are replaced only when the caller says so
(``--perf-update-baseline``). Two runs saving into one baseline take turns: the
read-modify-write holds a lock file beside it (``filelock``), so neither loses the other's
entries. A short history records what changed when.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from filelock import FileLock, Timeout

from perfsuite import records
from perfsuite.writing import write_json

SCHEMA = records.BASELINE
LOCK_TIMEOUT_S = 600.0  # another run's save takes well under a second; a stuck lock is named
MAX_SAMPLES = 400  # enough for the rank test and the bootstrap; keeps the JSON small
HISTORY = 20
MAX_RUNS = 10


class BaselineError(ValueError):
    """A baseline is missing, corrupt, of another schema, or would be overwritten."""


class Saved(NamedTuple):
    location: Path | str  # the file, or where in a database
    added: list[str]
    updated: list[str]
    waited_s: float = 0.0


def path_for(root: Path, hardware_class: str, profile: str) -> Path:
    return Path(root) / hardware_class / f"{profile}.json"


def load(path: Path) -> records.Baseline:
    """The baseline at ``path``, upgraded to the current schema and validated."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise BaselineError(f"no baseline at {path}") from None
    except (OSError, ValueError) as exc:
        raise BaselineError(f"baseline {path} is unreadable or corrupt: {exc}") from None
    try:
        return records.load_baseline(data, f"baseline {path}")
    except records.RecordError as exc:
        raise BaselineError(str(exc)) from None


def thin_samples(samples: list[float]) -> list[float]:
    if len(samples) <= MAX_SAMPLES:
        return [float(s) for s in samples]
    idx = np.linspace(0, len(samples) - 1, MAX_SAMPLES).round().astype(int)
    return [float(samples[i]) for i in idx]  # evenly spaced in time: keeps drift visible


def entry(result: records.Result) -> records.BaselineEntry:
    return records.BaselineEntry(
        point=result.point,
        samples_s=thin_samples(result.samples_s),
        stats=result.stats,
        settings=result.settings,
        software=result.software,
        accuracy=result.accuracy,
        recorded=dt.datetime.fromtimestamp(result.timestamp, dt.UTC).isoformat(),
        # each fresh session is a run: its median carries the run-to-run spread to the gate
        runs=[float(m) for m in result.session_medians_s] or [float(np.median(result.samples_s))],
        headline=result.headline,
        # a server point's searches each count as a run of the baseline's headline
        headline_runs=(list(result.headline.runs) or [result.headline.value])
        if result.headline
        else [],
    )


def _more_typical(old, new, centre: float):
    """The entry whose samples' median is nearer the median of all runs (ties: the stored
    one). Keeping a transient slow run's samples would hide a later real regression."""
    return min((old, new), key=lambda e: abs(float(np.median(e.samples_s)) - centre))


def _instructions(old, new: records.InstructionCounts | None, update: bool, now: str):
    """The counts to keep, and whether they changed what was stored. Counts that differ from
    stored ones are a code change: replaced only on update."""
    if not new:
        return old, False
    new = new.model_copy(update={"recorded": now})
    if old and (old.isa, old.counts) == (new.isa, new.counts):
        return old, False
    if old and not update:
        changed = sorted(
            k for k in set(old.counts) | set(new.counts) if old.counts.get(k) != new.counts.get(k)
        )
        raise BaselineError(
            f"the baseline's instruction counts differ from this run's ({', '.join(changed)}): "
            "pass --perf-update-baseline to replace them"
        )
    return new, True


def merged(
    old: records.Baseline | None,
    fingerprint: records.Fingerprint,
    profile: str,
    results: list[records.Result],
    *,
    update: bool = False,
    add_run: bool = False,
    instructions: records.InstructionCounts | None = None,
    where: str = "the baseline",
) -> tuple[records.Baseline, list[str], list[str]]:
    """``old`` with the ok ``results`` added: (new baseline, added ids, updated ids).

    update: replace existing entries (an accepted change: the run history restarts).
    add_run: for existing entries, append this run's medians to the entry's run history (the
    gate learns the between-run noise from it); the samples kept are the more typical run's."""
    now = dt.datetime.now(dt.UTC).isoformat()
    hw = fingerprint.hardware_class
    if old is not None and old.hardware_class != hw:
        raise BaselineError(
            f"{where} belongs to hardware class {old.hardware_class}, "
            f"this host is {hw}: refusing to overwrite"
        )
    host = {"fields": fingerprint.fields, "classes": fingerprint.classes}
    entries = dict(old.entries) if old else {}
    ok = [r for r in results if r.ok]
    existing = [r.id for r in ok if r.id in entries]
    if existing and not (update or add_run):
        raise BaselineError(
            f"{where} already has {len(existing)} of these entries (e.g. {existing[0]}); "
            "pass --perf-update-baseline to replace them, or --perf-add-baseline-run to add "
            "this run to their history"
        )
    added = [r.id for r in ok if r.id not in entries]
    counts, counts_changed = _instructions(old and old.instructions, instructions, update, now)
    if counts_changed:
        added.append("instructions")
    for r in ok:
        new, stored = entry(r), entries.get(r.id)
        if add_run and stored is not None and not update:
            runs = (list(stored.runs) + list(new.runs))[-MAX_RUNS:]
            kept = _more_typical(stored, new, float(np.median(runs)))
            heads = (list(stored.headline_runs) + list(new.headline_runs))[-MAX_RUNS:]
            new = kept.model_copy(update={"runs": runs, "headline_runs": heads})
        entries[r.id] = new
    history = list(old.history) if old else []
    action = (
        "created"
        if not history
        else (("run-added" if add_run and not update else "updated") if existing else "added")
    )
    item = {"time": now, "action": action, "ids": sorted(added + existing),
            "software": fingerprint.software}  # fmt: skip
    data = {
        "schema": SCHEMA,
        "hardware_class": hw,
        "profile": old.profile if old else profile,
        # the fingerprint follows the latest accepted run (software versions move)
        "fingerprint": host if update or old is None else records.dump(old.fingerprint),
        "entries": {k: records.dump(e) for k, e in entries.items()},
        "history": [*(records.dump(h) for h in history), item][-HISTORY:],
    }
    if counts is not None:
        data["instructions"] = records.dump(counts)
    try:
        baseline = records.load_baseline(data, f"baseline {where}")
    except records.RecordError as exc:
        raise BaselineError(f"refusing to write an invalid baseline: {exc}") from None
    return baseline, added, existing


def save(
    root: Path,
    fingerprint: records.Fingerprint,
    profile: str,
    results: list[records.Result],
    **how,
) -> Saved:
    """Add ``results`` (status ok) to the baseline file under ``root``, holding its lock;
    ``how``: ``merged``'s update, add_run and instructions."""
    path = path_for(root, fingerprint.hardware_class, profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path) + ".lock")
    t0 = time.monotonic()
    try:
        with lock.acquire(timeout=LOCK_TIMEOUT_S):
            waited = time.monotonic() - t0
            old = load(path) if path.exists() else None
            new, added, updated = merged(old, fingerprint, profile, results, where=str(path), **how)
            write_json(path, records.dump(new), sort_keys=True)
            return Saved(path, added, updated, waited)
    except Timeout:  # only the lock's acquire raises it
        raise BaselineError(
            f"{path} is locked by another perfsuite run (lock file {lock.lock_file}) for "
            f"more than {LOCK_TIMEOUT_S:.0f} s; nothing saved"
        ) from None
