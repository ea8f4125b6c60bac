"""A webhook receiver for the alert tests: a real HTTP server on 127.0.0.1 that keeps every
JSON body posted to it and answers as the test says (`status`), or holds each post unanswered
until the test ends (`hang`): what a Slack or Discord incoming webhook is to devportal."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# the secret part of a webhook's URL, as Slack's `/services/T.../B.../<secret>`
HOOK_PATH = "/services/T0001/B0001/webhook-secret-Zq81xk"


class Receiver:
    def __init__(self, status: int = 200, hang: bool = False) -> None:
        self.status = status
        self.hang = hang
        self.posts: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.raw: list[bytes] = []
        self._changed = threading.Condition()
        self._release = threading.Event()
        handler = type("Handler", (_Handler,), {"receiver": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{HOOK_PATH}"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def texts(self) -> list[str]:
        return [str(body.get("content")) for body in self.posts]

    def wait_for(self, n: int, timeout_s: float = 60) -> None:
        """Until N posts have arrived (a limit on a hang, not a measure)."""
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.posts) >= n, timeout_s), self.posts

    def got(self, body: bytes, path: str) -> None:
        with self._changed:
            self.raw.append(body)
            self.paths.append(path)
            self.posts.append(json.loads(body))
            self._changed.notify_all()

    def start(self) -> Receiver:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    receiver: Receiver

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.receiver.got(body, self.path)
        if self.receiver.hang:
            self.receiver._release.wait(120)  # until the test ends: the client times out first
            return
        answer = b"ok" if self.receiver.status < 300 else b"internal_error"
        self.send_response(self.receiver.status)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


@contextmanager
def receiving(status: int = 200, hang: bool = False) -> Iterator[Receiver]:
    receiver = Receiver(status, hang).start()
    try:
        yield receiver
    finally:
        receiver.stop()


@contextmanager
def refusing() -> Iterator[str]:
    """The URL of a webhook whose port refuses connections: a socket bound on 127.0.0.1 that
    never listens (held until the block ends, so no other server can take the port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}{HOOK_PATH}"
    finally:
        sock.close()
