"""A sweep: plan the points, run them, report the run and finish it (summary, gate, baseline)."""
