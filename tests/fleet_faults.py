"""What a fleet task does on each host of the fault test's cluster: its standalone worker's
PERFSUITE_TEST_ROLE (inherited by the executor and its Python workers) picks the fault."""

from __future__ import annotations

import os
import signal
import time


def behave(payload: dict) -> dict:
    role = os.environ.get("PERFSUITE_TEST_ROLE", "ok")
    if role == "kill_python":  # the Python worker dies mid-task
        os.kill(os.getpid(), signal.SIGKILL)
    if role == "kill_executor":  # the executor's JVM dies mid-task
        import psutil

        for parent in psutil.Process().parents():
            if "CoarseGrainedExecutorBackend" in " ".join(parent.cmdline()):
                parent.kill()
    if role in ("kill_executor", "hang"):
        time.sleep(600)
    if role == "skew":  # the host's clock is off; the task itself is fine
        real = time.time
        time.time = lambda: real() + payload["skew_s"]
    time.sleep(payload["ok_s"])  # every host's task starts before the first one ends
    return {"role": role}
