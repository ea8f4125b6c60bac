"""A body's JSON (http/jsonparse.py): NUL escapes, lone surrogates, big integers, a byte
order mark, truncated bodies; the server's own message from an error's body."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from devportal.http.failures import RetryableError
from devportal.http.jsonparse import error_message, parse_json

# -- NUL (U+0000): valid JSON, but no PostgreSQL text can hold it ---------------------------------


@pytest.mark.parametrize(
    ("content", "parsed", "nul"),
    [
        (rb'{"a\u0000b": "x\u0000y"}', {"a\ufffdb": "x\ufffdy"}, 2),  # in keys and values
        (rb'["\u0000\u0000"]', ["\ufffd\ufffd"], 2),
        (rb'["\\u0000"]', ["\\u0000"], 0),  # an escaped backslash, then the text u0000
        (rb'["\\\u0000"]', ["\\\ufffd"], 1),  # an escaped backslash, then the escape
        (rb'["\\\\u0000"]', ["\\\\u0000"], 0),
        (rb'["\\\\\u0000"]', ["\\\\\ufffd"], 1),
        (rb'["a\u0000", "\\u0000", "b\\\u0000"]', ["a\ufffd", "\\u0000", "b\\\ufffd"], 2),
        (rb'{"k": "\u00001"}', {"k": "\ufffd1"}, 1),  # the escape ends after four digits
        (rb'["\u00000000"]', ["\ufffd0000"], 1),
        (rb'["\u000a", "\u0001", "u0000"]', ["\n", "\x01", "u0000"], 0),  # other escapes stay
    ],
)
def test_parse_json_replaces_nul_escapes_and_counts_them(
    content: bytes, parsed: Any, nul: int
) -> None:
    assert parse_json(content, 200) == (parsed, 0, nul)


def test_parse_json_counts_nul_beside_lone_surrogates_and_big_integers() -> None:
    content = rb'{"big": 123456789012345678901234567890, "s": "\ud800\u0000", "\u0000": "\udc00"}'
    body, surrogates, nul = parse_json(content, 200)
    assert body == {"big": 123456789012345678901234567890, "s": "\ufffd\ufffd", "\ufffd": "\ufffd"}
    assert (surrogates, nul) == (2, 2)


def test_parse_json_leaves_a_body_without_nul_as_it_was() -> None:
    assert parse_json(rb'{"a": "\\u0000 and \u00e9", "n": [1, 2.5, null]}', 200) == (
        {"a": "\\u0000 and \u00e9", "n": [1, 2.5, None]},
        0,
        0,
    )


def test_a_truncated_body_with_a_nul_escape_is_still_not_json() -> None:
    with pytest.raises(RetryableError, match=r"truncated JSON \(11 bytes\)"):
        parse_json(rb'{"a": "\u00', 200)
    with pytest.raises(RetryableError, match="truncated JSON"):
        parse_json(rb'{"a": "\u0000', 200)


def test_parse_json_skips_a_utf8_byte_order_mark() -> None:
    assert parse_json(b'\xef\xbb\xbf{"data": [1]}', 200) == ({"data": [1]}, 0, 0)
    assert parse_json(b'\xef\xbb\xbf{"big": 123456789012345678901234567890}', 200)[0] == {
        "big": 123456789012345678901234567890
    }


def test_a_body_that_is_not_json_is_retried_saying_so() -> None:
    with pytest.raises(RetryableError, match=r"^502 with a body that is not JSON \(5 bytes\)$"):
        parse_json(b"hello", 502)
    # NaN is the standard library's, not JSON's: refused on the exact path too
    with pytest.raises(RetryableError, match=r"\(38 bytes\)"):
        parse_json(b'{"a": NaN, "b": 123456789012345678901}', 200)


def test_a_lone_surrogate_is_replaced_and_counted_a_pair_is_kept() -> None:
    assert parse_json(rb'["\ud83d", {"\udc00k": 1}]', 200) == (["\ufffd", {"\ufffdk": 1}], 2, 0)
    assert parse_json(rb'["\ud83d\ude00"]', 200) == (["\U0001f600"], 0, 0)


def test_integers_beyond_64_bits_stay_exact_beside_floats() -> None:
    body, _, _ = parse_json(b"[12345678901234567890123, 1.5, -98765432109876543210]", 200)
    assert body == [12345678901234567890123, 1.5, -98765432109876543210]
    assert all(type(v) is t for v, t in zip(body, (int, float, int), strict=True))


# -- error_message: the server's own words for an error -----------------------------------------


def response(status: int, reason: str | None) -> requests.Response:
    resp = requests.Response()
    resp.status_code, resp.reason = status, reason  # type: ignore[assignment]
    return resp


@pytest.mark.parametrize(
    ("status", "reason", "content", "said"),
    [
        (
            422,
            "Unprocessable Content",
            b'{"message": "The given data was invalid.", "errors": {"per_page": ["at most 200"], '
            b'"page": ["a number"]}}',
            "The given data was invalid. (per_page: at most 200)",  # the first field error
        ),
        (
            422,
            "Unprocessable",
            b'{"errors": {"page": "not a number"}}',
            "Unprocessable (page: not a number)",
        ),
        (500, "Server Error", b"<html>oops</html>", "Server Error"),  # not JSON: the reason
        (500, None, b"", "HTTP 500"),
        (400, "", b"[1, 2]", "HTTP 400"),  # JSON, but no object
        (400, "Bad\nRequest", b'{"message": ""}', "Bad Request"),  # on one line
        (
            401,
            "Unauthorized",
            b'\xef\xbb\xbf{"message": "token Bearer abcdefghijklmnopqrstuvwxyz1234 is not valid"}',
            "token Bearer [redacted] is not valid",  # a BOM skipped, an echoed token scrubbed
        ),
    ],
)
def test_an_errors_message_is_the_servers_own_scrubbed(
    status: int, reason: str | None, content: bytes, said: str
) -> None:
    assert error_message(response(status, reason), content) == said
