"""The direct path's compiled statements: placeholders, constants and JSON parameters."""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from app.store.backend.pg_direct import compile_statement
from app.store.schema import runs


def test_named_parameters_become_numbered_and_repeats_share_a_number() -> None:
    stmt = (
        runs.update()
        .where(runs.c.id == sa.bindparam("p_id"), runs.c.request_hash.like("a%"))
        .values(
            waiting_reason=sa.bindparam("v_reason", type_=runs.c.waiting_reason.type),
            created_at=sa.bindparam("p_now"),
            updated_at=sa.bindparam("p_now"),
            version=runs.c.version + 1,
        )
        .returning(runs.c.id)
    )
    compiled = compile_statement(stmt, postgresql.psycopg.dialect())
    assert "%(" not in compiled.sql and "%%" not in compiled.sql
    assert "LIKE $" in compiled.sql  # the pattern is a parameter, its '%' survives as data
    numbers = {int(n) for n in re.findall(r"\$(\d+)", compiled.sql)}
    assert numbers == set(range(1, len(compiled.slots) + 1))
    names = [slot[0] for slot in compiled.slots]
    assert names.count("p_now") == 1  # both uses of p_now are one placeholder
    params = compiled.params({"p_id": "run_1", "v_reason": {"type": "queued"}, "p_now": 7})
    by_name = dict(zip(names, params, strict=True))
    assert by_name["p_id"] == "run_1"
    assert by_name["v_reason"] == '{"type":"queued"}'  # JSON goes as text
    assert by_name["p_now"] == 7
    assert 1 in params and "a%" in params  # SQLAlchemy's own constants are filled in


def test_a_literal_percent_sign_reaches_the_server_unescaped() -> None:
    stmt = sa.select(runs.c.id).where(runs.c.output == sa.literal_column("'50%'"))
    compiled = compile_statement(stmt, postgresql.psycopg.dialect())
    assert "'50%'" in compiled.sql and compiled.slots == ()


def test_json_null_is_stored_as_json_null_as_sqlalchemy_does() -> None:
    stmt = runs.update().values(error=sa.bindparam("v_error", type_=runs.c.error.type))
    compiled = compile_statement(stmt, postgresql.psycopg.dialect())
    assert compiled.params({"v_error": None}) == ["null"]


def test_a_missing_value_fails_loudly() -> None:
    stmt = runs.update().values(output=sa.bindparam("v_output", type_=runs.c.output.type))
    compiled = compile_statement(stmt, postgresql.psycopg.dialect())
    try:
        compiled.params({})
    except KeyError as exc:
        assert exc.args == ("v_output",)
    else:
        raise AssertionError("a missing parameter must not be sent as anything")
