"""The API tests' clients (`tests/api/conftest.py`): forks are tested through them."""

from tests.api.conftest import api_settings, client

__all__ = ["api_settings", "client"]
