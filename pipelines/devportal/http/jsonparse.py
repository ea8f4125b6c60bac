"""A body's JSON as the API means it: a UTF-8 byte order mark skipped, integers beyond 64 bits
kept exact, lone surrogates and NUL replaced by U+FFFD and counted; a body that is not JSON is
a RetryableError. Also the server's own message from an error's body, scrubbed."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
import requests

from devportal.base.coercion import replace_nul_escapes
from devportal.base.errors import server_text
from devportal.http.failures import RetryableError

_BOM = b"\xef\xbb\xbf"
_LONG_NUMBER = re.compile(rb"\d{20,}")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_NUL = b"\\u0000"


def parse_json(content: bytes, status: int) -> tuple[Any, int, int]:
    """A body's JSON and how many lone surrogates and NUL characters it held (each replaced by
    U+FFFD); RetryableError when it is not JSON.

    orjson (fast) reads integers beyond 64 bits as floats, silently rounding them, and refuses
    `\\udXXX` escapes that pair with nothing (valid JSON, invalid Unicode). A body with a run of
    20 or more digits or a surrogate escape is read by the standard library instead: big
    integers stay exact, and each lone surrogate becomes U+FFFD (no UTF-8 text can hold it),
    counted so the run reports it. NUL (U+0000) is valid in JSON and DuckDB text but PostgreSQL
    text cannot hold it (the whole load would fail, every run again), so it becomes U+FFFD on
    every engine alike, counted too. JSON carries NUL only as the escape `\\u0000` (a raw
    control byte is invalid JSON), so the escape is replaced in the bytes before parsing, and
    only in a body that holds one. A page is never retried for a value it does hold.

    A UTF-8 byte order mark before the JSON is skipped: RFC 8259 lets a reader ignore it, and
    some servers (a PHP file saved "with BOM") send one before every answer.
    """
    if content.startswith(_BOM):
        content = content[len(_BOM) :]
    nul = 0
    if _NUL in content:
        content, nul = replace_nul_escapes(content)
    if _LONG_NUMBER.search(content) is not None or _SURROGATE_ESCAPE.search(content) is not None:
        try:
            body = json.loads(content, parse_constant=_not_json)
        except (ValueError, RecursionError):
            pass
        else:
            body, surrogates = _replace_lone_surrogates(body)
            return body, surrogates, nul
    try:
        return orjson.loads(content), 0, nul
    except orjson.JSONDecodeError as err:
        kind = "truncated JSON" if content[:1] in (b"{", b"[") else "a body that is not JSON"
        raise RetryableError(
            f"{status} with {kind} ({len(content)} bytes)", body=hash(content)
        ) from err


def _not_json(constant: str) -> Any:
    """NaN and Infinity: the standard library reads them, JSON (and orjson) does not."""
    raise ValueError(f"{constant} is not JSON")


def _replace_lone_surrogates(body: Any) -> tuple[Any, int]:
    """`body` with every unpaired surrogate in keys and strings replaced by U+FFFD (iterative)."""
    replaced = 0

    def fix(text: str) -> str:
        nonlocal replaced
        fixed, n = _LONE_SURROGATE.subn("\ufffd", text)
        replaced += n
        return fixed

    root = [body]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        value = parent[key]
        if isinstance(value, str):
            parent[key] = fix(value)
        elif isinstance(value, list):
            stack.extend((value, i) for i in range(len(value)))
        elif isinstance(value, dict):
            if any(_LONE_SURROGATE.search(k) for k in value):
                value = {fix(k): v for k, v in value.items()}
                parent[key] = value
            stack.extend((value, k) for k in value)
    return root[0], replaced


def error_message(resp: requests.Response, content: bytes) -> str:
    """The server's own `message` (and first field error) if it sent JSON, else the reason;
    scrubbed (`errors.server_text`): a framework that echoes the request's headers in a
    validation error would otherwise put the token in the message, and so in cron mail."""
    reason = server_text(resp.reason or f"HTTP {resp.status_code}", 100)
    try:
        body = orjson.loads(content[len(_BOM) :] if content.startswith(_BOM) else content)
    except orjson.JSONDecodeError:
        return reason
    if not isinstance(body, dict):
        return reason
    message = str(body.get("message") or resp.reason or "")
    errors = body.get("errors")
    if isinstance(errors, dict) and errors:
        name, problems = next(iter(errors.items()))
        detail = problems[0] if isinstance(problems, list) and problems else problems
        message = f"{message} ({name}: {detail})" if message else f"{name}: {detail}"
    return server_text(message) or reason
