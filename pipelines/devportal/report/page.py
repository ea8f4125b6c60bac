"""The self-contained HTML page (`--html PATH`): the figures and the charts of
`devportal.charts` on the page (`Chart.on_page`) as inline PNG images, every text escaped; and
`print_report`, what `devportal report` (devportal.cli.report) runs."""

from __future__ import annotations

import base64
import html as html_lib
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from devportal import charts, display
from devportal.errors import DevportalError
from devportal.report.figures import ReportFigures, _figures, _Reader, _reading, _report
from devportal.report.formats import FORMATS, _as_of, _shown, _text, render

if TYPE_CHECKING:
    import pandas as pd

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222; }}
h1 {{ font-size: 1.5rem; margin-bottom: 0.2rem; }}
p.note {{ color: #666; margin-top: 0; }}
p.basis {{ margin: 0.4rem 0; }}
p.partial {{ border-left: 4px solid #b8323a; padding: 0.3rem 0.6rem; background: #fbeaea; }}
table {{ border-collapse: collapse; margin: 1rem 0 2rem; }}
td {{ padding: 0.2rem 1.2rem 0.2rem 0; }}
td.value {{ text-align: right; font-variant-numeric: tabular-nums; }}
td.note {{ text-align: left; }}
tr.section td {{ font-weight: 600; padding-top: 0.8rem; }}
td.sub {{ padding-left: 1.2rem; }}
figure {{ margin: 0 0 2rem; }}
figure img {{ max-width: 100%; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p class="note">All figures are live subscriptions, computed as of the latest successful sync
(the API server's clock), not the time this page was written.</p>
{basis}
<table>
{rows}
</table>
{charts}
</body>
</html>
"""


def _chart_frames(reader: _Reader) -> dict[str, pd.DataFrame]:
    """The DataFrame of every chart whose models exist (e.g. no users before any model could
    build it)."""
    frames = {}
    for chart in charts.CHARTS:
        if chart.on_page and set(re.findall(r"analytics\.(\w+)", chart.query)) <= reader.tables:
            frames[chart.name] = reader.frame(chart.query)
    return frames


def _chart_images(
    frames: Mapping[str, pd.DataFrame], as_of: datetime | None
) -> list[tuple[str, bytes]]:
    """The charts drawn, as (title, PNG): drawn after the connection is closed."""
    return [
        (charts.BY_NAME[name].title, charts.png_bytes(charts.BY_NAME[name].draw(frame, as_of)))
        for name, frame in frames.items()
    ]


def format_html(report: ReportFigures, images: Sequence[tuple[str, bytes]]) -> str:
    """The page; every text `html.escape`d, and one line without control characters
    (`display.terminal`: a right-to-left override would reorder what the page shows)."""

    def esc(text: str) -> str:
        return html_lib.escape(display.terminal(text))

    as_of = _as_of(report)
    rows = []
    for section in report.sections[1:]:
        rows.append(f'<tr class="section"><td colspan="2">{esc(section.title)}</td></tr>')
        rows.extend(
            f'<tr><td class="sub">{esc(m.label)}</td>'
            f'<td class="{"note" if m.kind == "statuses" else "value"}">{esc(_text(m))}</td></tr>'
            for m in _shown(section)
        )
    basis_class = "basis partial" if report.partial else "basis"
    if report.partial:
        head, _, rest = report.basis.partition(":")
        basis = f'<p class="{basis_class}"><strong>{esc(head)}:</strong>{esc(rest)}</p>'
    else:
        basis = f'<p class="{basis_class}">{esc(report.basis)}</p>'
    figures = [
        f'<figure><img alt="{esc(title)}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"></figure>'
        for title, png in images
    ]
    return _PAGE.format(
        title=esc(f"Subscriptions as of {as_of}"),
        basis=basis,
        rows="\n".join(rows),
        charts="\n".join(figures),
    )


def _write(path: str | Path, text: str) -> Path:
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as err:
        raise DevportalError(f"cannot write {target}: {err.strerror or err}") from err
    return target


def _read_page(
    reader: _Reader, with_charts: bool = True
) -> tuple[ReportFigures, dict[str, pd.DataFrame]]:
    """The figures and (WITH_CHARTS) the charts' data, read in one go on one connection."""
    report = _report(_figures(reader))
    return report, _chart_frames(reader) if with_charts else {}


def write_html(warehouse: str | Path, path: str | Path, destination: str | None = None) -> Path:
    """Write the self-contained HTML page (figures and charts) to PATH."""
    with _reading(warehouse, destination) as reader:
        report, frames = _read_page(reader)
    return _write(path, format_html(report, _chart_images(frames, report.as_of)))


def print_report(
    warehouse: str | Path,
    fmt: str = "table",
    html: str | Path | None = None,
    destination: str | None = None,
) -> None:
    """Print the report in FMT; with HTML, also write the page there. DESTINATION "postgres"
    reads the models in PostgreSQL instead of the DuckDB warehouse."""
    if fmt not in FORMATS:
        raise DevportalError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    with _reading(warehouse, destination) as reader:
        report, frames = _read_page(reader, with_charts=html is not None)
    print(render(report, fmt))
    if html is not None:
        target = _write(html, format_html(report, _chart_images(frames, report.as_of)))
        # stdout stays one document for json/csv; the note goes with the logs
        print(f"wrote {target}", file=sys.stderr if fmt in ("json", "csv") else sys.stdout)
