"""Compaction tests: the in-process mock provider server (the wire end to end) and the
API's in-process client (both back ends)."""

from tests.api.conftest import api_settings, client
from tests.mocks.server import mock, mock_server

__all__ = ["api_settings", "client", "mock", "mock_server"]
