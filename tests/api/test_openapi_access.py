"""The OpenAPI document names the permission and roles of every operation that needs a
key, also of the routes of included routers (kept nested by newer FastAPI versions)."""

from __future__ import annotations

from pathlib import Path

from app.main import create_app
from app.service.principals import Permission
from app.tenancy.access import roles_with
from tests.conftest import make_settings

#: The operations anyone may call: health, and the callback URL (its token is the key).
OPEN = {"/healthz", "/readyz", "/v1/callbacks/{token}/tool-results"}


def test_every_authenticated_operation_states_its_permission_and_roles(tmp_path: Path) -> None:
    app = create_app(make_settings(f"sqlite:///{tmp_path / 'doc.db'}", api_keys="k"))
    paths = app.openapi()["paths"]
    assert "/v1/runs/{run_id}/cancel" in paths
    for path, item in paths.items():
        for method, operation in item.items():
            if path in OPEN:
                assert "x-permission" not in operation, (method, path)
                continue
            permission = Permission(operation["x-permission"])
            assert operation["x-roles"] == [r.value for r in roles_with(permission)]
            assert "403" in operation["responses"], (method, path)
