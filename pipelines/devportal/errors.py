"""Errors meant for people: one line with the cause and the fix, and the process exit code."""

from __future__ import annotations


class DevportalError(Exception):
    """An expected failure. `str(err)` is the one line shown to the user; never holds a secret."""

    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(DevportalError):
    """Missing or unsafe configuration (no token, token over plain http to a remote host, ...)."""

    exit_code = 2


class ApiError(DevportalError):
    """The API answered in a way that retrying cannot fix (401/403/404/422, retries exhausted)."""


class IntegrityError(DevportalError):
    """What was read does not add up (row count differs from `total`, list moved while paging)."""


class WarehouseBusy(DevportalError):
    """Another sync holds the warehouse lock."""

    exit_code = 3
