"""The API tests' clients (`tests/api/conftest.py`): tenancy's routes are tested through them."""

from tests.api.conftest import api_settings, client

__all__ = ["api_settings", "client"]
