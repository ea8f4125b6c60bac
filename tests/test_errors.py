"""Text that reaches messages and logs (devportal/errors.py): the token, bearer credentials and
terminal controls scrubbed out."""

from __future__ import annotations


def test_scrub_takes_out_the_token_any_bearer_credential_and_terminal_controls() -> None:
    from devportal.errors import register_secret, scrub, server_text

    token = "scrub-test-token-" + "z" * 16
    register_secret(token)
    register_secret("short")  # too short to tell from words: never looked for
    assert scrub(f"got {token}!") == "got [redacted]!"
    assert scrub(f"got {token[:9]}\x1b[0m{token[9:]}") == "got [redacted]"  # split by an escape
    assert (
        scrub('{"authorization": "Bearer eyJ0.e30.x-y"}')
        == '{"authorization": "Bearer [redacted]"}'
    )
    assert scrub("bearer%20abc123 and BEARER  q") == "Bearer [redacted] and Bearer [redacted]"
    assert scrub("Missing bearer token. Bearer header required") == (
        "Missing bearer token. Bearer header required"
    )
    assert scrub("a short story") == "a short story"
    assert scrub("\x1b]0;title\x07\x1b[2Jred\x9b1m\x00 \u202eok\r\nnext") == "red ok\nnext"
    assert server_text("line one\r\n\tline two\u2028three", 14) == "line one li..."
    assert scrub(scrub(f"Bearer {token}")) == "Bearer [redacted]"
