"""The retry budget of one `get_json()`: the whole call takes at most `max_wait_s`, each
attempt min(`timeout_s`, what is left); a sleep that does not fit in what is left ends the
retries at once, and the budget records why (attempts, time, the last answer). A host that
never answered gets two quick attempts when it refuses the connection or its name is not
found. Also a `Retry-After` header read as seconds."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from datetime import UTC, datetime

from tenacity import RetryCallState

from devportal.http.failures import RetryableError
from devportal.settings.http import HttpSettings

# A host that never answered: attempts at most, and the pause between them (at most
# `backoff_max_s`), when the connection is refused or the host name is not found.
UNREACHED_ATTEMPTS = 2
UNREACHED_PAUSE_S = 1.0


def retry_after_seconds(header: str | None) -> float | None:
    if not header:
        return None
    header = header.strip()
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:  # HTTP-date form
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _secs(seconds: float) -> str:
    """Seconds for messages: 3600s, 12s, 1.5s, 0.05s."""
    return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.2g}s"


class Budget:
    """One `get_json()`: its deadline (`max_wait_s`), its attempts, the cap on each body it
    reads, and why it stopped."""

    def __init__(
        self, config: HttpSettings, body_cap: int, answered: Callable[[], bool] = lambda: True
    ) -> None:
        self.config = config
        self.body_cap = body_cap
        self.answered = answered  # whether the API's host has ever answered the client
        self.started = time.monotonic()
        self.deadline = self.started + config.max_wait_s
        self.attempts = 0
        self.why_stopped = ""
        # the retries stopped because nothing ever answered: `why_stopped` is the whole story
        self.unreachable = False

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def start_attempt(self) -> tuple[float, str]:
        """The next attempt's deadline: `timeout_s` from now or the budget's end, the earlier."""
        self.attempts += 1
        own = time.monotonic() + self.config.timeout_s
        if own <= self.deadline:
            return own, "timeout_s"
        return self.deadline, "what was left of max_wait_s"

    def stop(self, state: RetryCallState) -> bool:
        """Tenacity stop: attempts used up, or the next sleep does not fit in what is left.

        Records `why_stopped`: the last answer and what ended the retries, with the fix.
        """
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RetryableError) and exc.unreachable and not self.answered():
            # A refused connection or an unknown host name from a host that never answered:
            # a wrong base_url, or an API not started. One quick attempt more covers an API
            # (re)starting this very second; the whole budget (7 warnings over 15 s) would
            # only hide the one line that says which host:port. Once the host has answered,
            # a refusal is a restart and gets the full budget below.
            if state.attempt_number < min(UNREACHED_ATTEMPTS, self.config.max_attempts):
                return False
            tries = state.attempt_number
            self.why_stopped = (
                f"{exc} ({tries} attempt{'s' if tries != 1 else ''}): {exc.unreachable}"
            )
            self.unreachable = True
            return True
        budget = f"the {_secs(self.config.max_wait_s)} retry budget (max_wait_s)"
        later = "try again later or raise max_wait_s"
        # Not "the same body twice ends the retries": a proxy or load balancer serves the same
        # error page for as long as its backend is away, and a fault storm repeats one by chance
        # (tests/reliability/test_secrets.py at 30% faults did): such a body can change.
        body = exc.body if isinstance(exc, RetryableError) else None
        if body is not None and state.attempt_number >= self.config.max_attempts:
            self.why_stopped = (
                f"{exc}; the API kept answering with bodies that are not JSON: check that "
                "base_url is the Developer API itself; if it is, it may be failing: try again "
                "later or raise max_attempts"
            )
            return True
        if state.attempt_number >= self.config.max_attempts:
            self.why_stopped = (
                f"{exc}; the API may be down or overloaded: try again later or raise max_attempts"
            )
            return True
        left, sleep = self.left(), state.upcoming_sleep
        if left <= 0:
            self.why_stopped = f"{exc}; {budget} is spent: the API may be down or slow, {later}"
            return True
        if sleep < left:
            return False
        if left < self.config.max_wait_s - 0.5:
            budget = f"the {_secs(left)} left of {budget}"
        asked = exc.retry_after if isinstance(exc, RetryableError) else None
        if asked is not None:
            shortened = (
                f" even shortened to {_secs(sleep)} (retry_after_cap_s)" if sleep < asked else ""
            )
            self.why_stopped = (
                f"{exc}, server asked to wait {_secs(asked)} (Retry-After), more than {budget}"
                f"{shortened}: {later}"
            )
        else:
            self.why_stopped = (
                f"{exc}; the next retry in {_secs(sleep)} would not fit in {budget}: "
                f"the API may be down, {later}"
            )
        return True
