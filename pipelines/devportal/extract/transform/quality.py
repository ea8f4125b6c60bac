"""The data-quality ledger: what did not fit its type, counted per (table, column, problem),
with a few scrubbed samples; and a value's text as the API sent it (`raw_text`, `json_text`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson

from devportal.base.errors import scrub
from devportal.extract.sync_record import ProblemRecord

# the data-quality problem of a row that has no usable key: set aside, counted, never loaded
ID_DROPPED = "missing_or_invalid_id_row_dropped"
USER_ID_DROPPED = "missing_or_invalid_user_id_row_dropped"
SAMPLE_SIZE = 5


@dataclass
class Problem:
    count: int = 0
    sample_ids: list[str] = field(default_factory=list)
    sample_values: list[str] = field(default_factory=list)

    def add(self, ident: Any, value: Any) -> None:
        self.count += 1
        if len(self.sample_ids) < SAMPLE_SIZE:  # API text, stored: scrubbed (errors.scrub)
            self.sample_ids.append(scrub(str(ident))[:64])
            self.sample_values.append(scrub(raw_text(value))[:120])


@dataclass
class DataQuality:
    """Counts of rows whose values did not fit, keyed by (table, column, problem)."""

    problems: dict[tuple[str, str, str], Problem] = field(default_factory=dict)

    def add(self, table: str, column: str, problem: str, ident: Any, value: Any) -> None:
        self.problems.setdefault((table, column, problem), Problem()).add(ident, value)

    def merge(self, other: DataQuality) -> None:
        """Add `other`'s counts (and samples, up to SAMPLE_SIZE) to this ledger."""
        for key, problem in other.problems.items():
            mine = self.problems.setdefault(key, Problem())
            mine.count += problem.count
            room = SAMPLE_SIZE - len(mine.sample_ids)
            mine.sample_ids.extend(problem.sample_ids[:room])
            mine.sample_values.extend(problem.sample_values[:room])

    def add_count(self, table: str, column: str, problem: str, n: int, sample: str) -> None:
        """`n` occurrences at once (counted elsewhere), with one sample."""
        found = self.problems.setdefault((table, column, problem), Problem())
        found.count += n
        if not found.sample_values:
            found.sample_ids.append("-")
            found.sample_values.append(sample)

    def count(self, table: str, column: str, problem: str) -> int:
        found = self.problems.get((table, column, problem))
        return found.count if found else 0

    def total(self) -> int:
        return sum(p.count for p in self.problems.values())

    def records(self, run_id: str) -> list[dict[str, Any]]:
        """The rows of `data_quality` for run RUN_ID (`ProblemRecord`)."""
        return [
            ProblemRecord(
                run_id=run_id,
                table_name=table,
                column_name=column,
                problem=problem,
                row_count=p.count,
                sample_ids=", ".join(p.sample_ids),
                sample_values=", ".join(p.sample_values),
            ).row()
            for (table, column, problem), p in sorted(self.problems.items())
        ]


def raw_text(value: Any) -> str:
    """A value as the API sent it: strings verbatim, anything else as JSON (never a repr)."""
    return value if isinstance(value, str) else json_text(value)


def json_text(value: Any) -> str:
    """Compact JSON text of a parsed value, keys in the order the API sent them.

    orjson stops at 254 levels of nesting; deeper objects (the API may send them) take the
    standard library's path, which goes as deep as the page parser allowed.
    """
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
