"""The ``interpreter`` executor: each point in a fresh process of another Python, with its own
perfsuite, frameworks and kernels (one side of ``perfsuite ab``: two venvs, two builds, or
one interpreter with another environment): ``run_point`` there (``SNIPPET``: the record is
stdout's last line), or a ``TurnWorker`` for the call-interleaved rounds of ``perfsuite ab``.

The other side needs perfsuite installed; only ``run_point`` and ``software_versions`` (run)
or ``perfsuite.execute.turns`` (turns) of its own are used, so an older perfsuite there works.
Errors name the point and the side (``label``) in one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile

from pydantic import ValidationError

from perfsuite.execute.executors import BaseExecutor
from perfsuite.execute.isolation import WorkerError, describe_exit, last_line
from perfsuite.records import (
    Measurement,
    MeasureProtocol,
    Point,
    TurnReply,
    WorkerReply,
    dump,
    one_line,
)

SNIPPET = """
import json, sys
from perfsuite.execute.runner import run_point
from perfsuite.prepare.backends import software_versions
point, protocol = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {"measurement": run_point(point, protocol), "software": software_versions()}
sys.stdout.write("\\n" + json.dumps(out, default=str) + "\\n")
"""


# -P: the side's own installed perfsuite, never a source tree that happens to be the working
# directory (a pull request's checkout, whose kernels are not built)
SAFE_PATH = ("-P",)


class Interpreter(BaseExecutor):
    name = "interpreter"

    def __init__(
        self,
        timeout: float = 300.0,
        python: str = sys.executable,
        env: dict | None = None,
        label: str | None = None,
    ):
        self.timeout = timeout
        self.python = python
        self.env = dict(env or {})
        self.label = label or python
        self._turns: list[TurnWorker] = []
        self.software: dict = {}  # that side's framework versions, as its last run saw them

    def _environ(self) -> dict:
        return {**os.environ, **self.env}

    def _command(self, point: Point, protocol: MeasureProtocol, *run: str) -> list[str]:
        return [self.python, *SAFE_PATH, *run, json.dumps(dump(point)), json.dumps(dump(protocol))]

    def run(self, point: Point, protocol: MeasureProtocol) -> Measurement:
        """One fresh process of this interpreter measuring ``point``."""
        try:
            proc = subprocess.run(
                self._command(point, protocol, "-c", SNIPPET),
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=self._environ(),
            )
        except subprocess.TimeoutExpired as exc:
            raise WorkerError(
                f"{self.label}: {point.id} timed out after {self.timeout:g} s"
            ) from exc
        except OSError as exc:
            raise WorkerError(f"{self.label}: cannot run {self.python}: {exc}") from exc
        if proc.returncode < 0:  # a signal: its name, not a Python line it never wrote
            raise WorkerError(f"{self.label}: {point.id}: {describe_exit(proc.returncode)}")
        if proc.returncode != 0:
            raise WorkerError(f"{self.label}: {point.id}: {last_line(proc.stderr)}")
        reply = _reply(WorkerReply, proc.stdout.strip().splitlines()[-1], self.label, point.id)
        self.software = reply.software
        return reply.measurement.model_copy(update={"isolation": f"interpreter {self.python}"})

    def turns(self, point: Point, protocol: MeasureProtocol) -> TurnWorker:
        """A ``perfsuite.execute.turns`` process of this interpreter for ``point``, open until
        it is closed (or this executor is)."""
        worker = TurnWorker(self, point, protocol)
        self._turns.append(worker)
        return worker

    def close(self) -> None:
        while self._turns:
            self._turns.pop().close()


class TurnWorker:
    """One ``perfsuite.execute.turns`` process: a request line in, a JSON line out."""

    def __init__(self, interpreter: Interpreter, point: Point, protocol: MeasureProtocol):
        self.label, self.pid, self.timeout = interpreter.label, point.id, interpreter.timeout
        self.err = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in close())
        cmd = interpreter._command(point, protocol, "-m", "perfsuite.execute.turns")
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True,
                env=interpreter._environ(),
            )  # fmt: skip
        except OSError as exc:
            self.err.close()
            raise WorkerError(f"{self.label}: cannot run {interpreter.python}: {exc}") from exc

    def ask(self, request: str | None) -> TurnReply:
        """Send ``request`` (None: only read) and return the worker's answer."""
        if request is not None:
            try:
                self.proc.stdin.write(request + "\n")
                self.proc.stdin.flush()
            except OSError:
                pass  # it died: the read below says why
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        if not ready:
            raise WorkerError(f"{self.label}: {self.pid} timed out after {self.timeout:g} s")
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.err.seek(0)
            last = describe_exit(code) if code < 0 else last_line(self.err.read())
            if "No module named perfsuite.execute.turns" in last:
                last += " (that side's perfsuite predates turns: use --turns 0)"
            raise WorkerError(f"{self.label}: {self.pid}: {last}")
        return _reply(TurnReply, line, self.label, self.pid)

    def close(self) -> None:
        if self.err.closed:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):  # a broken pipe to a killed worker
                pipe.close()
        self.err.close()


def _reply(kind, line: str, label: str, point_id: str):
    """A worker's JSON line as its record, or one line saying what is wrong with it."""
    try:
        return kind.model_validate_json(line)
    except ValidationError as exc:
        why = f"the worker's answer is not understood: {one_line(exc)}"
        raise WorkerError(f"{label}: {point_id}: {why}") from None
