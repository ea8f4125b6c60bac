"""The client's own exception `RetryableError`, a failure another attempt may fix (it never
leaves the client); `NotFound` (404) and every other failure are `devportal.errors` classes
(`NotFound` is re-exported here)."""

from __future__ import annotations

from devportal.errors import NotFound as NotFound


class RetryableError(Exception):
    """A transient failure worth another attempt; `retry_after` is the server's own hint.

    `timed_out`: no complete answer in time, a sign of an overloaded server (the concurrency
    controller cuts on it, not on a connection error). `body`: for a complete answer that is
    not JSON, a fingerprint of it: the same body twice in a row is not worth a third attempt."""

    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        timed_out: bool = False,
        body: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.timed_out = timed_out
        self.body = body
