"""The OpenAPI document states what the service enforces, so that a client generated from
it (or schemathesis) sends only what is accepted and knows every refusal:

* every refusal is `application/problem+json` (never the `application/json` FastAPI adds
  for a response model); the 422 of parameter validation is a problem too; every route
  that authenticates documents the 429 of failed-authentication throttling;
* request strings are valid Unicode without NUL, integers are within 64 bits, free-form
  JSON values follow the same rule (`JsonValue`; `app.service.jsonrules`);
* a query or header parameter is a plain value (FastAPI writes optional ones as "or
  null", which HTTP cannot carry);
* `model` is one of the providers' parameter tables (`app.providers.params`), each closed;
  it may be left out (continuing a run), never null.

Rules between fields (a `tool_choice` naming a defined tool, `from` not after `to`, a
cursor this service made, a reachable webhook URL) cannot be written in JSON Schema: they
are in the descriptions, and their refusals are 422 `/problems/invalid-request`, apart
from the schema's own `/problems/validation-error`.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from app.api.problems import MEDIA_TYPE, responses
from app.core import MAX_JSON_INT, MIN_JSON_INT
from app.providers import profiles
from app.providers.params import EXTRA_BODY, TABLES
from app.service.principals import Grants, Permission, roles_with

#: The OpenAPI extension that names an operation's permission and the roles holding it.
PERMISSION_KEY = "x-permission"
ROLES_KEY = "x-roles"
#: The OpenAPI extension that marks the operations a browser token may call (its run's).
BROWSER_KEY = "x-browser-token"

PROBLEM = {"$ref": "#/components/schemas/Problem"}
JSON_VALUE = {"$ref": "#/components/schemas/JsonValue"}
#: Text without NUL (as ECMA-262, Python and Rust regexes read it). Lone surrogates are
#: refused too, but a regex over UTF-8 text (jsonschema-rs) cannot name them: they are in
#: the description of `JsonValue` and of every request body.
TEXT = r"^[^\u0000]*$"
_BODIES = (
    "RunCreate",
    "ToolResultsIn",
    "ResolutionIn",
    "DecisionsIn",
    "LeaseIn",
    "HeartbeatIn",
    "LeasedResultIn",
    "BrowserTokenIn",
    "KeyCreate",
    "KeyRotate",
    "TenantCreate",
    "TenantPatch",
)


def _json_value_schema() -> dict[str, Any]:
    return {
        "description": "Any JSON value: integers within the 64-bit range, finite numbers, "
        "text without NUL or lone surrogates (I-JSON), nested at most 128 levels below the "
        "top of the request body.",
        "anyOf": [
            {"type": "null"},
            {"type": "boolean"},
            {"type": "integer", "minimum": MIN_JSON_INT, "maximum": MAX_JSON_INT},
            {"type": "number"},
            {"type": "string", "pattern": TEXT},
            {"type": "array", "items": JSON_VALUE},
            {
                "type": "object",
                "additionalProperties": JSON_VALUE,
                "propertyNames": {"pattern": TEXT},
            },
        ],
    }


def _is_any(schema: Any) -> bool:
    keys = set(schema) - {"title", "description", "default", "examples"}
    return isinstance(schema, dict) and not keys


def _tighten(schema: Any) -> Any:
    """Strings get the text rule, free-form values become `JsonValue`."""
    if isinstance(schema, list):
        return [_tighten(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if _is_any(schema):
        return {**schema, **JSON_VALUE}
    out = {k: _tighten(v) for k, v in schema.items()}
    if out.get("additionalProperties") is True:
        out["additionalProperties"] = JSON_VALUE
    if out.get("additionalProperties") not in (None, False):
        out.setdefault("propertyNames", {"pattern": TEXT})
    if out.get("type") == "string" and not {"pattern", "enum", "const", "format"} & set(out):
        out["pattern"] = TEXT
    if out.get("type") == "integer":
        out.setdefault("minimum", MIN_JSON_INT)
        out.setdefault("maximum", MAX_JSON_INT)
    return out


def _model_schema(components: dict[str, Any]) -> dict[str, Any]:
    """`model`: one closed object per wire, its parameters from the wire's table; its
    `provider` is a built-in profile, or one of the configured profiles of that wire."""
    variants = []
    by_table: dict[str, list[str]] = {}
    for profile in profiles.active():
        by_table.setdefault(profile.param_table, []).append(profile.name)
    for provider, table in TABLES.items():
        names = sorted(by_table.get(provider, [provider]))
        prefix = provider.title().replace("_", "")
        generated = table.adapter.json_schema(
            ref_template=f"#/components/schemas/{prefix}{{model}}"
        )
        for name, definition in generated.pop("$defs", {}).items():
            components[f"{prefix}{name}"] = _tighten(definition)
        properties = {
            "provider": {"const": provider} if names == [provider] else {"enum": names},
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": TEXT},
            **_tighten(generated.get("properties", {})),
        }
        if table.extra_body:
            properties[EXTRA_BODY] = {
                "type": "object",
                "additionalProperties": JSON_VALUE,
                "propertyNames": {"pattern": TEXT},
                "description": "parameters newer than this service, sent verbatim",
            }
        variants.append(
            {
                "title": f"{table.wire} model",
                "type": "object",
                "properties": properties,
                "required": ["provider", "name"],
                "additionalProperties": False,
            }
        )
    return {
        "title": "ModelSpec",
        "description": "The provider, the model's name and its request parameters.",
        "oneOf": variants,
        "discriminator": {"propertyName": "provider"},
    }


def _plain_parameter(parameter: dict[str, Any]) -> None:
    schema = parameter.get("schema", {})
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o.get("type") != "null"]
        if len(kept) == 1:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            parameter["schema"] = {**rest, **kept[0]}


def _fix_operation(operation: dict[str, Any]) -> None:
    for parameter in operation.get("parameters", []):
        _plain_parameter(parameter)
    answers: dict[str, Any] = operation.setdefault("responses", {})
    for status, answer in list(answers.items()):
        if not status.isdigit() or int(status) < 400:
            continue
        answer["content"] = {MEDIA_TYPE: {"schema": PROBLEM}}
        if status == "422" and answer.get("description") == "Validation Error":
            answer["description"] = responses(422)[422]["description"]
    if "401" in answers and "429" not in answers:
        answers["429"] = {
            "description": responses(429)[429]["description"],
            "content": {MEDIA_TYPE: {"schema": PROBLEM}},
        }


def _authorizer(dependant: Dependant) -> Any:
    """The `app.api.security.authorize` dependency of the route, if any."""
    for sub in dependant.dependencies:
        if isinstance(getattr(sub.call, "permission", None), Permission):
            return sub.call
        inner = _authorizer(sub)
        if inner is not None:
            return inner
    return None


def permission_of(dependant: Dependant) -> Permission | None:
    """The permission an `app.api.security.authorize` dependency of the route names."""
    found = _authorizer(dependant)
    return None if found is None else found.permission


def _document_access(
    operation: dict[str, Any], permission: Permission, browser: bool, grants: Grants
) -> None:
    roles = roles_with(permission, grants)
    operation[PERMISSION_KEY] = permission.value
    operation[ROLES_KEY] = roles
    note = f"Needs the permission `{permission.value}` (roles: {', '.join(roles)})."
    if browser:
        operation[BROWSER_KEY] = True
        note += " A browser token for this run may call it too (`?access_token=`)."
    operation["description"] = (operation.get("description", "") + "\n\n" + note).strip()
    answers: dict[str, Any] = operation.setdefault("responses", {})
    answers.setdefault("403", {"description": responses(403)[403]["description"]})


def _api_routes(app: FastAPI) -> list[Any]:
    """The app's API routes in the schema, with their full paths. FastAPI ≥ 0.16x keeps an
    included router as one entry of `app.routes` (an `_IncludedRouter`); its routes are
    reached through `iter_route_contexts`, each with the router's prefix applied."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # older FastAPI: included routes are copied into app.routes
        return [r for r in app.routes if isinstance(r, APIRoute) and r.include_in_schema]
    return [
        context
        for context in iter_route_contexts(app.routes)
        if isinstance(context.original_route, APIRoute) and context.include_in_schema
    ]


