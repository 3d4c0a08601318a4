"""The one way this service checks and evaluates a JSON Schema it was given (approval
rules, and tools' `parameters` where edited arguments are validated against them).

- Checked once, at create (`checked`): a valid schema of its draft (`$schema`, else
  Draft 2020-12); every `$ref` / `$dynamicRef` / `$recursiveRef` resolves *within the
  schema itself* (the registry retrieves nothing: no network, no file; a remote or dangling
  reference is refused); every `pattern` and `patternProperties` key compiles as an RE2
  expression (no backreferences, no lookaround); `unevaluatedProperties` together with
  `patternProperties` is refused (the library matches those with Python's backtracking
  `re`).
- No chain of references loops back without descending into the instance
  (`{"$ref": "#"}`): evaluating it would never end.
- Evaluated (`validator`) with the draft's format checker and with `pattern`,
  `patternProperties` and `additionalProperties` matched by RE2, in time linear in the
  string: a rule cannot stall the worker's event loop by catastrophic backtracking.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import re2
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

_RE2 = re2.Options()
_RE2.log_errors = False
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")


class BadSchema(ValueError):
    """A schema this service refuses (the message says why)."""


def _retrieve_nothing(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


#: References resolve within the schema only.
NOTHING: Registry[Any] = Registry(retrieve=_retrieve_nothing)  # type: ignore[call-arg]


@functools.lru_cache(maxsize=1024)
def regex(pattern: str) -> Any:
    """`pattern` compiled by RE2 (linear-time matching); re2.error when it is not RE2."""
    return re2.compile(pattern, options=_RE2)


def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and regex(patrn).search(instance) is None:
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if regex(pattern).search(key) is not None:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = [regex(p) for p in schema.get("patternProperties", {})]
    extras = [
        k
        for k in instance
        if k not in properties and not any(p.search(k) is not None for p in patterns)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        yield ValidationError(
            f"additional properties are not allowed ({', '.join(map(repr, sorted(extras)))})"
        )


_LINEAR = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


@functools.cache
def _linear(cls: type[Validator]) -> type[Validator]:
    """`cls` with the regex keywords it has matched by RE2."""
    overrides = {k: v for k, v in _LINEAR.items() if k in cls.VALIDATORS}
    linear: type[Validator] = validators.extend(cls, overrides)  # type: ignore[no-untyped-call]
    return linear


def _class_of(schema: Any) -> type[Validator]:
    cls: type[Validator] = validators.validator_for(schema, default=Draft202012Validator)
    return cls


def _walk(schema: Mapping[str, Any]) -> None:
    """Every reference of `schema` resolves within it; every regex is RE2 (BadSchema)."""
    spec = specification_with(str(schema.get("$schema", "")), default=DRAFT202012)
    root = spec.create_resource(schema)
    registry = NOTHING.with_resource(root.id() or "", root).crawl()
    patterned = unevaluated = False
    done: set[int] = set()

    def visit(resolver: Any, resource: Resource[Any]) -> None:
        nonlocal patterned, unevaluated
        contents = resource.contents
        if not isinstance(contents, Mapping):
            return
        for key in _REFS:
            ref = contents.get(key)
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except (Unresolvable, LookupError, ValueError, TypeError):
                    raise BadSchema(
                        f"{key} {ref!r} does not resolve within the schema (references to "
                        "other documents are not fetched)"
                    ) from None
        patterns = []
        if isinstance(contents.get("pattern"), str):
            patterns.append(contents["pattern"])
        if isinstance(contents.get("patternProperties"), Mapping):
            patterned = True
            patterns.extend(contents["patternProperties"])
        unevaluated = unevaluated or "unevaluatedProperties" in contents
        for pattern in patterns:
            try:
                regex(pattern)
            except re2.error:
                raise BadSchema(
                    f"pattern {pattern!r} is not supported (patterns are matched by RE2: "
                    "no backreferences or lookaround)"
                ) from None
        _no_loop(spec, resolver, contents, [], done)
        for sub in resource.subresources():
            visit(resolver.in_subresource(sub), sub)

    resolver = registry.resolver(base_uri=root.id() or "")
    visit(resolver, root)
    if patterned and unevaluated:
        raise BadSchema("unevaluatedProperties with patternProperties is not supported")


#: The keywords whose subschemas apply to the same instance (not to a part of it).
_SAME_INSTANCE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")


def _no_loop(spec: Any, resolver: Any, contents: Any, path: list[int], done: set[int]) -> None:
    """No chain of references comes back to a schema without the instance getting
    smaller on the way (`{"$ref": "#"}`): evaluating one would never end."""
    if not isinstance(contents, Mapping) or id(contents) in done:
        return
    if id(contents) in path:
        raise BadSchema("its references loop without descending into the instance")
    path.append(id(contents))
    here = resolver.in_subresource(spec.create_resource(contents))
    for key in _REFS:
        ref = contents.get(key)
        if isinstance(ref, str):
            resolved = here.lookup(ref)
            _no_loop(spec, resolved.resolver, resolved.contents, path, done)
    for key in _SAME_INSTANCE:
        value = contents.get(key)
        subs = (
            value.values()
            if key == "dependentSchemas" and isinstance(value, Mapping)
            else (value if isinstance(value, list) else [value])
        )
        for sub in subs:
            _no_loop(spec, here, sub, path, done)
    path.pop()
    done.add(id(contents))


@functools.lru_cache(maxsize=256)
def _checked(schema_json: bytes) -> Validator:
    schema = orjson.loads(schema_json)
    if not isinstance(schema, Mapping | bool):
        raise BadSchema("a schema is an object or a boolean")
    cls = _class_of(schema)
    try:
        cls.check_schema(schema)  # type: ignore[arg-type]
    except SchemaError as exc:
        raise BadSchema(f"not a valid JSON Schema: {exc.message}") from None
    if isinstance(schema, Mapping):
        try:
            _walk(schema)
        except RecursionError:
            raise BadSchema("it is nested too deeply") from None
    return _linear(cls)(schema, registry=NOTHING, format_checker=cls.FORMAT_CHECKER)


def validator(schema: Any) -> Validator:
    """The validator of `schema`, checked (BadSchema when it is refused); cached by the
    schema's canonical JSON."""
    return _checked(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))


def check(schema: Any) -> None:
    """Refuse `schema` (BadSchema) as `validator` would."""
    validator(schema)
