"""`agentrun serve` / `agentrun api`: uvicorn around the app (built by the composition
root's factory), with the open-mode guard."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from types import FrameType

import uvicorn
from fastapi import FastAPI

from app.api.security import is_loopback
from app.settings import Settings


def run_server(
    settings: Settings,
    make_app: Callable[[Settings], FastAPI],
    *,
    host: str,
    port: int,
    own_public_url: bool = False,
    database_keys: Callable[[], bool] | None = None,
) -> int:
    """With `own_public_url` (a process whose workers are its own: `agentrun serve`) and no
    AGENTRUN_PUBLIC_URL, callback URLs point at this server; otherwise every process makes
    them from the setting, so that the API's and the workers' agree. `database_keys`:
    whether the database holds a usable API key (then a server without AGENTRUN_API_KEYS
    is not in open mode and may bind beyond loopback)."""
    if not settings.api_key_list and not _has_database_keys(database_keys):
        if not is_loopback(host):
            print(
                f"refusing to start: no AGENTRUN_API_KEYS set, no usable API key in the "
                f"database, and bound to {host}, which is not a loopback address. Set "
                "AGENTRUN_API_KEYS, create a key (`agentrun keys create`) or bind to 127.0.0.1.",
                file=sys.stderr,
            )
            return 2
        print(
            f"OPEN MODE: no AGENTRUN_API_KEYS set and no API key in the database; the API on "
            f"{host}:{port} accepts requests without a key (allowed only on loopback) until "
            "a key is created.",
            file=sys.stderr,
        )
    if own_public_url and "public_url" not in settings.model_fields_set:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        settings = settings.model_copy(update={"public_url": f"http://{shown}:{port}"})
    app = make_app(settings)
    # log_config=None: uvicorn logs through the process's configuration (app.logs).
    config = uvicorn.Config(
        app, host=host, port=port, log_level="info", access_log=False, log_config=None
    )
    _Server(config, app).run()
    return 0


def _has_database_keys(database_keys: Callable[[], bool] | None) -> bool:
    if database_keys is None:
        return False
    try:
        return database_keys()
    except Exception as exc:  # unreachable or not migrated: no key known
        # (the exception's type only: its text may hold the database URL)
        print(f"could not read the database's API keys ({type(exc).__name__})", file=sys.stderr)
        return False


class _Server(uvicorn.Server):
    """uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown, which makes the
    process exit by the signal; a clean, graceful stop should exit 0 instead. The graceful
    stop waits for every request in flight, so the signal also ends the waits
    (`GET /v1/runs/{id}/wait`) at once instead of after their timeouts."""

    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self.agentrun_app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()
        hub = getattr(self.agentrun_app.state, "event_hub", None)
        if hub is not None:
            # A signal handler runs between two bytecodes of the loop's thread: schedule.
            with contextlib.suppress(RuntimeError):  # no loop running
                asyncio.get_running_loop().call_soon_threadsafe(hub.release)
