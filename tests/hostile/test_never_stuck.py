"""Never wrong, never stuck, nothing leaked: the HTTP layer against answers that cannot change.

Through the real `devportal sync` against the hostile server: paging that the wrapper cannot
justify is refused at the page that shows it (an absurd `last_page`, a server ignoring `page`,
a `next_page_url` chain without end), a body that decodes past its cap is refused without
being held, a server that quotes the token or sends terminal escapes back never gets either
onto the user's screen, credentials in `base_url` are refused before any request, and answers
that a retry cannot fix are not retried (nor met with "try again later"). Each test checks the
exit code, the one-line message, how many requests the server saw, and the warehouse.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FAST_RETRY, rows_if_loaded, warehouse_of
from tests.hostile.conftest import CliResult, token_env
from tests.hostile.server import SUBSCRIPTIONS, TOKEN, Answer, HostileApi, Request

Cli = Callable[..., CliResult]
Args = Callable[..., list[str]]
REPO = Path(__file__).resolve().parents[2]
CONTROLS = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]]


def row(i: int) -> dict[str, Any]:
    return {"id": i, "service_id": 500 + i, "status": "active", "expires_at": "2027-01-01 10:00:00"}


def refusal(r: CliResult, code: int = 1, may_change: bool = False) -> str:
    """The one-line error of a refused run: exit CODE, one line, no traceback, no secret, no
    terminal control character, and no "try again later" for an answer that cannot change
    (unless it MAY_CHANGE)."""
    assert r.code == code, (r.code, r.out, r.err)
    line = r.err.strip()
    assert line.startswith("devportal: error: "), r.err
    assert "\n" not in line and "Traceback" not in r.err, r.err
    assert TOKEN not in r.err + r.out and "Bearer h" not in r.err + r.out
    assert not any(c in line for c in CONTROLS), repr(line)
    assert may_change or "try again later" not in line, line
    return line


def refused_and_nothing_loaded(
    api: HostileApi, devportal: Cli, subs: list[str], hits: int | None = None, **settings: Any
) -> str:
    """The refusal's one line of a sync of SUBS (max_attempts 8, and SETTINGS), which loaded
    nothing, after HITS requests for subscriptions (when given)."""
    line = refusal(devportal(*subs, env=token_env(api, max_attempts=8, **settings)))
    if hits is not None:
        assert api.hits(SUBSCRIPTIONS) == hits
    assert loaded(warehouse_of(subs)) == []
    return line


def loads_all(api: HostileApi, result: CliResult, subs: list[str]) -> None:
    """The run succeeded and its warehouse holds exactly the subscriptions the server sent."""
    assert result.code == 0, result.err
    assert loaded(warehouse_of(subs)) == sent(api.subscriptions)


def loaded(warehouse: Path) -> list[tuple[Any, ...]]:
    """(id, service_id, status) of the subscriptions in the warehouse; [] when none were."""
    return rows_if_loaded(
        warehouse, "SELECT id, service_id, status FROM devportal.subscriptions ORDER BY id"
    )


def sent(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["service_id"], r["status"]) for r in rows)


@pytest.fixture
def subs(sync_args: Args) -> list[str]:
    return sync_args("--resources", "subscriptions", "--progress", "off")


# -- 7. paging bounded by what the wrapper proves -------------------------------------------------


@pytest.mark.parametrize("per_page", [3, "3", None])  # None: not sent, page 1's rows tell it
def test_an_absurd_last_page_is_refused_at_page_one(
    api: HostileApi, devportal: Cli, subs: list[str], per_page: Any
) -> None:
    api.subscriptions = [row(i) for i in range(1, 11)]

    def absurd(req: Request) -> Answer:
        body = api.page(req, api.subscriptions)
        body.update(last_page=50_000, per_page=per_page)
        if per_page is None:
            del body["per_page"]
        return Answer(200, body)

    api.route(SUBSCRIPTIONS, absurd)
    # one request: not one page more, not one retry, not one re-read
    line = refused_and_nothing_loaded(api, devportal, subs, hits=1)
    assert "page 1: last_page is 50000, but total 10 at per_page 3 makes 4 pages" in line


@pytest.mark.parametrize("echo", ["page one", "the page asked for", "nothing"])
def test_a_server_that_ignores_page_is_refused_within_a_few_requests(
    api: HostileApi, devportal: Cli, subs: list[str], echo: str
) -> None:
    """Page 1 again for every page (a cache that ignores the query): whatever `current_page`
    it reports, the second page shows it, long before 50 pages (or three re-reads) were asked."""
    api.subscriptions = [row(i) for i in range(1, 151)]  # 50 pages of 3

    def page_one_always(req: Request) -> Answer:
        body = api.page(Request(req.path, {}, req.headers, req.base_url), api.subscriptions)
        if echo == "the page asked for":
            body["current_page"] = int(req.query.get("page", "1"))
        elif echo == "nothing":
            del body["current_page"]
        return Answer(200, body)

    api.route(SUBSCRIPTIONS, page_one_always)
    # two requests in flight, pinned: the pages read ahead of page 2 are bounded by the window,
    # not by how fast this machine happens to check page 2 (adaptive, the window grows with
    # every clean answer while the check waits for a core)
    line = refused_and_nothing_loaded(api, devportal, subs, workers=2)
    if echo == "page one":
        assert "page 2: the API answered with current_page 1" in line
    else:
        assert "page 2: it holds the same rows as page 1" in line
    assert "ignores `page`" in line
    assert api.hits(SUBSCRIPTIONS) < 50  # the pages fetched ahead of page 2, at most


def test_a_last_page_without_total_ends_at_the_first_empty_page(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    """No `total` to check `last_page` against: the first empty page before it is refused."""
    api.subscriptions = [row(i) for i in range(1, 11)]  # 4 real pages

    def overstated(req: Request) -> Answer:
        body = api.page(req, api.subscriptions)
        del body["total"]
        body.update(last_page=50_000, next_page_url=f"{req.base_url}{req.path}?page=9")
        return Answer(200, body)

    api.route(SUBSCRIPTIONS, overstated)
    line = refused_and_nothing_loaded(api, devportal, subs)
    assert "page 5: it is empty, but last_page is 50000" in line
    # the pages fetched ahead of page 5: at most twice the most requests in flight (64)
    assert api.hits(SUBSCRIPTIONS) <= 5 + 2 * 64


@pytest.mark.parametrize(
    ("step", "refused"),
    [
        pytest.param(0, "page 2: it holds the same rows as page 1", id="repeating"),
        pytest.param(1, "page 2: 2 of its 3 rows were on page 1", id="sliding"),
    ],
)
def test_a_next_page_chain_over_rows_already_read_is_refused(
    api: HostileApi, devportal: Cli, subs: list[str], step: int, refused: str
) -> None:
    """Laravel's simple paginator (no total, no last_page) whose next link never ends, over
    the same three rows on every page (step 0) or moving on by one row only (step 1: rows
    n..n+2 on page n)."""

    def endless(req: Request) -> Answer:
        number = int(req.query.get("page", "1"))
        first = 1 + step * (number - 1)
        body = {
            "current_page": number,
            "data": [row(i) for i in range(first, first + 3)],
            "next_page_url": f"{req.base_url}{req.path}?page={number + 1}",
            "per_page": 3,
        }
        return Answer(200, body)

    api.route(SUBSCRIPTIONS, endless)
    line = refused_and_nothing_loaded(api, devportal, subs, hits=2)
    assert refused in line


def linking(api: HostileApi, link: Callable[[Request, int], str]) -> Callable[[Request], Answer]:
    """The server's own pages of `api.subscriptions`, without `last_page`, each page (numbered
    `number`) linking `link(req, number)` as its next page."""

    def answer(req: Request) -> Answer:
        body = api.page(req, api.subscriptions)
        del body["last_page"]
        body["next_page_url"] = link(req, body["current_page"])
        return Answer(200, body)

    return answer


def test_a_next_page_chain_past_what_total_proves_is_refused(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    """No `last_page`, but `total` 7 at 3 a page is 3 pages: a 3rd page linking a 4th is wrong."""
    api.subscriptions = [row(i) for i in range(1, 8)]
    always_more = linking(api, lambda req, number: f"{req.base_url}{req.path}?page={number + 1}")
    api.route(SUBSCRIPTIONS, always_more)
    line = refused_and_nothing_loaded(api, devportal, subs, hits=3)
    assert "page 3: it links a next page, but total 7 at per_page 3 makes 3 pages" in line


def test_a_next_page_chain_without_a_total_still_loads_when_it_ends(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    """The guards refuse only what contradicts itself: a plain simple paginator loads."""
    api.subscriptions = [row(i) for i in range(1, 11)]
    api.simple_paginator = True
    loads_all(api, devportal(*subs, env=token_env(api)), subs)
    assert api.hits(SUBSCRIPTIONS) == 4


# -- 14. answers a retry cannot change: a BOM, an object `data`, the same garbage twice ---------


def test_json_with_a_byte_order_mark_loads_without_a_retry(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    api.subscriptions = [row(i) for i in range(1, 8)]
    api.route(
        SUBSCRIPTIONS,
        lambda req: Answer(
            200, b"\xef\xbb\xbf" + json.dumps(api.page(req, api.subscriptions)).encode()
        ),
    )
    loads_all(api, devportal(*subs, env=token_env(api, max_attempts=8)), subs)
    assert api.hits(SUBSCRIPTIONS) == 3  # one request per page: nothing retried


def keyed(rows: list[dict[str, Any]], positions: list[int]) -> dict[str, Any]:
    return {str(p): r for p, r in zip(positions, rows, strict=True)}


def test_data_keyed_by_position_with_rows_missing_is_refused_at_once(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    """{"0": {...}, "2": {...}}: a Laravel collection filtered after paging, without values().
    Its `total` still counts the row filtered out: the list can never add up."""
    api.subscriptions = [row(1), row(2), row(3)]

    def filtered(req: Request) -> Answer:
        body = api.page(req, api.subscriptions)
        body["data"] = keyed([row(1), row(3)], [0, 2])
        return Answer(200, body)

    api.route(SUBSCRIPTIONS, filtered)
    line = refused_and_nothing_loaded(api, devportal, subs, hits=1)
    assert "`data` is an object keyed by row position (0, 2)" in line
    assert "1 position(s) missing" in line and "values()" in line


@pytest.mark.parametrize("simple", [False, True])
def test_data_keyed_by_position_is_read_in_position_order(
    api: HostileApi, devportal: Cli, subs: list[str], simple: bool
) -> None:
    """Keys out of order but none missing (with a total), or positions missing where no total
    claims them (the simple paginator): the rows are all the page holds, and load."""
    api.subscriptions = [row(i) for i in range(1, 6)]
    api.simple_paginator = simple

    def as_object(req: Request) -> Answer:
        body = api.page(req, api.subscriptions)
        rows = body["data"]
        if simple:  # keys 0, 2, 4: positions 1 and 3 filtered out, and no total counts them
            body["data"] = keyed(rows, [0, 2, 4][: len(rows)])
        else:
            body["data"] = dict(reversed(list(keyed(rows, list(range(len(rows)))).items())))
        return Answer(200, body)

    api.route(SUBSCRIPTIONS, as_object)
    loads_all(api, devportal(*subs, env=token_env(api, max_attempts=8)), subs)
    assert api.hits(SUBSCRIPTIONS) == 2


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([row(1)], "expected a JSON object (a page of the list), got a JSON array"),
        ({"data": {"rows": [row(1)]}}, "`data` is an object keyed by 'rows', not a list of rows"),
        ({"data": "none", "total": 1}, "`data` is a string, not a list of rows"),
        ({"data": [row(1), 7], "total": 2}, "`data` holds 1 items that are not objects"),
    ],
)
def test_a_page_of_the_wrong_shape_is_refused_without_a_retry(
    api: HostileApi, devportal: Cli, subs: list[str], body: Any, expected: str
) -> None:
    api.route(SUBSCRIPTIONS, lambda req: Answer(200, body))
    line = refused_and_nothing_loaded(api, devportal, subs, hits=1)
    assert expected in line


def test_a_web_page_instead_of_json_is_retried_then_points_at_base_url(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    """A proxy's error page may go away (retried, within the budget); once the attempts are
    spent, the line says what to check first."""
    page = b"<html><body>Welcome to nginx!</body></html>"
    api.route(SUBSCRIPTIONS, lambda req: Answer(200, page, {"Content-Type": "text/html"}))
    line = refusal(
        devportal(*subs, env=token_env(api, max_attempts=3, **FAST_RETRY)), may_change=True
    )
    assert "still failing after 3 attempts" in line
    assert "a body that is not JSON" in line and "check that base_url" in line
    assert api.hits(SUBSCRIPTIONS) == 3


def test_bodies_that_are_not_json_and_change_are_retried(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    """A different broken body each time (a flaky server): worth the next attempt, and the one
    after that loads."""
    api.subscriptions = [row(1)]
    answers = iter([b'{"current_page": 1, "da', b'{"current_page": 1, "data": [{"id"'])

    def flaky(req: Request) -> Answer:
        broken = next(answers, None)
        return Answer(200, broken) if broken else Answer(200, api.page(req, api.subscriptions))

    api.route(SUBSCRIPTIONS, flaky)
    loads_all(api, devportal(*subs, env=token_env(api, max_attempts=8, **FAST_RETRY)), subs)
    assert api.hits(SUBSCRIPTIONS) == 3


# -- 8. a cap on one decoded body, and memory bounded whatever the server sends ------------------


def compressed(data_mb: int, codings: str) -> bytes:
    """A Laravel page whose `data` is followed by DATA_MB MiB of padding, in CODINGS (as the
    Content-Encoding header lists them: applied in that order), built without holding it."""
    head = b'{"current_page": 1, "data": [], "total": 0, "per_page": 3, "pad": "'
    block = b" " * (1 << 20)
    body = b""
    for coding in [c.strip() for c in codings.split(",")]:
        wbits = 16 + zlib.MAX_WBITS if coding == "gzip" else zlib.MAX_WBITS
        z = zlib.compressobj(9, zlib.DEFLATED, wbits)
        if not body:
            parts = [z.compress(head), *(z.compress(block) for _ in range(data_mb))]
            body = b"".join([*parts, z.compress(b'"}'), z.flush()])
        else:
            body = z.compress(body) + z.flush()
    return body


@cache
def bomb(data_mb: int, codings: str) -> bytes:
    return compressed(data_mb, codings)


@pytest.mark.parametrize("codings", ["gzip", "deflate", "gzip, gzip"])
def test_a_compressed_body_expanding_past_the_cap_is_refused_in_one_line(
    api: HostileApi, devportal: Cli, subs: list[str], codings: str
) -> None:
    body = bomb(64, codings)
    assert len(body) < 1024 * 1024  # small on the wire
    api.route(SUBSCRIPTIONS, lambda req: Answer(200, body, {"Content-Encoding": codings}))
    line = refused_and_nothing_loaded(api, devportal, subs, hits=1)  # refused, not retried
    assert "the answer is larger once decoded, more than 16 MiB" in line
    assert "raise max_body_mb" in line


@pytest.mark.parametrize("codings", ["gzip", "deflate", "raw deflate", "gzip, gzip", "identity"])
def test_compressed_pages_load_exactly(
    api: HostileApi, devportal: Cli, subs: list[str], codings: str
) -> None:
    api.subscriptions = [row(i) for i in range(1, 11)]

    def encoded(req: Request) -> Answer:
        data = json.dumps(api.page(req, api.subscriptions)).encode()
        if codings == "raw deflate":  # "deflate" without zlib's header, as some servers send
            z = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
            return Answer(200, z.compress(data) + z.flush(), {"Content-Encoding": "deflate"})
        for coding in [c.strip() for c in codings.split(",")]:
            if coding == "gzip":
                data = gzip.compress(data) + gzip.compress(b"")  # two members, the last empty
            elif coding == "deflate":
                data = zlib.compress(data)
        return Answer(200, data, {"Content-Encoding": codings})

    api.route(SUBSCRIPTIONS, encoded)
    loads_all(api, devportal(*subs, env=token_env(api, max_attempts=8)), subs)
    assert api.hits(SUBSCRIPTIONS) == 4


def test_max_body_mb_sets_the_cap_and_a_declared_length_past_it_is_refused_unread(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    api.subscriptions = [{**row(i), "note": "x" * 3000} for i in range(1, 4)]  # ~9 KB
    line = refusal(devportal(*subs, env=token_env(api, max_body_mb=0.005, max_attempts=8)))
    assert "declares 9" in line and "(Content-Length) once decoded, more than 5" in line
    assert "(max_body_mb)" in line
    assert api.hits(SUBSCRIPTIONS) == 1
    loads_all(api, devportal(*subs, env=token_env(api, max_body_mb=0.05)), subs)


def test_an_encoding_not_asked_for_is_refused(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    seen: list[str] = []

    def brotli(req: Request) -> Answer:
        seen.append(req.headers.get("accept-encoding", ""))
        return Answer(200, b"\x1b\x03\x00\xf8\xa5", {"Content-Encoding": "br"})

    api.route(SUBSCRIPTIONS, brotli)
    line = refusal(devportal(*subs, env=token_env(api, max_attempts=8)))
    assert "encoded as 'br', which devportal did not ask for (it asks for gzip, deflate)" in line
    assert seen == ["gzip, deflate"]


def wait_with_peak_rss(proc: subprocess.Popen[bytes]) -> tuple[int, int]:
    """PROC's exit code and its peak resident memory in bytes, as the kernel counted them."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss * 1024  # Linux counts kilobytes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KB: Linux")
