"""Run a GitHub Actions job's ``run:`` steps here, in order, as the runner would: the
``GITHUB_*`` variables, ``GITHUB_ENV`` (lines appended there become the next steps'
environment), ``GITHUB_STEP_SUMMARY``, the job's ``env:`` with its ``${{ }}`` expressions
evaluated (context references and ``||``; anything else is refused), steps after a failure
skipped unless ``if: always()``. ``uses:`` steps (checkout, caches, artefact uploads) are
reported and skipped: they need GitHub.

    python tools/run_workflow.py .github/workflows/nightly.yml gate \
        --skip "Build and install" --set PROFILE=smoke --event schedule

Exit status: the job's (0 passed, 1 a step failed, 2 bad input). perfsuite's tests run the
nightly and pull-request jobs through it (tests/workflows/test_nightly_flow.py).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class WorkflowError(ValueError):
    pass


@dataclass
class StepResult:
    name: str
    status: str  # passed | failed | skipped (uses:, --skip, after a failure)
    returncode: int | None = None
    output: str = ""


@dataclass
class JobResult:
    steps: list[StepResult] = field(default_factory=list)
    summary: str = ""
    env: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(s.status != "failed" for s in self.steps)

    def step(self, name: str) -> StepResult:
        return next(s for s in self.steps if s.name == name)


def evaluate(expr: str, contexts: dict) -> str:
    """``a.b || 'text' || c.d``: the first operand that is set and not empty."""
    for operand in (o.strip() for o in expr.split("||")):
        if re.fullmatch(r"'[^']*'", operand):
            value = operand[1:-1]
        elif re.fullmatch(r"[A-Za-z_][\w.-]*", operand):
            value = contexts
            for part in operand.split("."):
                value = value.get(part) if isinstance(value, dict) else None
        else:
            raise WorkflowError(f"expression not supported here: {expr!r}")
        if value not in (None, ""):
            return str(value)
    return ""


def substitute(text: str, contexts: dict) -> str:
    return EXPR.sub(lambda m: evaluate(m.group(1), contexts), text)


def _condition(step: dict, failed: bool, contexts: dict) -> bool:
    cond = str(step.get("if", "")).strip()
    cond = EXPR.sub(lambda m: m.group(1), cond).strip()
    if cond in ("always()",):
        return True
    if failed:
        return cond == "failure()"
    if not cond or cond == "success()":
        return True
    m = re.fullmatch(r"(\S+)\s*(==|!=)\s*'([^']*)'", cond)
    if m:
        got = evaluate(m.group(1), contexts)
        return (got == m.group(3)) == (m.group(2) == "==")
    raise WorkflowError(f"step {step.get('name')!r}: condition not supported here: {cond!r}")


def run_job(
    workflow: Path,
    job: str,
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    github: dict | None = None,
    inputs: dict | None = None,
    skip: tuple[str, ...] = (),
    secrets: dict | None = None,
    timeout: float = 3600,
) -> JobResult:
    """Run ``job`` of ``workflow``; ``env`` overrides the job's env (and the process's)."""
    spec = yaml.safe_load(Path(workflow).read_text())
    jobs = spec.get("jobs", {})
    if job not in jobs:
        raise WorkflowError(f"{workflow}: no job {job!r} (jobs: {', '.join(jobs)})")
    steps = jobs[job].get("steps", [])
    temp = Path(tempfile.mkdtemp(prefix="run-workflow-"))
    summary, env_file = temp / "step_summary.md", temp / "github_env"
    summary.touch()
    env_file.touch()
    github = {"workspace": str(cwd), "run_id": "1", **(github or {})}
    base = {
        **os.environ,
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(cwd),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_ENV": str(env_file),
        "GITHUB_RUN_ID": str(github["run_id"]),
        "RUNNER_TEMP": str(temp),
    }
    for key, value in github.items():
        if isinstance(value, str):
            base[f"GITHUB_{key.upper()}"] = value
    contexts = {
        "github": {**github, "event": {"inputs": inputs or {}}},
        "inputs": inputs or {},
        "secrets": secrets or {},
        "env": {},
        "runner": {"temp": str(temp)},
    }
    job_env = {}
    for key, value in {**spec.get("env", {}), **jobs[job].get("env", {})}.items():
        contexts["env"] = {**base, **job_env}
        job_env[key] = substitute(str(value), contexts)
    job_env.update(env or {})
    result = JobResult()
    failed = False
    for i, step in enumerate(steps):
        name = step.get("name") or step.get("uses") or f"step {i + 1}"
        contexts["env"] = {**base, **job_env, **_read_env(env_file)}
        if "uses" in step or name in skip or not _condition(step, failed, contexts):
            result.steps.append(StepResult(name, "skipped"))
            continue
        step_env = {k: substitute(str(v), contexts) for k, v in step.get("env", {}).items()}
        script = substitute(str(step["run"]), contexts)
        proc = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script],
            cwd=cwd,
            env={**contexts["env"], **step_env},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        status = "passed" if proc.returncode == 0 else "failed"
        failed |= status == "failed"
        result.steps.append(StepResult(name, status, proc.returncode, proc.stdout + proc.stderr))
    result.summary = summary.read_text()
    result.env = _read_env(env_file)
    return result


def _read_env(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            key, _, value = line.partition("=")
            out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workflow", type=Path)
    p.add_argument("job")
    p.add_argument("--skip", action="append", default=[], help="a step name to skip")
    p.add_argument("--set", action="append", default=[], metavar="VAR=VALUE")
    p.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--event", default="workflow_dispatch")
    args = p.parse_args(argv)
    try:
        result = run_job(
            args.workflow,
            args.job,
            cwd=Path.cwd(),
            env=dict(s.split("=", 1) for s in args.set),
            github={"event_name": args.event},
            inputs=dict(s.split("=", 1) for s in args.input),
            skip=tuple(args.skip),
        )
    except (OSError, WorkflowError, yaml.YAMLError, ValueError) as exc:
        print(f"run_workflow: {exc}", file=sys.stderr)
        return 2
    for s in result.steps:
        print(f"{s.status:<8} {s.name}")
        if s.status == "failed":
            print(s.output)
    print(result.summary)
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
