"""Finding runs on the runs list, on both back ends: by a run id's first characters (in id
order, paged), a whole id (straight to the run), the agent a run started from, metadata;
each row's prompt excerpt and its links to its tree and its schedule; input the search
cannot use is said on the page (200) and changes nothing."""

from __future__ import annotations

import base64
import html
import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.agents.service import AgentService
from app.agents.specs import AgentIn
from app.core.scope import Scope
from app.dashboard import pages
from app.schedules.service import ScheduleService
from app.schedules.specs import ScheduleIn
from app.service import runs as run_service
from app.service.runs import RunService
from app.service.schemas import RunCreate
from tests.dashboard.helpers import completed_run
from tests.helpers import drive_due, run_body, snapshot, suspended_run

TEXT_ONLY = {"provider": "scripted", "name": "demo", "script": [{"text": "found it"}]}
LONG_PROMPT = "Summarise the quarterly report " + "and its appendix " * 12 + "<b>now</b>"


def ids(page: str) -> list[str]:
    return re.findall(r'id="row-(run_[^"]+)"', page)


def row(page: str, run_id: str) -> str:
    match = re.search(rf'<tr id="row-{run_id}"(.*?)</tr>', page, re.S)
    assert match, f"no row of {run_id}"
    return match.group(1)


def errors(page: str) -> list[str]:
    return [html.unescape(e) for e in re.findall(r'<p class="error" role="alert">(.*?)</p>', page)]


@pytest.fixture
def schedules(app: FastAPI) -> ScheduleService:
    service: ScheduleService = app.state.schedules
    return service


async def make_agent(agents: AgentService, name: str, **spec: Any) -> None:
    body = {"name": name, "description": f"the {name}", "model": TEXT_ONLY, **spec}
    await agents.create(AgentIn.model_validate(body), tenant="default", actor="key:test")


async def from_agent(service: RunService, ref: str, prompt: str = "go") -> str:
    view, _ = await service.create_run(RunCreate.model_validate({"agent": ref, "prompt": prompt}))
    return view.record.id


def minted(prefixes: list[str]) -> Any:
    """Run ids that start with each of `prefixes` in turn (the rest as the service's)."""
    ids = iter(prefixes)
    real = run_service.run_id

    def run_id() -> str:
        start = next(ids)
        return start + real()[len(start) :]

    return run_id


