"""Runs across hosts (a fleet): one task per executor host of a Spark cluster, and the hosts
compared with each other.

- ``fan_out``: ``run_on_hosts``, a module-level function run once on each of N hosts (one
  task filling each executor), results brought back by host;
- ``qualification``: ``perfsuite qualify --spark-master URL --hosts N``, a qualification on
  each host, written, recorded and scored;
- ``sweep``: ``perfsuite sweep --spark-master URL --hosts N``, the profile's points on each
  host, a run directory per host and each point compared across hosts;
- ``scoring``: qualification reports of one hardware class scored against the fleet median
  (robust z-scores and a rule file; ``perfsuite db fleet`` too).

Above ``sweep`` and ``qualify`` (it runs them on each host), below the faces.
"""
