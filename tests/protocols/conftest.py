"""Fixtures of the protocols' tests: the mock provider real processes call over HTTP."""

from __future__ import annotations

from tests.mocks.server import mock, mock_server

__all__ = ["mock", "mock_server"]
