"""Limits tests: the API client fixtures (tests/api) and the mock provider server
(tests/worker) their tests moved here with."""

from tests.api.conftest import api_settings, client
from tests.mocks.server import mock, mock_server

__all__ = ["api_settings", "client", "mock", "mock_server"]
