"""Runs across hosts (a fleet) on Spark: a module-level function run once on each executor host
(``fan_out``), a qualification (``qualification``) or the profile's points (``sweep``) on each,
and qualification reports of one class scored against the fleet median (``scoring``). Above
``sweep`` and ``qualify`` (it runs them on each host), below the faces.
"""
