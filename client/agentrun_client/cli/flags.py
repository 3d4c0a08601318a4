"""Reading the command line's flag values: JSON (inline, `@file`, `@-`), a body (JSON, or
a TOML file), `KEY=VALUE`, a model; a value that cannot be used is a `UsageError` (exit
status 2)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any


class UsageError(Exception):
    """A flag's value cannot be used (exit status 2)."""


def read_json(text: str, what: str) -> Any:
    """JSON text, `@path` for a file's content, or `@-` for stdin."""
    source = text
    if text.startswith("@"):
        path = text[1:]
        try:
            source = sys.stdin.read() if path == "-" else Path(path).read_text()
        except OSError as exc:
            raise UsageError(f"{what}: cannot read {path}: {exc.strerror}") from None
    try:
        return json.loads(source)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what}: not JSON ({exc.msg} at {exc.pos}): {source[:80]!r}") from None


def read_body(text: str, what: str) -> dict[str, Any]:
    """A request body: a JSON object (as `read_json` takes it), or `@path.toml`, a TOML
    document (where a long `preamble` reads well)."""
    if text.startswith("@") and text.endswith(".toml"):
        path = text[1:]
        try:
            return tomllib.loads(Path(path).read_text())
        except OSError as exc:
            raise UsageError(f"{what}: cannot read {path}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{what}: not TOML: {path}: {exc}") from None
    body = read_json(text, what)
    if not isinstance(body, dict):
        raise UsageError(f"{what}: a JSON object is expected")
    return body


def pair(text: str, what: str, *, strict: bool) -> tuple[str, Any]:
    """`KEY=VALUE`. Strict: VALUE is JSON. Otherwise VALUE is JSON when it parses as JSON
    and the text itself when it does not (`temperature=0.2` a number, `effort=low` text)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"{what}: expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        if strict:
            hint = f"""(a string is quoted: {key}='"{value}"')"""
            raise UsageError(f"{what} {key}: not JSON: {value!r} {hint}") from None
        return key, value


def model_spec(text: str) -> dict[str, Any]:
    """`provider:name`, a JSON object, or `@file` holding one."""
    if text.startswith(("{", "@")):
        spec = read_json(text, "--model")
        if not isinstance(spec, dict):
            raise UsageError("--model: a JSON object is expected")
        return spec
    provider, sep, name = text.partition(":")
    if not sep or not provider or not name:
        raise UsageError(f"--model: expected PROVIDER:NAME or a JSON object, got {text!r}")
    return {"provider": provider, "name": name}
