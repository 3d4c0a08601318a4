"""Print the service's OpenAPI document as JSON with sorted keys (what the TypeScript
client's types are generated from: scripts/generate.mjs). The app is built with throwaway
settings (a SQLite file that is never opened: `openapi()` reads no database), and none of the
caller's `AGENTRUN_*` variables."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402


def document() -> dict[str, object]:
    for name in [n for n in os.environ if n.startswith("AGENTRUN_")]:
        del os.environ[name]  # (the document must not depend on the caller's settings)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database_url=f"sqlite:///{tmp}/openapi.db",
            api_keys="openapi",
            public_url="http://127.0.0.1:8000",
        )
        return create_app(settings).openapi()


if __name__ == "__main__":
    sys.stdout.write(json.dumps(document(), sort_keys=True, indent=1, ensure_ascii=False) + "\n")
