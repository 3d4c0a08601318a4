"""One `agentrun serve` per test process for the TypeScript client's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.clients_typescript.package import agentrun_serve


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`agentrun serve` (SQLite) and the environment a program needs to use it."""
    with agentrun_serve(tmp_path_factory.mktemp("ts-serve")) as env:
        yield env
