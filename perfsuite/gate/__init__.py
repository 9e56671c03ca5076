"""The regression gate: statistics, verdicts over result sets, configuration and reports."""
