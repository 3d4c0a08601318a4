"""The documentation keeps up with the code: docs/reference.md names every run option,
status, waiting reason, event type, webhook event and problem code; the README and the
OpenAPI document point at it; every program in examples/ is run by some test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.api.problems import CATALOGUE
from app.core.events import WEBHOOK_EVENTS, EventType
from app.core.lifecycle import RunStatus
from app.service.schemas import InvalidToolCallPolicy, ResolutionIn, RunCreate, ToolResultIn

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "docs" / "reference.md").read_text()
#: The `type`s of `waiting_reason` (app/store/changes.py: Queued, ModelCall, ToolResults,
#: Resolution, Backoff).
WAITING_REASONS = ["queued", "model_call", "tool_results", "resolution", "backoff", "rate_limit"]


def section(title: str) -> str:
    """The text of a `## title` section of the reference."""
    start = REFERENCE.index(f"\n## {title}\n")
    end = REFERENCE.find("\n## ", start + 1)
    return REFERENCE[start : end if end != -1 else None]


def named(text: str, word: str) -> bool:
    return f"`{word}`" in text


@pytest.mark.parametrize("field", sorted(RunCreate.model_fields))
def test_every_run_option_is_described(field: str) -> None:
    creating = section("Creating a run")
    assert re.search(rf"^\| `{field}` \|", creating, re.MULTILINE), field


def test_every_status_waiting_reason_and_policy_is_described() -> None:
    run = section("The run object")
    for status in RunStatus:
        assert re.search(rf"^\| `{status.value}` \|", run, re.MULTILINE), status
    for reason in WAITING_REASONS:
        assert re.search(rf"^\| `{reason}` \|", run, re.MULTILINE), reason
    policies = section("Creating a run")
    actions = InvalidToolCallPolicy.model_fields["action"].annotation
    for action in actions.__args__:  # type: ignore[union-attr]
        assert re.search(rf"^\| `{action}`[ |]", policies, re.MULTILINE), action
    resolutions = section("Resolutions")
    for action in ResolutionIn.model_fields["action"].annotation.__args__:  # type: ignore[union-attr]
        assert named(resolutions, action), action
    results = section("Tool results")
    for field in ToolResultIn.model_fields:
        assert named(results, field), field


def test_every_event_type_and_webhook_event_is_described() -> None:
    events = section("Events")
    for event in EventType:
        assert re.search(rf"^\| `{re.escape(event.value)}` \|", events, re.MULTILINE), event
    webhooks = section("Webhooks")
    for event in WEBHOOK_EVENTS:
        assert named(webhooks, event.value), event
    assert all(named(webhooks, h) for h in ("webhook-id", "webhook-timestamp", "webhook-signature"))


def test_every_metric_is_described() -> None:
    from prometheus_client import Counter, Histogram

    from app import metrics

    described = section("Metrics")
    kept = [m for m in vars(metrics).values() if isinstance(m, Counter | Histogram)]
    names = [m._name + ("_total" if isinstance(m, Counter) else "") for m in kept]
    names += [name for name, _ in metrics.DB_GAUGES]
    assert len(names) == 22
    for name in names:
        assert re.search(rf"^\| `{name}` \|", described, re.MULTILINE), name


def test_every_problem_is_described_with_its_status() -> None:
    errors = section("Errors")
    for code, (status, _, _) in CATALOGUE.items():
        assert re.search(rf"^\| `{code}` \| {status} \|", errors, re.MULTILINE), code


def test_the_readme_and_the_openapi_document_link_the_reference() -> None:
    from app.api.app import DESCRIPTION

    readme = (ROOT / "README.md").read_text()
    assert "(docs/reference.md)" in readme
    assert "docs/reference.md" in DESCRIPTION


def test_every_example_is_run_by_a_test() -> None:
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    examples = [p for p in (ROOT / "examples").iterdir() if p.suffix in (".py", ".sh")]
    assert examples
    for example in examples:
        assert f'"{example.name}"' in tests, f"examples/{example.name} is run by no test"


def test_the_roles_table_is_what_the_service_grants() -> None:
    from app.service.principals import Permission
    from app.tenancy.access import GRANTS, Role

    access = section("Access")
    header = re.search(r"^\| permission \|(.*)\|$", access, re.MULTILINE)
    assert header is not None
    roles = [cell.strip().strip("`") for cell in header.group(1).split("|")]
    assert roles == [r.value for r in Role]
    for permission in Permission:
        row = re.search(rf"^\| `{re.escape(permission.value)}` \|(.*)\|$", access, re.MULTILINE)
        assert row is not None, permission
        marks = [cell.strip() == "✓" for cell in row.group(1).split("|")]
        assert marks == [permission in GRANTS[r] for r in Role], permission


@pytest.mark.parametrize("doc", ["docs/design.md", "docs/life-of-a-run.md"])
def test_every_source_path_the_design_names_exists(doc: str) -> None:
    """A module moved or renamed takes its mentions in the design pages with it."""
    text = (ROOT / doc).read_text()
    paths = set(re.findall(r"\b((?:app|bench|tests)/[\w/]+\.py)\b", text))
    assert paths, doc
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"{doc} names files that do not exist: {missing}"
