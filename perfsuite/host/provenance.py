"""Which code a run measured: commit, branch, dirty flag and repository, read from GitHub
Actions' variables when they are set (the checkout there is often a detached merge commit),
else from git in the working directory, each overridable by an option."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from perfsuite.records import Provenance


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None  # no git, or a hung filesystem: the run is still measured, unattributed
    return out.stdout.strip() if out.returncode == 0 else None


def from_git(cwd: Path) -> Provenance:
    commit = _git(cwd, "rev-parse", "HEAD")
    if commit is None:
        return Provenance()
    branch = _git(cwd, "rev-parse", "--abbrev-ref", "HEAD")
    status = _git(cwd, "status", "--porcelain", "--untracked-files=no")
    return Provenance(
        commit=commit,
        branch=None if branch in (None, "HEAD") else branch,  # HEAD: detached
        dirty=None if status is None else bool(status),
        repository=_git(cwd, "config", "--get", "remote.origin.url") or None,
    )


def from_actions(env: Mapping[str, str]) -> Provenance:
    if not env.get("GITHUB_SHA"):
        return Provenance()
    repo = env.get("GITHUB_REPOSITORY")
    server = env.get("GITHUB_SERVER_URL", "https://github.com")
    return Provenance(
        commit=env["GITHUB_SHA"],
        branch=env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME") or None,
        repository=f"{server}/{repo}" if repo else None,
    )


def provenance(
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, object] | None = None,
) -> Provenance:
    """Actions' variables over git over nothing; ``overrides`` (from options) over all."""
    env = os.environ if env is None else env
    git = from_git(Path.cwd() if cwd is None else cwd)
    actions = from_actions(env)
    merged = {**git.model_dump(exclude_none=True), **actions.model_dump(exclude_none=True)}
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return Provenance(**merged)
