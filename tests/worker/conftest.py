"""Worker tests: the in-process mock provider server fixtures (wire streaming end to end)."""

from tests.mocks.server import mock, mock_server

__all__ = ["mock", "mock_server"]
