"""Errors meant for people: one line with the cause and the fix, and the process exit code."""

from __future__ import annotations

from typing import Any


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


def causes(err: BaseException) -> list[BaseException]:
    """`err` and what caused it, outermost first (dlt's step errors keep theirs in `exception`)."""
    chain: list[BaseException] = []
    current: Any = err
    while isinstance(current, BaseException) and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__ or getattr(current, "exception", None)
    return chain


def devportal_cause(err: BaseException) -> DevportalError | None:
    return next((e for e in causes(err) if isinstance(e, DevportalError)), None)


def first_line(err: BaseException) -> str:
    """The innermost cause's first line: dlt's wrappers say where, the cause says what."""
    inner = causes(err)[-1]
    text = str(inner).strip().splitlines()
    return (text[0][:300] if text else "") or type(inner).__name__
