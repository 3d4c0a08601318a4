"""The API tests' in-process client (both back ends), for schedules over HTTP."""

from tests.api.conftest import api_settings, client

__all__ = ["api_settings", "client"]
