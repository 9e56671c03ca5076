"""Persistence: the baseline store."""
