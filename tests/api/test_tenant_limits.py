"""A tenant's shared limits (`requests_per_minute`, `tokens_per_minute`, `max_concurrent`)
over `/v1/tenants`, on both databases: a bad value is a 422 problem naming the field and
changes nothing (the tenant read back is as it was, or was never made); a good value is
stored and read back as given, `null` clears it, and a change keeps the limits it does
not name. Hypothesis throws arbitrary JSON at the limits body of a create and a change."""

from __future__ import annotations

import json
import math
import secrets
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.test_json_edge import ANY_JSON, ANY_TEXT, live

__all__ = ["live"]  # (the fixture: a server per database)

#: Each shared limit and the largest value it takes (`app.tenancy.tenants.TenantLimits`).
BOUNDS = {"requests_per_minute": 10**9, "tokens_per_minute": 10**12, "max_concurrent": 10**6}

#: What no limit takes: too small, not integers, not numbers, past the bound, past the
#: 64-bit range (so past what any column could hold), not finite.
BAD = [
    0,
    -1,
    -(2**63),
    1.5,
    0.999,
    "5",
    "ten",
    True,
    False,
    [],
    [5],
    {},
    {"value": 5},
    2**63,
    2**64,
    10**30,
    1e300,
    float("nan"),
    float("inf"),
    float("-inf"),
]

ALL_UNSET = {
    "max_active_runs": None,
    "daily_tokens": None,
    "daily_cost_usd": None,
    "requests_per_minute": None,
    "tokens_per_minute": None,
    "max_concurrent": None,
}


def tenant_id() -> str:
    return f"lim-{secrets.token_hex(4)}"


def as_json(body: Any) -> dict[str, Any]:
    """The keyword arguments of a request whose body is `body` as JSON text, NaN and
    infinities as the JavaScript literals a careless client sends."""
    return {
        "content": json.dumps(body, allow_nan=True),
        "headers": {"content-type": "application/json"},
    }


def assert_problem_naming(response: httpx.Response, where: str) -> None:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["status"] == 422 and problem["type"] == "/problems/validation-error"
    assert problem["detail"].startswith(f"{where}: "), problem
    assert problem["errors"][0]["loc"][1:] == where.split("."), problem


async def limits_of(client: httpx.AsyncClient, tenant: str) -> dict[str, Any]:
    got = await client.get(f"/v1/tenants/{tenant}")
    assert got.status_code == 200, got.text
    limits: dict[str, Any] = got.json()["limits"]
    return limits


@pytest.mark.parametrize("field", sorted(BOUNDS))
async def test_a_bad_limit_is_a_problem_naming_it_and_changes_nothing(
    client: httpx.AsyncClient, field: str
) -> None:
    tenant = tenant_id()
    given_limits = {"requests_per_minute": 60, "tokens_per_minute": 5000, "max_concurrent": 2}
    made = await client.post("/v1/tenants", json={"id": tenant, "limits": given_limits})
    assert made.status_code == 201, made.text
    before = (await client.get(f"/v1/tenants/{tenant}")).json()
    for value in [*BAD, BOUNDS[field] + 1]:
        # A change: refused whole, also when a good limit comes with it.
        for body in ({field: value}, {field: value, "max_active_runs": 7}):
            patched = await client.patch(f"/v1/tenants/{tenant}", **as_json({"limits": body}))
            assert_problem_naming(patched, f"limits.{field}")
            assert (await client.get(f"/v1/tenants/{tenant}")).json() == before, value
        # A create: refused, and no tenant made.
        other = tenant_id()
        created = await client.post(
            "/v1/tenants", **as_json({"id": other, "limits": {field: value}})
        )
        assert_problem_naming(created, f"limits.{field}")
        assert (await client.get(f"/v1/tenants/{other}")).status_code == 404
    assert before in (await client.get("/v1/tenants")).json()["data"]


async def test_unknown_limits_and_a_null_limits_object_are_refused(
    client: httpx.AsyncClient,
) -> None:
    tenant = tenant_id()
    made = await client.post("/v1/tenants", json={"id": tenant, "limits": {"max_concurrent": 3}})
    assert made.status_code == 201, made.text
    before = await limits_of(client, tenant)
    for unknown in ("max_concurent", "requestsPerMinute", "max_concurrent ", "", "limits"):
        body = {"limits": {"max_concurrent": 4, unknown: 5}}
        patched = await client.patch(f"/v1/tenants/{tenant}", json=body)
        assert_problem_naming(patched, f"limits.{unknown}")
        other = tenant_id()
        created = await client.post("/v1/tenants", json={"id": other, **body})
        assert_problem_naming(created, f"limits.{unknown}")
        assert (await client.get(f"/v1/tenants/{other}")).status_code == 404
    for limits in (5, "max_concurrent=4", [{"max_concurrent": 4}], True):
        patched = await client.patch(f"/v1/tenants/{tenant}", json={"limits": limits})
        assert_problem_naming(patched, "limits")
    for limits in (None, 5, "max_concurrent=4", [{"max_concurrent": 4}], True):
        other = tenant_id()  # (a create's null limits are not "no limits": leave them out)
        created = await client.post("/v1/tenants", json={"id": other, "limits": limits})
        assert_problem_naming(created, "limits")
        assert (await client.get(f"/v1/tenants/{other}")).status_code == 404
    assert await limits_of(client, tenant) == before == {**ALL_UNSET, "max_concurrent": 3}


