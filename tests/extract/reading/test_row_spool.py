"""Dict rows spooled while a list is read (extract/reading/row_spool.py): handed back in the
order appended, a frame at a time, Python's types kept, the file gone after."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from devportal.extract.reading import row_spool
from devportal.extract.reading.row_spool import RowSpool


def rows(n: int, start: int = 0) -> list[dict[str, object]]:
    return [{"user_id": i, "seen": datetime(2025, 1, 1, 0, 0, i % 60)} for i in range(start, n)]


def test_without_a_folder_rows_stay_in_memory_as_one_batch() -> None:
    spool = RowSpool(None, "settings")
    spool.extend(rows(3))
    spool.extend(rows(5, start=3))
    assert spool.rows == 5
    assert list(spool.batches()) == [rows(5)]


def test_an_empty_spool_hands_over_nothing(tmp_path: Path) -> None:
    assert list(RowSpool(None, "settings").batches()) == []
    on_disk = RowSpool(tmp_path / "spool", "settings")
    assert list(on_disk.batches()) == []
    assert not (tmp_path / "spool").exists()  # the last spool out removes the folder


def test_rows_come_back_in_frames_in_order_with_their_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(row_spool, "FRAME_ROWS", 2)
    folder = tmp_path / "spool"
    spool = RowSpool(folder, "settings")
    spool.extend(rows(5))
    [file] = folder.iterdir()
    assert file.name.startswith("settings-") and file.suffix == ".pickle"
    batches = list(spool.batches())
    assert [len(b) for b in batches] == [2, 2, 1]  # frames of FRAME_ROWS, the rest last
    assert [row for batch in batches for row in batch] == rows(5)
    assert isinstance(batches[0][0]["seen"], datetime)  # not a string, as JSON would make it
    assert spool.rows == 5
    assert not folder.exists()  # file and folder removed once handed over


def test_the_folder_stays_while_another_spool_uses_it(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    first, second = RowSpool(folder, "settings"), RowSpool(folder, "accounts")
    first.extend(rows(2))
    second.extend(rows(3))
    assert [len(b) for b in first.batches()] == [2]
    assert folder.is_dir() and len(list(folder.iterdir())) == 1
    assert [len(b) for b in second.batches()] == [3]
    assert not folder.exists()


def test_discard_removes_the_file_and_the_rows(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    spool = RowSpool(folder, "settings")
    spool.extend(rows(3))
    spool.discard()
    assert list(folder.iterdir()) == []
    memory = RowSpool(None, "settings")
    memory.extend(rows(3))
    memory.discard()
    assert list(memory.batches()) == []
