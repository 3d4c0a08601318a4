"""`agentrun-client agents …` (and `agentrun agents …`) against the API on a loopback port
with workers in-process: bodies from flags, JSON and TOML, what a person sees, `--json`,
and the runs of a tree from `runs create --agent`, `runs children`, `runs list --root`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from app.cli import main as agentrun
from tests.client.conftest import Live, scripted
from tests.client.test_agents import unique
from tests.client.test_cli import cli

TOML = """description = "answers from a TOML file"
preamble = \"\"\"
Be brief.
Be kind.\"\"\"
max_turns = 4

[model]
provider = "scripted"
name = "demo"
"""


def test_agents_from_flags_and_files_then_updated_listed_and_deleted(
    live: Live, tmp_path: Path
) -> None:
    name, other = unique("helper"), unique("other")
    made = cli(
        live, "agents", "create", name, "--description", "answers", "--model", "scripted:demo",
        "--preamble", "Be brief.", "--metadata", "team=support", "--json",
    )  # fmt: skip
    assert made.code == 0, made.err
    agent = made.json()
    assert (agent["name"], agent["version"]) == (name, 1)
    assert agent["spec"]["preamble"] == "Be brief."
    assert agent["spec"]["metadata"] == {"team": "support"}
    again = cli(live, "agents", "create", name, "--description", "x", "--model", "scripted:demo")
    assert again.code == 1 and "agent-exists" in again.err

    toml = tmp_path / "agent.toml"
    toml.write_text(TOML)
    from_file = cli(live, "agents", "create", other, "--body", f"@{toml}", "--json")
    assert from_file.code == 0, from_file.err
    assert from_file.json()["spec"]["preamble"] == "Be brief.\nBe kind."
    assert from_file.json()["description"] == "answers from a TOML file"

    # `update`: the latest version with the flags over it.
    updated = cli(live, "agents", "update", name, "--preamble", "Be briefer.", "--json").json()
    assert updated["version"] == 2 and updated["description"] == "answers"
    assert updated["spec"]["preamble"] == "Be briefer."
    assert updated["spec"]["metadata"] == {"team": "support"}
    assert updated["spec"]["model"] == {"provider": "scripted", "name": "demo"}
    body = json.dumps({"description": "whole", "model": scripted({"text": "hi"})})
    whole = cli(live, "agents", "update", name, "--body", body, "--json").json()
    assert whole["version"] == 3 and "preamble" not in whole["spec"]

    shown = cli(live, "agents", "get", name, "--version", "2")
    assert shown.code == 0, shown.err
    assert shown.out.splitlines()[0] == f"{name}@2  answers"
    assert "preamble: " in shown.out and '"Be briefer."' in shown.out
    assert "model:    scripted:demo" in shown.out
    versions = cli(live, "agents", "versions", name).out.splitlines()
    assert versions[0].split() == ["NAME", "VERSION", "CREATED", "DESCRIPTION"]
    assert [line.split()[1] for line in versions[1:]] == ["1", "2", "3"]
    listed = cli(live, "agents", "list", "--all").out
    assert any(line.split()[:2] == [name, "3"] for line in listed.splitlines())  # (padded)

    deleted = cli(live, "agents", "delete", other)
    assert deleted.code == 0 and f"deleted {other}" in deleted.out
    missing = cli(live, "agents", "get", other, "--json")
    assert missing.code == 1 and json.loads(missing.err)["type"] == "/problems/agent-not-found"


def test_usage_errors_of_the_agents_commands(live: Live, tmp_path: Path) -> None:
    no_model = cli(live, "agents", "create", unique("a"), "--description", "d")
    assert no_model.code == 2 and "needs model" in no_model.err
    bad = tmp_path / "bad.toml"
    bad.write_text("description = ")
    not_toml = cli(live, "agents", "create", unique("a"), "--body", f"@{bad}")
    assert not_toml.code == 2 and "not TOML" in not_toml.err
    not_a_name = cli(live, "agents", "get", "no/such")
    assert not_a_name.code == 2 and "not an agent name" in not_a_name.err


def test_runs_of_a_tree_from_the_command_line(live: Live) -> None:
    leaf, boss = unique("leaf"), unique("boss")
    assert cli(live, "agents", "create", leaf, "--description", "leaf",
               "--model", json.dumps(scripted({"text": "leaf done"}))).code == 0  # fmt: skip
    tools = json.dumps([{"name": "ask", "agent": leaf}])
    model = json.dumps(
        scripted({"tool_calls": [{"name": "ask", "arguments": {"input": "q"}}]}, {"text": "ok"})
    )
    assert cli(live, "agents", "create", boss, "--description", "boss", "--model", model,
               "--tools", tools).code == 0  # fmt: skip
    created = cli(live, "runs", "create", "go", "--agent", boss, "-q")
    assert created.code == 0, created.err
    root = created.out.strip()
    done = cli(live, "runs", "wait", root, "--status", "completed", "--timeout", "30")
    assert done.code == 0, done.err
    assert f"agent:    {boss}@1" in done.out and "output:   ok" in done.out
    children = cli(live, "runs", "children", root, "--json").json()["data"]
    assert len(children) == 1 and children[0]["parent_run_id"] == root
    child = cli(live, "runs", "get", children[0]["id"])
    assert f"parent:   {root}" in child.out and "depth 1" in child.out
    tree = cli(live, "runs", "list", "--root", root, "--json").json()["data"]
    assert {r["id"] for r in tree} == {root, children[0]["id"]}


def test_agentrun_agents_is_the_client_command_line(
    live: Live, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = cli(live, "agents", "list", "--json", entry=agentrun)
    # (the last line: the server in this process may log to the same stdout meanwhile)
    assert listed.code == 0 and "data" in json.loads(listed.out.splitlines()[-1])
    monkeypatch.setitem(sys.modules, "agentrun_client.cli", None)
    assert agentrun(["agents", "list"]) == 2
    assert "agentrun agents --help" in capsys.readouterr().err
