"""``python -m perfsuite.execute.turns POINT PROTOCOL``: one side of a call-interleaved A/B
round (``perfsuite ab``, ``sweep.ab.measure_turns``).

The worker opens the point's session, warms it up and answers ``ready``. Then, for each
``turn SECONDS`` line on stdin, it times calls until SECONDS have passed (at least one) and
answers with their latencies; ``stop`` ends it with the session's settings. Between its
turns it blocks on stdin, so the other side's turn has the machine to itself; the backend's
``turn_options`` keep its framework threads from spinning on into that turn. Answers are
one JSON object per line on stdout; whatever a framework prints goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace

from threadpoolctl import threadpool_limits

from perfsuite.execute.runner import model_info, open_point, place, warmed
from perfsuite.prepare.backends import software_versions
from perfsuite.records import MeasureProtocol, Point, dump


def serve(point: Point | dict, protocol: MeasureProtocol | dict, say, lines) -> None:
    point = Point.model_validate(point)  # the JSON of the side that started this worker
    t0 = time.perf_counter()
    binding, cpus = place(point.numa_node)
    p = MeasureProtocol.model_validate(protocol)  # typed, or the JSON of that side
    with threadpool_limits(point.threads):
        model, variant, cfg, backend, inputs = open_point(point, cpus, p.model)
        cfg = replace(cfg, options={**backend.turn_options, **cfg.options})
        with backend.prepare(variant.path, cfg) as session:
            window = warmed(session, inputs, point, p)
            say({"ready": True, "setup_s": time.perf_counter() - t0})
            for line in lines:
                cmd, _, arg = line.strip().partition(" ")
                if cmd == "turn":
                    samples, _ = window(MeasureProtocol(min_time=float(arg), min_samples=1))
                    say({"samples_s": samples})
                elif cmd == "stop":
                    break
            say({
                "settings": dict(session.settings), "binding": dump(binding),
                "software": software_versions(), "model": dump(model_info(model, variant)),
            })  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    point, protocol = (json.loads(a) for a in (argv or sys.argv[1:]))
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def say(obj: dict) -> None:
        print(json.dumps(obj, default=str), file=out, flush=True)

    serve(point, protocol, say, sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
