"""The forks' tests: the API tests' in-process clients, and the mock provider for the
tests that run real processes."""

from tests.api.conftest import api_settings, client
from tests.mocks.server import mock, mock_server

__all__ = ["api_settings", "client", "mock", "mock_server"]
