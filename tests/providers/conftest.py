"""Provider tests: the in-process mock provider server fixtures."""

from tests.mocks.server import mock, mock_server

__all__ = ["mock", "mock_server"]
