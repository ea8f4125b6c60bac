"""The JSON Schema: `manifest.schema.json` (Draft 2020-12), run with jsonschema and printed for
editors (`devportal manifest schema`): one file serves both, so an editor flags what `validate`
flags.

Every error jsonschema finds becomes one finding with the JSON pointer of the offending value
(for a missing property: the pointer the property would have), rule `schema.<keyword>` and a
plain message. An unknown property is reported as a warning, rule `unknown-property`: the
schema lists the known ones with `additionalProperties: false`, but the desktop client ignores
extra keys, so an extra key is worth a look (often a typo), not a rejected release.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from devportal.manifest.findings import (
    ERROR,
    TYPE_NAMES,
    WARNING,
    Finding,
    Severity,
    closest,
    did_you_mean,
    json_type,
    pointer,
    quoted,
)

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

SCHEMA_FILE = "manifest.schema.json"

# Human names for the patterns the schema uses (a bare regex is not a message).
_PATTERN_NAMES = {
    "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_.-]+$": "a permission name of the form <namespace>.<name> "
    "(e.g. slobs.streaming)",
}


def schema_text() -> str:
    """The shipped schema file as it is (package data): what `devportal manifest schema` prints."""
    return resources.files("devportal.manifest").joinpath(SCHEMA_FILE).read_text("utf-8")


@cache
def load_schema() -> dict[str, Any]:
    """The shipped schema, parsed once."""
    schema: dict[str, Any] = json.loads(schema_text())
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
    if isinstance(value, str):
        return quoted(value, 60)
    if isinstance(value, dict | list):
        return TYPE_NAMES[json_type(value)]
    return json.dumps(value)  # true, false, null or a number


def _translate(error: ValidationError) -> Iterator[Finding]:
    path = list(error.absolute_path)
    keyword = str(error.validator)
    # jsonschema types these as `Any | Unset`; they are always set on errors from iter_errors.
    value: Any = error.validator_value
    instance: Any = error.instance
    schema: Any = error.schema
    if keyword == "required":
        yield from _missing_properties(path, value, instance)
    elif keyword == "additionalProperties":
        yield from _unknown_properties(path, set(schema.get("properties", {})), instance)
    else:
        message = _message(keyword, value, instance) or error.message
        yield Finding(ERROR, pointer(path), f"schema.{keyword}", message)


def _missing_properties(
    path: list[str | int], required: list[str], instance: Any
) -> Iterator[Finding]:
    present = instance if isinstance(instance, dict) else {}
    missing = [name for name in required if name not in present]
    return _per_property(
        path,
        missing,
        ERROR,
        "schema.required",
        lambda name: (
            f"required property {name!r} is missing"
            + _written_as(name, [key for key in present if key not in required])
        ),
    )


def _written_as(name: str, others: list[Any]) -> str:
    """` ('x' is written: is it meant to be it?)` for a property close to the missing NAME."""
    close = closest(name, others)
    return f" ({close!r} is written: is it meant to be it?)" if close is not None else ""


def _unknown_properties(
    path: list[str | int], known: set[str], instance: dict[str, Any]
) -> Iterator[Finding]:
    unknown = [name for name in instance if name not in known]
    # `$schema` is an editor's pointer to this schema, not a property worth suggesting.
    listed = ", ".join(sorted(name for name in known if not name.startswith("$")))
    return _per_property(
        path,
        unknown,
        WARNING,
        "unknown-property",
        lambda name: (
            f"unknown property {name!r} is ignored by the desktop client"
            f"{did_you_mean(name, known)}; known properties here: {listed}"
        ),
    )


def _per_property(
    path: list[str | int],
    names: Iterable[str],
    severity: Severity,
    rule: str,
    says: Callable[[str], str],
) -> Iterator[Finding]:
    """A finding RULE for each property in NAMES of the object at PATH, saying SAYS(name)."""
    for name in names:
        yield Finding(severity, pointer([*path, name]), rule, says(name))


def _message(keyword: str, value: Any, instance: Any) -> str | None:
    """The plain message for a failed KEYWORD (schema value VALUE, offending INSTANCE), or None
    for a keyword without one (jsonschema's own message is used)."""
    if keyword == "type":
        wanted = [value] if isinstance(value, str) else list(value)
        names = " or ".join(TYPE_NAMES.get(t, t) for t in wanted)
        return f"must be {names}, not {TYPE_NAMES[json_type(instance)]}"
    if keyword == "minLength":
        if value == 1:
            return "must not be empty"
        return (
            f"{_describe(instance)} is {len(instance)} characters long; "
            f"at least {value} are required"
        )
    if keyword == "minItems":
        return f"must list at least {value} element{'s' if value != 1 else ''}"
    if keyword == "uniqueItems":
        repeats = sorted({_describe(v) for v in instance if instance.count(v) > 1})
        return f"lists {', '.join(repeats)} more than once; list each value once"
    if keyword == "enum":
        allowed = ", ".join(str(v) for v in value)
        return f"{_describe(instance)} is not allowed{did_you_mean(instance, value)}; allowed values: {allowed}"
    if keyword == "pattern":
        wanted_form = _PATTERN_NAMES.get(value, f"a string matching {value}")
        return f"{_describe(instance)} is not {wanted_form}"
    return None
