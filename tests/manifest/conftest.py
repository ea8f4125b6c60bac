"""Fixtures for the manifest tests: real bundle folders copied to tmp_path.

`fixtures/complete` exercises every manifest property and validates with no finding at all;
`fixtures/defaults` leaves every optional property out so the recorded defaults show. Tests
copy a bundle and change the copy (the manifest through JSON pointers, or the files).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.manifest.manifest_helpers import FIXTURES, Bundle


@pytest.fixture
def make_bundle(tmp_path: Path) -> Callable[[str], Bundle]:
    counter = iter(range(1000))

    def make(name: str = "complete") -> Bundle:
        target = tmp_path / f"{name}-{next(counter)}"
        shutil.copytree(FIXTURES / name, target, symlinks=True)
        return Bundle(target)

    return make


@pytest.fixture
def complete(make_bundle: Callable[[str], Bundle]) -> Bundle:
    return make_bundle("complete")


@pytest.fixture
def defaults(make_bundle: Callable[[str], Bundle]) -> Bundle:
    return make_bundle("defaults")