async def test_an_id_prefix_walks_its_range_in_id_order_page_by_page(
    admin: httpx.AsyncClient, service: RunService, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts = ["run_Ab"] * 5 + ["run_Aa", "run_Ac", "run_AB", "run_Ab"]
    monkeypatch.setattr(run_service, "run_id", minted(starts))
    made = [(await service.create_run(run_body()))[0].record.id for _ in starts]
    wanted = sorted(i for i in made if i.startswith("run_Ab"))
    assert len(wanted) == 6
    monkeypatch.setattr(pages, "PAGE_SIZE", 4)
    for given in ("run_Ab", "Ab", " run_Ab "):
        seen: list[str] = []
        url = f"/admin?status=any&id={given}"
        for _ in range(5):
            page = (await admin.get(url)).text
            assert errors(page) == [], given
            seen += ids(page)
            nxt = re.search(r'href="(/admin\?[^"]*cursor=[^"]+)" rel="next"', page)
            if nxt is None:
                break
            url = html.unescape(nxt.group(1))
            assert "id=run_Ab" in url and "status=any" in url  # the search is kept
        assert seen == wanted, given
    page = (await admin.get("/admin?status=any&id=run_Ab")).text
    assert "whose id starts with</span> <code>run_Ab</code>" in page
    assert 'value="run_Ab"' in page  # kept in the form
    assert 'hx-get="/admin/rows?status=any&amp;id=run_Ab"' in page  # and in the refresh
    rows = (await admin.get("/admin/rows?status=any&id=run_Ab")).text
    assert ids(rows) == wanted[:4]
    # The status filter holds along the range: none of them is suspended.
    assert ids((await admin.get("/admin?id=run_Ab")).text) == []
    assert ids((await admin.get("/admin?status=queued&id=run_Ac")).text) == [made[6]]


async def test_a_whole_id_opens_its_run(admin: httpx.AsyncClient, service: RunService) -> None:
    done = (await completed_run(service)).record.id
    response = await admin.get(f"/admin?id={done}")  # (the suspended list's form)
    assert response.status_code == 303 and response.headers["location"] == f"/admin/runs/{done}"
    bare = await admin.get(f"/admin?id={done.removeprefix('run_')}")
    assert bare.headers["location"] == f"/admin/runs/{done}"
    unknown = done[:-1] + ("x" if done[-1] != "x" else "y")
    page = await admin.get(f"/admin?status=any&id={unknown}")
    assert page.status_code == 200 and ids(page.text) == []
    assert errors(page.text) == [f"no run {unknown} among the runs viewed"]


async def test_runs_by_agent_show_their_prompt_tree_and_schedule(
    admin: httpx.AsyncClient,
    agents: AgentService,
    schedules: ScheduleService,
    service: RunService,
) -> None:
    await make_agent(agents, "researcher")
    await make_agent(
        agents,
        "boss",
        model={
            "provider": "scripted",
            "name": "demo",
            "script": [
                {"tool_calls": [{"name": "ask", "arguments": {"input": "q"}}]},
                {"text": "planned"},
            ],
        },
        tools=[{"name": "ask", "agent": "researcher"}],
    )
    plain = (await suspended_run(service, metadata={"ticket": "T-7"})).record.id
    lone = await from_agent(service, "researcher", LONG_PROMPT)
    boss = await from_agent(service, "boss", "plan the week")
    made = ScheduleIn.model_validate(
        {"key": "nightly", "cron": "0 6 * * *", "run": {"agent": "researcher", "prompt": "tick"}}
    )
    await schedules.create(made, tenant="default", actor="key:test")
    scheduled = (await schedules.trigger("nightly", "allow_all", tenant="default")).run_id
    assert scheduled is not None
    await drive_due(service.store, service.settings)
    children = [
        v.record.id
        for v in (
            await service.list_runs(
                status=None, limit=10, cursor=None, scope=Scope.ALL, root_run_id=boss
            )
        )[0]
        if v.record.id != boss
    ]
    assert len(children) == 1
    child = children[0]

    page = (await admin.get("/admin?status=any&agent=researcher")).text
    assert errors(page) == []
    assert set(ids(page)) == {lone, scheduled, child}
    assert ids((await admin.get("/admin?status=any&agent=researcher%401")).text) == ids(page)
    assert set(ids((await admin.get("/admin?status=any&agent=boss")).text)) == {boss}
    assert set(ids((await admin.get("/admin?status=any&agent=boss&meta=ticket")).text)) == set()
    assert 'value="researcher"' in page
    assert 'hx-get="/admin/rows?status=any&amp;agent=researcher"' in page
    rows = (await admin.get("/admin/rows?status=any&agent=researcher")).text
    assert set(ids(rows)) == {lone, scheduled, child}

    everything = (await admin.get("/admin?status=any")).text
    excerpt = row(everything, lone)
    shown = re.search(rf'<span id="prompt-{lone}" title="([^"]*)">([^<]*)</span>', excerpt)
    assert shown, excerpt
    assert html.unescape(shown.group(1)) == " ".join(LONG_PROMPT.split())  # whole, on hover
    assert len(html.unescape(shown.group(2))) == 80 and shown.group(2).endswith("…")
    assert "<b>" not in excerpt  # escaped
    assert "add 1+2 and 3+4" in row(everything, plain)
    assert "plan the week" in row(everything, boss)
    # A run of a tree links to its root's tree; a scheduled run to its schedule.
    for member in (boss, child):
        link = f'id="tree-{member}" href="/admin/runs/{boss}#run-tree"'
        assert link in row(everything, member)
    assert f'id="tree-{plain}"' not in everything and f'id="tree-{lone}"' not in everything
    assert f'id="schedule-{scheduled}" href="/admin/schedules/nightly"' in everything
    assert f'id="schedule-{lone}"' not in everything
    assert 'id="schedule-' not in row(everything, plain)
    assert '<th scope="col">Tenant</th>' in everything  # (the key: a deployment's admin)


#: A cursor whose run id holds a NUL (PostgreSQL's text cannot: it must not get there).
NUL_CURSOR = base64.urlsafe_b64encode(b"2026-01-01T00:00:00+00:00|run_\x00").decode().rstrip("=")
BAD = [
    ("id=run_%21%21", "run id:"),
    ("id=x", "run id:"),
    ("id=run_" + "a" * 22, "run id:"),
    ("id=run_ab%00", "run id:"),
    ("id=%00", "run id:"),
    ("agent=bad%20name", "agent:"),
    ("agent=nobody", "no agent 'nobody' in this tenant"),
    ("agent=researcher%400", "agent:"),
    ("agent=researcher%402", "no agent 'researcher@2'"),
    ("agent=res%00earcher", "agent:"),
    ("agent=rese%0Aarcher", "agent:"),
    ("tenant=no%20such%20tenant%21", "no tenant can be named"),
    ("tenant=acme%00", "no tenant can be named"),
    ("meta=ticket%3D%00", "metadata filter"),
    ("cursor=" + NUL_CURSOR, "cursor is malformed"),
]


@pytest.mark.parametrize(("query", "said"), BAD)
async def test_search_input_it_cannot_use_is_said_on_the_page_and_changes_nothing(
    admin: httpx.AsyncClient,
    agents: AgentService,
    service: RunService,
    query: str,
    said: str,
) -> None:
    await make_agent(agents, "researcher")
    waiting = await suspended_run(service)
    before = await snapshot(service.store, waiting.record.id)
    for path in ("/admin", "/admin/rows"):
        response = await admin.get(f"{path}?{query}")
        assert response.status_code == 200, (path, response.text)
        if path == "/admin":
            found = errors(response.text)
            assert any(said in e for e in found), found
            assert "\x00" not in response.text
        if not said.startswith("no agent"):  # the filter it names is left out
            assert ids(response.text) == [waiting.record.id], path
    assert await snapshot(service.store, waiting.record.id) == before
