"""A body's JSON (client/jsonparse.py): NUL escapes, lone surrogates, big integers, a byte
order mark, truncated bodies."""

from __future__ import annotations

from typing import Any

import pytest

from devportal.http import parse_json

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
    from devportal.http import RetryableError

    with pytest.raises(RetryableError, match=r"truncated JSON \(11 bytes\)"):
        parse_json(rb'{"a": "\u00', 200)
    with pytest.raises(RetryableError, match="truncated JSON"):
        parse_json(rb'{"a": "\u0000', 200)


def test_parse_json_skips_a_utf8_byte_order_mark() -> None:
    assert parse_json(b'\xef\xbb\xbf{"data": [1]}', 200) == ({"data": [1]}, 0, 0)
    assert parse_json(b'\xef\xbb\xbf{"big": 123456789012345678901234567890}', 200)[0] == {
        "big": 123456789012345678901234567890
    }
