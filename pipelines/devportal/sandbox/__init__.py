"""The embedded Developer API sandbox: a real HTTP server implementing the spec on 127.0.0.1.

Used by `make demo`, by every test and by the benchmarks; the pipeline reaches it only over
HTTP. `Sandbox` is the entry point::

    from devportal.sandbox import Sandbox
    with Sandbox(subscriptions=1000, users=200, seed=7) as sb:
        requests.get(sb.base_url + devportal.base.api.SUBSCRIPTIONS_PATH,
                     headers={"Authorization": f"Bearer {sb.token}"})
        sb.advance(days=30)          # the simulated clock: cancel, renew, add, expire

Modules: `world` (the locked facade: reads, scripted edits, the clock), `store` (rows,
indexes, cached JSON, page reads), `generate` (the seeded initial subscriptions),
`transitions` (what the clock does to rows), `users` (accounts, profiles, settings), `clock`
(time formats, calendar months, rates), `app` (routing, validation, the pagination wrapper),
`faults` (fault kinds and their deterministic draw), `signups` (new subscriptions at a steady
rate while the list is read), `throttle` (the per-token rate limit and
the serial server cost), `server` (HTTP, auth, control endpoints, `Sandbox`), `cli` (`devportal sandbox`), `testing` (pytest helpers).

Why the stdlib `http.server.ThreadingHTTPServer` (HTTP/1.1, thread per connection) and not an
ASGI stack: no new dependency, no event loop to host inside test processes, a thread start and
stop of a few milliseconds, and full control over the socket, which fault injection needs
(reset with RST, cut mid-body, Content-Length that matches a truncated body). Its cost per
request is well inside the budget (>= 500 pages/s of 200 rows on 2 cores) once pages are
assembled from cached per-row JSON and written with one sendall on a TCP_NODELAY socket.

Assumption where the spec is silent: `start`/`end` filter on each subscription's creation
time, which the response does not carry (inclusive; a date-only `end` covers its whole day).
"""

from devportal.sandbox.faults import DEFAULT_KINDS, FaultConfig
from devportal.sandbox.server import Sandbox

__all__ = [
    "DEFAULT_KINDS",
    "FaultConfig",
    "Sandbox",
]
