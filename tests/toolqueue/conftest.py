"""The queue's route tests use the API tests' client (`tests.api.conftest`)."""

from tests.api.conftest import api_settings, client

__all__ = ["api_settings", "client"]
