"""Repo-local pytest configuration. The perfsuite plugin itself lives in perfsuite/ and is
registered through the pytest11 entry point; shared test fixtures are in tests/conftest.py."""
