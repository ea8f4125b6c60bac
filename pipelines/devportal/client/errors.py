"""The client's own exceptions: `RetryableError`, a failure another attempt may fix, and
`NotFound`; every other failure is a `devportal.errors.ApiError` with its one-line cause."""

from __future__ import annotations

from devportal.errors import ApiError


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


class NotFound(ApiError):
    """404: the resource does not exist (callers decide whether that is a failure)."""
