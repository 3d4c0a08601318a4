"""Settings of the connection budget (README, "Connection budget"), read from the
environment as a process reads them."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from app.settings import Settings
from app.store.backend.engines import DEFAULT_POOL_SIZE, engine_for, transaction_pooled

SERVER = "postgresql://agentrun@db.internal:5432/agentrun"
BOUNCER = "postgresql://agentrun@pgbouncer.internal:6432/agentrun"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("POOL_SIZE", "LISTEN_URL", "PGBOUNCER"):
        monkeypatch.delenv(f"AGENTRUN_DATABASE_{name}", raising=False)


async def test_a_process_pool_is_sized_by_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTRUN_DATABASE_URL", SERVER)
    default = engine_for(Settings())
    monkeypatch.setenv("AGENTRUN_DATABASE_POOL_SIZE", "3")
    sized = engine_for(Settings())
    try:
        assert default.pool.size() == DEFAULT_POOL_SIZE  # type: ignore[attr-defined]
        assert sized.pool.size() == 3  # type: ignore[attr-defined]
        assert sized.pool.overflow() == -3  # type: ignore[attr-defined]  # and no overflow
        assert not transaction_pooled(sized)
    finally:
        await default.dispose()
        await sized.dispose()


async def test_behind_pgbouncer_listen_goes_to_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTRUN_DATABASE_URL", BOUNCER)
    assert Settings().direct_database_url == BOUNCER  # by default the one URL serves both
    monkeypatch.setenv("AGENTRUN_DATABASE_PGBOUNCER", "true")
    with pytest.raises(pydantic.ValidationError, match="AGENTRUN_DATABASE_LISTEN_URL"):
        Settings()
    monkeypatch.setenv("AGENTRUN_DATABASE_LISTEN_URL", SERVER)
    settings = Settings()
    assert settings.direct_database_url == SERVER
    engine = engine_for(settings)
    try:
        assert transaction_pooled(engine)
        assert engine.url.host == "pgbouncer.internal"
    finally:
        await engine.dispose()


def test_callback_urls_come_from_the_public_url_and_its_absence_is_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AGENTRUN_PUBLIC_URL", raising=False)
    default = Settings()
    assert default.callback_url("tok") == "http://127.0.0.1:8000/v1/callbacks/tok/tool-results"
    warning = default.public_url_warning("worker")
    assert warning is not None and "AGENTRUN_PUBLIC_URL" in warning and "worker" in warning
    monkeypatch.setenv("AGENTRUN_PUBLIC_URL", "https://agents.example.com/")
    public = Settings()
    assert public.public_url_warning("api") is None
    assert public.callback_url("tok") == "https://agents.example.com/v1/callbacks/tok/tool-results"


@pytest.mark.parametrize(
    "prices",
    [
        {"openai:gpt-4o": {"input": 2.5, "outptu": 10}},  # a misspelt key: output free
        {"openai:gpt-4o": {"input": 2.5}},  # output missing
        {"openai:gpt-4o": {"input": -5, "output": -1}},  # gives budget back
        {"openai:gpt-4o": {"input": float("inf"), "output": 1}},
        {"gpt-4o": {"input": 2.5, "output": 10}},  # not provider:model
    ],
)
def test_a_price_table_that_could_under_price_a_call_is_refused(
    monkeypatch: pytest.MonkeyPatch, prices: dict[str, dict[str, float]]
) -> None:
    with pytest.raises(pydantic.ValidationError, match="prices"):
        Settings(prices=prices)
    monkeypatch.setenv("AGENTRUN_PRICES", '{"openai:gpt-4o": {"input": 2.5, "outptu": 10}}')
    with pytest.raises(pydantic.ValidationError, match="outptu"):
        Settings()
    monkeypatch.setenv(
        "AGENTRUN_PRICES", '{"openai:gpt-4o": {"input": 2.5, "output": 10, "cached_input": 1.25}}'
    )
    assert Settings().prices["openai:gpt-4o"]["cached_input"] == 1.25


def test_provider_profiles_are_read_from_a_file_and_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from app.providers.profiles import load_profiles

    path = tmp_path / "providers.toml"
    path.write_text('[profiles.local]\nwire = "openai_chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
                    'auth = "none"\n')  # fmt: skip
    monkeypatch.setenv("AGENTRUN_PROVIDERS_FILE", str(path))
    monkeypatch.setenv(
        "AGENTRUN_PROVIDERS", '{"profiles": {"openai": {"limits": {"max_concurrent": 4}}}}'
    )
    settings = Settings()
    assert settings.providers_file == str(path)
    profiles = load_profiles(settings)
    local, openai = profiles.get("local"), profiles.get("openai")
    assert local is not None and local.auth == "none"
    assert openai is not None and openai.limits.max_concurrent == 4