def test_bombs_on_every_page_keep_a_real_sync_s_memory_bounded(
    api: HostileApi, tmp_path: Path
) -> None:
    """`python -m devportal sync` in a process of its own, once against a plain list and once
    against the same list whose pages after the first are gzip bombs (512 MiB each once
    decoded, half a megabyte on the wire), fetched concurrently: refused in one line, and its
    peak memory stays within a few caps of the plain run's, where holding one bomb would take
    half a gigabyte more."""
    api.subscriptions = [row(i) for i in range(1, 31)]  # 10 pages

    def run(name: str) -> tuple[int, int, str]:
        err = tmp_path / f"{name}.err"
        with err.open("wb") as stderr:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "devportal",
                    "sync",
                    "--base-url",
                    api.base_url,
                    "--warehouse",
                    str(tmp_path / name / "w.duckdb"),
                    "--no-models",
                    "--resources",
                    "subscriptions",
                    "--progress",
                    "off",
                ],
                cwd=REPO,
                env={**os.environ, **token_env(api, max_attempts=8)},
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
            code, peak = wait_with_peak_rss(proc)
        return code, peak, err.read_text()

    code, plain, err = run("plain")
    assert code == 0, err
    hits_before = api.hits(SUBSCRIPTIONS)
    body = bomb(512, "gzip")

    def bombs(req: Request) -> Answer:
        if req.query.get("page", "1") == "1":
            return Answer(200, api.page(req, api.subscriptions))
        return Answer(200, body, {"Content-Encoding": "gzip"})

    api.route(SUBSCRIPTIONS, bombs)
    code, peak, err = run("bombs")
    assert code == 1, err
    line = err.strip()
    assert line.startswith("devportal: error: ") and "\n" not in line, err
    assert "page=2: the answer is larger once decoded, more than 16 MiB" in line
    assert api.hits(SUBSCRIPTIONS) - hits_before <= 10
    assert loaded(tmp_path / "bombs" / "w.duckdb") == []
    print(f"peak RSS: plain sync {plain / 2**20:.0f} MiB, against bombs {peak / 2**20:.0f} MiB")
    assert peak < plain + 64 * 2**20  # two bodies at the cap of 16 MiB, and change


