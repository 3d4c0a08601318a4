"""The TypeScript client's generated layer (clients/typescript/src/generated/api.ts) is
byte for byte what `npm run generate` makes from the service's OpenAPI document now: a
change of the API fails here until the client is regenerated."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

from tests.clients_typescript.package import PACKAGE, node, require_dependencies

COMMITTED = PACKAGE / "src" / "generated" / "api.ts"


def openapi_text() -> str:
    """What clients/typescript/scripts/openapi.py prints (run in this process: the app is
    imported already)."""
    spec = importlib.util.spec_from_file_location("ts_openapi", PACKAGE / "scripts" / "openapi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.document_text()
    return text


def generate(document: str, out: Path) -> str:
    """The generator's output for `document` (JSON text)."""
    require_dependencies()
    source = out / "openapi.json"
    source.write_text(document, encoding="utf-8")
    done = subprocess.run(
        [node(), "scripts/generate.mjs", "--openapi", str(source), "--out", str(out)],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return (out / "api.ts").read_text(encoding="utf-8")


def test_the_committed_types_are_generated_from_the_current_openapi_document(
    tmp_path: Path,
) -> None:
    document = openapi_text()
    assert '"/v1/runs/{run_id}/events"' in document
    fresh = generate(document, tmp_path)
    assert fresh == COMMITTED.read_text(encoding="utf-8"), (
        "clients/typescript/src/generated/api.ts is stale: run `npm run generate` in "
        "clients/typescript and commit it"
    )
