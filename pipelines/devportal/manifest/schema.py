"""The JSON Schema check: `manifest.schema.json` (Draft 2020-12) run with jsonschema.

Every error jsonschema finds becomes one finding with the JSON pointer of the offending value
(for a missing property: the pointer the property would have), rule `schema.<keyword>` and a
plain message. An unknown property is reported as a warning, rule `unknown-property`: the
schema lists the known ones with `additionalProperties: false`, but the desktop client ignores
extra keys, so an extra key is worth a look (often a typo), not a rejected release.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from devportal.manifest.report import ERROR, WARNING, Finding, pointer

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

SCHEMA_FILE = "manifest.schema.json"

# Human names for the patterns the schema uses (a bare regex is not a message).
_PATTERN_NAMES = {
    "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_.-]+$": "a permission name of the form <namespace>.<name> "
    "(e.g. slobs.streaming)",
}

_JSON_TYPES = {"object": "an object", "array": "an array", "string": "a string"}
_JSON_TYPES |= {"number": "a number", "integer": "an integer", "boolean": "true or false"}
_JSON_TYPES |= {"null": "null"}


@cache
def load_schema() -> dict[str, Any]:
    """The shipped schema (package data), parsed once."""
    text = resources.files("devportal.manifest").joinpath(SCHEMA_FILE).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # deferred: ~0.1 s, `devportal --help` skips it

    return Draft202012Validator(load_schema())


def schema_findings(document: Any) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for error in validator().iter_errors(document):
        for finding in _translate(error):
            # `required` and `additionalProperties` yield one error per object in some
            # jsonschema versions and one per key in others; report each key once.
            key = (finding.pointer, finding.rule)
            if key in seen and finding.rule in ("schema.required", "unknown-property"):
                continue
            seen.add(key)
            findings.append(finding)
    return findings


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    return json.dumps(value)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _translate(error: ValidationError) -> Iterator[Finding]:
    path = list(error.absolute_path)
    keyword = str(error.validator)
    # jsonschema types these as `Any | Unset`; they are always set on errors from iter_errors.
    value: Any = error.validator_value
    instance: Any = error.instance
    schema: Any = error.schema
    here = pointer(path)

    if keyword == "required":
        present = instance if isinstance(instance, dict) else {}
        for name in value:
            if name not in present:
                yield Finding(
                    ERROR,
                    pointer([*path, name]),
                    "schema.required",
                    f"required property {name!r} is missing",
                )
        return
    if keyword == "additionalProperties":
        known = set(schema.get("properties", {}))
        for name in instance:
            if name not in known:
                yield Finding(
                    WARNING,
                    pointer([*path, name]),
                    "unknown-property",
                    f"unknown property {name!r} is ignored by the desktop client; "
                    f"known properties here: {', '.join(sorted(known))}",
                )
        return

    message: str
    if keyword == "type":
        wanted = [value] if isinstance(value, str) else list(value)
        names = " or ".join(_JSON_TYPES.get(t, t) for t in wanted)
        message = f"must be {names}, not {_JSON_TYPES[_json_type(instance)]}"
    elif keyword == "minLength":
        if value == 1:
            message = "must not be empty"
        else:
            message = (
                f"{_describe(instance)} is {len(instance)} characters long; "
                f"at least {value} are required"
            )
    elif keyword == "minItems":
        message = f"must list at least {value} element{'s' if value != 1 else ''}"
    elif keyword == "uniqueItems":
        repeats = sorted({_describe(v) for v in instance if instance.count(v) > 1})
        message = f"lists {', '.join(repeats)} more than once; list each value once"
    elif keyword == "enum":
        allowed = ", ".join(str(v) for v in value)
        message = f"{_describe(instance)} is not allowed; allowed values: {allowed}"
    elif keyword == "pattern":
        wanted_form = _PATTERN_NAMES.get(value, f"a string matching {value}")
        message = f"{_describe(instance)} is not {wanted_form}"
    else:
        message = error.message
    yield Finding(ERROR, here, f"schema.{keyword}", message)