# -- 9, 11. server text on the screen: no token, no Bearer, no terminal controls ----------------


@pytest.mark.parametrize("status", [422, 400, 409])
def test_an_error_body_quoting_the_token_never_shows_it(
    api: HostileApi, devportal: Cli, subs: list[str], status: int
) -> None:
    """Some frameworks echo the request's headers in a validation error."""

    def echo(req: Request) -> Answer:
        authorization = req.headers["authorization"]
        return Answer(
            status,
            {
                "message": f"Header Authorization: {authorization} is not accepted; "
                f"raw {TOKEN} and other Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig",
                "errors": {"authorization": [f"{authorization} is invalid"]},
            },
        )

    api.route(SUBSCRIPTIONS, echo)
    line = refusal(devportal(*subs, env=token_env(api, max_attempts=8)))
    assert "eyJhbGciOiJIUzI1NiJ9" not in line
    assert "Header Authorization: Bearer [redacted] is not accepted; raw [redacted]" in line
    assert "(authorization: Bearer [redacted] is invalid)" in line
    assert api.hits(SUBSCRIPTIONS) == 1


def test_terminal_control_sequences_in_a_server_message_are_removed(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    message = (
        "\x1b]0;pwned\x07\x1b[2J\x1b[31mNo\x1b[0m access\x9b1m for\x07 this\x00 app\r\n"
        "second line\u202e"
    )
    api.route(SUBSCRIPTIONS, lambda req: Answer(410, {"message": message}))
    line = refusal(devportal(*subs, env=token_env(api, max_attempts=8)))
    assert line.endswith(": No access for this app second line"), line


def test_a_page_url_quoting_the_token_is_scrubbed_from_messages_and_logs(
    api: HostileApi, devportal: Cli, subs: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A next_page_url that carries the token and an escape sequence: the retries' log lines
    and the final error show neither."""
    api.subscriptions = [row(i) for i in range(1, 5)]

    def leaky(req: Request) -> Answer:
        if req.query.get("page") == "2":
            return Answer(503, {"message": "down"})
        body = api.page(req, api.subscriptions)
        del body["last_page"]
        body["next_page_url"] = f"{req.base_url}{req.path}?page=2&t={TOKEN}&x=%1b\x1b[2J"
        return Answer(200, body)

    api.route(SUBSCRIPTIONS, leaky)
    caplog.set_level(logging.WARNING, logger="devportal")
    result = devportal(*subs, env=token_env(api, max_attempts=3, **FAST_RETRY))
    line = refusal(result, may_change=True)  # a 503 may pass
    assert "503 server error" in line and "t=[redacted]" in line
    retries = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert len(retries) == 2 and all("t=[redacted]&x=%1b in" in m for m in retries), retries
    assert not any(TOKEN in m or "\x1b" in m for m in retries)


def test_every_log_record_is_scrubbed_after_the_cli_starts(
    api: HostileApi, devportal: Cli, subs: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The last line of defence: whatever logger a library writes to (dlt's own handler is
    made later and does not propagate), its records lose the token, `Bearer ...` and escapes."""
    api.subscriptions = [row(1)]
    assert devportal(*subs, env=token_env(api)).code == 0  # the CLI ran: the client saw TOKEN
    caplog.set_level(logging.WARNING)
    logging.getLogger("dlt.some.module").warning("sent %s and Bearer %s\x1b[2J", TOKEN, "zzz123")
    messages = [r.getMessage() for r in caplog.records]
    assert "sent [redacted] and Bearer [redacted]" in messages


# -- 10. credentials in base_url ---------------------------------------------------------------


def test_credentials_in_base_url_are_refused_before_any_request(
    api: HostileApi, devportal: Cli, tmp_path: Path
) -> None:
    host = api.base_url.removeprefix("http://")
    wh = tmp_path / "w.duckdb"
    args = ["sync", "--base-url", f"http://alice:s3cr3t-pa55@{host}", "--warehouse", str(wh)]
    line = refusal(devportal(*args, "--no-models", env=token_env(api)), code=2)
    assert f"base_url for {host} holds a user name or password before '@'" in line
    assert "s3cr3t-pa55" not in line and "alice" not in line
    assert api.requests == []
    assert loaded(wh) == []


def test_a_netrc_entry_for_the_api_host_does_not_replace_the_token(
    api: HostileApi, devportal: Cli, subs: list[str], tmp_path: Path
) -> None:
    """requests would send ~/.netrc's credentials as Basic auth instead of the bearer token."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login alice password s3cr3t-pa55\n")
    netrc.chmod(0o600)
    api.subscriptions = [row(i) for i in range(1, 5)]
    loads_all(api, devportal(*subs, env={**token_env(api), "NETRC": str(netrc)}), subs)
    assert {r.headers["authorization"] for r in api.requests} == {f"Bearer {TOKEN}"}


def test_a_page_url_with_credentials_is_refused(
    api: HostileApi, devportal: Cli, subs: list[str]
) -> None:
    api.subscriptions = [row(i) for i in range(1, 5)]

    def with_credentials(req: Request, number: int) -> str:
        host = req.base_url.removeprefix("http://")
        return f"http://mallory:pw@{host}{req.path}?page=2"

    api.route(SUBSCRIPTIONS, linking(api, with_credentials))
    line = refusal(devportal(*subs, env=token_env(api, max_attempts=8)))
    assert "another origin" in line and "mallory" not in line and ":pw" not in line
    assert api.hits(SUBSCRIPTIONS) == 1
