"""The TypeScript client's own tests (clients/typescript/test/*.test.mjs, node's test
runner, in one invocation) against a real `agentrun serve`: the guide's examples (inline
tools over two rounds, zod, trees of runs, approvals, the webhook executor), events that
resume across killed connections, retries and typed errors, signed webhooks."""

from __future__ import annotations

import subprocess

from tests.clients_typescript.package import PACKAGE, build, environment, node


def test_the_node_tests_pass_against_the_service(service: dict[str, str]) -> None:
    build()
    files = sorted(str(p.relative_to(PACKAGE)) for p in (PACKAGE / "test").glob("*.test.mjs"))
    assert len(files) >= 4, files
    done = subprocess.run(
        [node(), "--test", "--test-reporter=spec", *files],
        cwd=PACKAGE,
        env=environment(service),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout or "ℹ fail 0" in done.stdout, done.stdout
