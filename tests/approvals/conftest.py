"""Approvals tests: the API's in-process client per test (tests/api/conftest.py)."""

from tests.api.conftest import api_settings, client

__all__ = ["api_settings", "client"]
