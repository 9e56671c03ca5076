"""``python -m perfsuite.execute.worker``: the process a numactl-bound benchmark runs in.

The article's recipe, ``numactl --cpunodebind=N --membind=N python infer.py`` with the data
on stdin: the job (a pickled function, args, kwargs) arrives on stdin, the worker records the
binding the kernel reports, runs the job, and writes a pickled (status, payload) to stdout.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback

from perfsuite.host import numa


def main() -> int:
    # Keep stdout for the result alone: anything the job prints goes to stderr.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    fn, args, kwargs = pickle.load(sys.stdin.buffer)
    binding = numa.current_binding("numactl")
    try:
        out = ("ok", (fn(*args, **kwargs), binding))
    except BaseException as exc:  # report everything to the parent
        out = ("error", f"{exc.__class__.__name__}: {exc}\n{traceback.format_exc()}")
    with os.fdopen(result_fd, "wb") as f:
        pickle.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