def build(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    paths: dict[str, Any] = schema.get("paths", {})
    for route in _api_routes(app):
        authorizer = _authorizer(route.dependant)
        if authorizer is None or route.path_format not in paths:
            continue
        for method in route.methods or ():
            operation = paths[route.path_format].get(method.lower())
            if operation is not None:
                grants = app.state.grants  # (the roles `create_api` was handed)
                _document_access(operation, authorizer.permission, authorizer.browser, grants)
    for path in paths.values():
        for operation in path.values():
            _fix_operation(operation)
    components: dict[str, Any] = schema.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    bodies = sorted({*_BODIES, *_request_bodies(paths)} & set(components))
    body_parts = _referenced(components, tuple(bodies))
    for name in body_parts:
        components[name] = _tighten(components[name])
    components["ModelSpec"] = _model_schema(components)
    # (A run's body, an agent's, and a compaction policy's: `model` is a ModelSpec, never
    # null.)
    for name in (*bodies, "CompactionPolicy"):
        properties = components.get(name, {}).get("properties", {})
        if "model" in properties:
            properties["model"] = {"$ref": "#/components/schemas/ModelSpec"}
    components["JsonValue"] = _json_value_schema()
    return schema


def _request_bodies(paths: dict[str, Any]) -> set[str]:
    """The schema names of every operation's JSON request body (a feature's routes too)."""
    names = set()
    for path in paths.values():
        for operation in path.values():
            content = operation.get("requestBody", {}).get("content", {})
            ref = content.get("application/json", {}).get("schema", {}).get("$ref", "")
            if ref:
                names.add(ref.rsplit("/", 1)[-1])
    return names


def _referenced(components: dict[str, Any], roots: tuple[str, ...]) -> list[str]:
    """The component names reachable from `roots` (the request bodies' parts)."""
    seen: list[str] = []
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in components:
            continue
        seen.append(name)
        todo.extend(_refs(components[name]))
    return seen


def _refs(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        found = []
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            found.append(ref.rsplit("/", 1)[1])
        for value in schema.values():
            found.extend(_refs(value))
        return found
    if isinstance(schema, list):
        return [r for item in schema for r in _refs(item)]
    return []


def install(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
