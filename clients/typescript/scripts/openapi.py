"""Print the service's OpenAPI document as JSON with sorted keys (what the TypeScript
client's types are generated from: scripts/generate.mjs). The app is built with throwaway
settings (a SQLite file that is never opened: `openapi()` reads no database), none of the
caller's `AGENTRUN_*` variables read."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402


def document() -> dict[str, object]:
    """The document, whatever the environment says (its `AGENTRUN_*` variables are set
    aside while the settings are made, then put back)."""
    saved = {n: v for n, v in os.environ.items() if n.startswith("AGENTRUN_")}
    for name in saved:
        del os.environ[name]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings(
                database_url=f"sqlite:///{tmp}/openapi.db",
                api_keys="openapi",
                public_url="http://127.0.0.1:8000",
            )
            return create_app(settings).openapi()
    finally:
        os.environ.update(saved)


def document_text() -> str:
    return json.dumps(document(), sort_keys=True, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(document_text())