async def test_good_limits_round_trip_and_null_clears_one(client: httpx.AsyncClient) -> None:
    tenant = tenant_id()
    least = dict.fromkeys(BOUNDS, 1)
    made = await client.post(
        "/v1/tenants", json={"id": tenant, "limits": {**least, "daily_tokens": 10}}
    )
    assert made.status_code == 201, made.text
    assert made.json()["limits"] == {**ALL_UNSET, **least, "daily_tokens": 10}
    assert await limits_of(client, tenant) == made.json()["limits"]
    # The largest each takes; `5.0` is the integer 5 (JSON has one number type).
    patched = await client.patch(f"/v1/tenants/{tenant}", json={"limits": BOUNDS})
    assert patched.status_code == 200, patched.text
    assert patched.json()["limits"] == {**ALL_UNSET, **BOUNDS, "daily_tokens": 10}
    assert await limits_of(client, tenant) == patched.json()["limits"]
    integral = await client.patch(f"/v1/tenants/{tenant}", json={"limits": {"max_concurrent": 5.0}})
    assert integral.status_code == 200, integral.text
    stored = await limits_of(client, tenant)
    assert stored["max_concurrent"] == 5 and type(stored["max_concurrent"]) is int
    # Null clears the limit named (unlimited); the others are kept.
    cleared = await client.patch(f"/v1/tenants/{tenant}", json={"limits": {"max_concurrent": None}})
    assert cleared.status_code == 200, cleared.text
    expected = {**ALL_UNSET, **BOUNDS, "daily_tokens": 10, "max_concurrent": None}
    assert cleared.json()["limits"] == expected
    assert await limits_of(client, tenant) == expected
    # An empty change, and a change that names none of the limits, keep them all.
    for body in ({"limits": {}}, {"name": "Renamed"}, {}):
        kept = await client.patch(f"/v1/tenants/{tenant}", json=body)
        assert kept.status_code == 200, kept.text
        assert await limits_of(client, tenant) == expected
    everything = {f: None for f in BOUNDS} | {"daily_tokens": None}
    none_left = await client.patch(f"/v1/tenants/{tenant}", json={"limits": everything})
    assert none_left.status_code == 200, none_left.text
    assert await limits_of(client, tenant) == ALL_UNSET


# --- arbitrary JSON at the limits body -----------------------------------------------------

#: Values every shared limit takes (`5.0` is the integer 5); values near each limit's
#: edges; and any JSON at all.
GOOD = (
    st.none()
    | st.integers(min_value=1, max_value=10**6)
    | st.integers(min_value=1, max_value=10**6).map(float)
)
EDGE = (
    st.integers(min_value=-2, max_value=3)
    | st.sampled_from([10**6, 10**6 + 1, 10**9, 10**9 + 1, 10**12, 10**12 + 1, 2**63, 2**64])
    | st.floats(min_value=-2, max_value=2 * 10**12)
)
VALUE = GOOD | EDGE | ANY_JSON
LIMITS = (
    st.fixed_dictionaries({}, optional=dict.fromkeys(BOUNDS, GOOD))
    | st.fixed_dictionaries({}, optional=dict.fromkeys(BOUNDS, VALUE) | {"extra": ANY_JSON})
    | st.dictionaries(st.sampled_from(sorted(BOUNDS)) | ANY_TEXT, VALUE, max_size=3)
    | ANY_JSON
)


def accepted_value(field: str, value: Any) -> tuple[bool, int | None]:
    """Whether `field` takes `value` (an integer from 1 to its bound, an integral float
    counting as the integer, or null), and what is then stored."""
    if value is None:
        return True, None
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is int and 1 <= value <= BOUNDS[field]:
        return True, value
    return False, None


def expected_limits(limits: Any) -> dict[str, Any] | None:
    """The limits a body sets, or None when it must be refused."""
    if not isinstance(limits, dict) or not set(limits) <= set(BOUNDS):
        return None
    out: dict[str, Any] = {}
    for field, value in limits.items():
        ok, stored = accepted_value(field, value)
        if not ok:
            return None
        out[field] = stored
    return out


def _tenant(client: httpx.Client, tenant: str) -> httpx.Response:
    return client.get(f"/v1/tenants/{tenant}")


def _refused(response: httpx.Response) -> None:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["detail"].startswith("limits"), response.text


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(limits=LIMITS)
def test_any_limits_body_is_stored_as_given_or_refused_with_nothing_changed(
    live: tuple[httpx.Client, str], limits: Any
) -> None:
    client, _ = live
    expected = expected_limits(limits)
    # A create.
    tenant = tenant_id()
    created = client.post("/v1/tenants", **as_json({"id": tenant, "limits": limits}))
    assert created.status_code < 500, created.text
    if expected is None:
        _refused(created)
        assert _tenant(client, tenant).status_code == 404
    else:
        assert created.status_code == 201, created.text
        assert _tenant(client, tenant).json()["limits"] == {**ALL_UNSET, **expected}
    # A change of a tenant with every shared limit set.
    tenant = tenant_id()
    start = {"requests_per_minute": 60, "tokens_per_minute": 5000, "max_concurrent": 2}
    assert client.post("/v1/tenants", json={"id": tenant, "limits": start}).status_code == 201
    before = _tenant(client, tenant).json()
    patched = client.patch(f"/v1/tenants/{tenant}", **as_json({"limits": limits}))
    assert patched.status_code < 500, patched.text
    after = _tenant(client, tenant).json()
    if limits is None:  # (no change asked for)
        assert patched.status_code == 200 and after == before
    elif expected is None:
        _refused(patched)
        assert after == before
    else:
        assert patched.status_code == 200, patched.text
        assert after["limits"] == {**ALL_UNSET, **start, **expected} == patched.json()["limits"]
