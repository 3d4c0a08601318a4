"""Property-based API testing from the app's own OpenAPI document: no 5xx, and every
response (status, content type, headers, body) matches what the document says."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.api.app import create_app
from app.settings import Settings
from tests.api.conftest import KEY
from tests.mocks.uvicorn_thread import serve_in_thread


@pytest.fixture(scope="module")
def live_api(sqlite_url: str) -> Iterator[str]:
    app = create_app(Settings(database_url=sqlite_url, api_keys=KEY, lease_seconds=5))
    with serve_in_thread(app) as base_url:
        yield base_url


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def test_api_conforms_to_its_openapi_document(live_api: str) -> None:
    """Every operation, a bounded number of generated requests each (schemathesis's
    pytest plugin does not load under pytest 9, so the strategies are driven directly)."""
    schema = schemathesis.openapi.from_url(f"{live_api}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(
                base_url=live_api, headers={"Authorization": f"Bearer {KEY}"}, checks=CHECKS
            )

        try:
            check()
        except Exception as exc:
            raise AssertionError(f"{operation.label}: {exc}") from exc
