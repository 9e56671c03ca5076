"""The baseline store: ``<dir>/<hardware-class>/<profile>.json``, schema
``perfsuite.baseline/2`` (``perfsuite.records.Baseline``; older files are upgraded on load;
every load and every save validates).

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

import numpy as np

from perfsuite import records
from perfsuite.files import atomic_write_text, json_default

SCHEMA = records.BASELINE
LOCK_TIMEOUT_S = 600.0  # another run's save takes well under a second; a stuck lock is named
MAX_SAMPLES = 400  # enough for the rank test and the bootstrap; keeps the JSON small
HISTORY = 20
MAX_RUNS = 10


class BaselineError(ValueError):
    """A baseline file is missing, corrupt, of another schema, or would be overwritten."""


def path_for(root: Path, hardware_class: str, profile: str) -> Path:
    return Path(root) / hardware_class / f"{profile}.json"


def load(path: Path) -> dict:
    """The baseline at ``path``, upgraded to the current schema and validated."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise BaselineError(f"no baseline at {path}") from None
    except (OSError, ValueError) as exc:
        raise BaselineError(f"baseline {path} is unreadable or corrupt: {exc}") from None
    try:
        return records.dump(records.load_baseline(data, f"baseline {path}"))
    except records.RecordError as exc:
        raise BaselineError(str(exc)) from None


def thin_samples(samples: list[float]) -> list[float]:
    if len(samples) <= MAX_SAMPLES:
        return [float(s) for s in samples]
    idx = np.linspace(0, len(samples) - 1, MAX_SAMPLES).round().astype(int)
    return [float(samples[i]) for i in idx]  # evenly spaced in time: keeps drift visible


def entry(record: dict) -> dict:
    return {
        "point": record["point"],
        "samples_s": thin_samples(record["samples_s"]),
        "stats": record["stats"],
        "settings": record.get("settings", {}),
        "software": record.get("software", {}),
        "accuracy": record.get("accuracy"),
        "recorded": dt.datetime.fromtimestamp(record["timestamp"], dt.UTC).isoformat(),
        # each fresh session is a run: its median carries the run-to-run spread to the gate
        "runs": [float(m) for m in record.get("session_medians_s") or []]
        or [float(np.median(record["samples_s"]))],
    }


def _more_typical(old: dict, new: dict, centre: float) -> dict:
    """The entry whose samples' median is nearer the median of all runs (ties: the stored
    one). Keeping a transient slow run's samples would hide a later real regression."""
    d_old = abs(float(np.median(old["samples_s"])) - centre)
    d_new = abs(float(np.median(new["samples_s"])) - centre)
    return new if d_new < d_old else old


def save(
    root: Path,
    fingerprint: dict,
    profile: str,
    records_: list[dict],
    *,
    update: bool = False,
    add_run: bool = False,
    instructions: dict | None = None,
) -> tuple[Path, list[str], list[str], float]:
    """Add ``records_`` (status ok) to the baseline; returns (path, added ids, updated ids,
    seconds waited for another run's save).

    instructions: the run's kernel instruction counts ({"isa", "counts"}), kept beside the
    entries. Counts that differ from stored ones are a code change: replaced only on update.

    update: replace existing entries (an accepted change: the run history restarts).
    add_run: for existing entries, append this run's medians to the entry's run history (the
    gate learns the between-run noise from it); the samples kept are the more typical run's."""
    from filelock import FileLock, Timeout

    hw = fingerprint["hardware_class"]
    path = path_for(root, hw, profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path) + ".lock")
    t0 = time.monotonic()
    try:
        lock.acquire(timeout=LOCK_TIMEOUT_S)
    except Timeout:
        raise BaselineError(
            f"{path} is locked by another perfsuite run (lock file {lock.lock_file}) for "
            f"more than {LOCK_TIMEOUT_S:.0f} s; nothing saved"
        ) from None
    try:
        waited = time.monotonic() - t0
        saved = _save_locked(
            path, hw, fingerprint, profile, records_, update, add_run, instructions
        )
        return (*saved, waited)
    finally:
        lock.release()


def _merge_instructions(data: dict, instructions: dict | None, update: bool, now: str) -> bool:
    """Put the run's counts in ``data``; True when they changed what was stored."""
    if not instructions:
        return False
    new = {"isa": instructions["isa"], "counts": dict(instructions["counts"]), "recorded": now}
    old = data.get("instructions")
    if old and (old["isa"], old["counts"]) == (new["isa"], new["counts"]):
        return False
    if old and not update:
        changed = sorted(
            k for k in set(old["counts"]) | set(new["counts"])
            if old["counts"].get(k) != new["counts"].get(k)
        )  # fmt: skip
        raise BaselineError(
            f"the baseline's instruction counts differ from this run's ({', '.join(changed)}): "
            "pass --perf-update-baseline to replace them"
        )
    data["instructions"] = new
    return True


def _save_locked(path, hw, fingerprint, profile, records_, update, add_run, instructions=None):
    now = dt.datetime.now(dt.UTC).isoformat()
    if path.exists():
        data = load(path)
        if data["hardware_class"] != hw:
            raise BaselineError(
                f"{path} belongs to hardware class {data['hardware_class']}, "
                f"this host is {hw}: refusing to overwrite"
            )
    else:
        data = {
            "schema": SCHEMA,
            "hardware_class": hw,
            "profile": profile,
            "fingerprint": {"fields": fingerprint["fields"], "classes": fingerprint["classes"]},
            "entries": {},
            "history": [],
        }
    ok = [r for r in records_ if r.get("status") == "ok"]
    existing = [r["id"] for r in ok if r["id"] in data["entries"]]
    if existing and not (update or add_run):
        raise BaselineError(
            f"{path} already has {len(existing)} of these entries (e.g. {existing[0]}); "
            "pass --perf-update-baseline to replace them, or --perf-add-baseline-run to add "
            "this run to their history"
        )
    added = [r["id"] for r in ok if r["id"] not in data["entries"]]
    if _merge_instructions(data, instructions, update, now):
        added.append("instructions")
    for r in ok:
        new = entry(r)
        old = data["entries"].get(r["id"])
        if add_run and old is not None and not update:
            runs = (old.get("runs", []) + new["runs"])[-MAX_RUNS:]
            new = dict(_more_typical(old, new, float(np.median(runs))), runs=runs)
        data["entries"][r["id"]] = new
    if update:  # the fingerprint follows the latest accepted run (software versions move)
        data["fingerprint"] = {"fields": fingerprint["fields"], "classes": fingerprint["classes"]}
    software = {k: v for k, v in fingerprint["fields"].items() if k.startswith("software.")}
    action = (
        "created"
        if not data["history"]
        else (("run-added" if add_run and not update else "updated") if existing else "added")
    )
    data["history"] = (
        data["history"]
        + [{"time": now, "action": action, "ids": sorted(added + existing), "software": software}]
    )[-HISTORY:]
    text = json.dumps(data, indent=1, sort_keys=True, default=json_default)
    try:
        records.load_baseline(json.loads(text), f"baseline {path}")
    except records.RecordError as exc:
        raise BaselineError(f"refusing to write an invalid baseline: {exc}") from None
    atomic_write_text(path, text)
    return path, added, existing
