"""HTML primitives for a self-contained page: inline CSS and scripts, no external resource of any kind.

Every function returns an HTML fragment as ``str`` and escapes what it is given, so callers pass plain
text and values. Sections carry ``id`` and ``data-section`` so tests (and readers' links) can find them.
A page with charts (``chart``) carries its plotting library (uPlot, MIT, ``static/``) and ``static/report.js``
inline: it opens from anywhere, offline; a page without charts carries no script at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import cache
from html import escape
from pathlib import Path

from cloudai.reports.chartdata import to_json

STATIC = Path(__file__).with_name("static")
CHART = '<div class="chart"'  # how ``page`` tells that a body has charts

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1150px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; height: auto; display: block; margin: .6em 0; }
.note { color: #555; font-style: italic; } .warn { background: #fff4e5; border-left: 4px solid #f90; padding: .5em; }
.trap { background: #fdecea; border-left: 4px solid #d33; padding: .5em; }
.ok { color: #1a7f37; } .failed, .timeout, .cancelled, .stopped { color: #c62828; }
.bar { background: #2e7d32; height: .8em; min-width: 1px; } .bar.best { background: #1f77b4; }
.bar.all { background: #888; } .bar.neg { background: repeating-linear-gradient(45deg, #c62828 0 3px, #fff 3px 5px); }
.legend .bar { display: inline-block; width: 1.5em; vertical-align: middle; margin: 0 .3em 0 1em; }
td.barcell { width: 320px; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; }
.charts { display: flex; flex-wrap: wrap; gap: .4em 1em; } .chart { margin: .6em 0; position: relative; }
.tip { position: absolute; z-index: 10; pointer-events: none; background: #fff; border: 1px solid #888;
  padding: .3em .5em; font-size: 12px; white-space: pre; display: none; box-shadow: 1px 1px 4px #0003; }
"""


@cache
def _asset(name: str) -> str:
    return (STATIC / name).read_text()


def page(title: str, body: Iterable[str]) -> str:
    """The whole document; with uPlot and ``report.js`` inline when ``body`` has a chart."""
    text = "\n".join(body)
    interactive = CHART in text
    css = CSS + _asset("uPlot.min.css") if interactive else CSS
    scripts = (
        f"\n<script>{_asset('uPlot.iife.min.js')}</script>\n<script>{_asset('report.js')}</script>"
        if interactive
        else ""
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{css}</style>\n</head>\n<body>\n"
        f"<h1>{escape(title)}</h1>\n{text}{scripts}\n</body>\n</html>\n"
    )


def section(slug: str, title: str, parts: Iterable[str], level: int = 2, data: str = "") -> str:
    """``data-section`` is ``data`` or the part of ``slug`` after its last ``--``."""
    kind = data or slug.split("--")[-1]
    return (
        f'<section id="{escape(slug)}" data-section="{escape(kind)}">\n'
        f"<h{level}>{escape(title)}</h{level}>\n" + "\n".join(parts) + "\n</section>"
    )


def chart(slug: str, spec: dict[str, object], alt: str) -> str:
    """A chart ``report.js`` draws from ``spec`` (see there); ``alt`` says what it shows, for screen readers."""
    return (
        f'{CHART} id="{escape(slug)}" role="img" aria-label="{escape(alt)}" data-spec="{escape(to_json(spec))}"></div>'
    )


def charts(parts: Iterable[str]) -> str:
    """Small charts side by side, as many to a row as the page is wide."""
    return '<div class="charts">' + "".join(parts) + "</div>"


def note(text: str, kind: str = "note") -> str:
    return f'<p class="{escape(kind)}">{escape(text)}</p>'


def para(text: str) -> str:
    return f"<p>{escape(text)}</p>"


def link(href: str, text: str) -> str:
    """A relative link (to a file beside the page, e.g. ``t/0/best.toml``)."""
    return f'<a href="{escape(href)}">{escape(text)}</a>'


def pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def fmt(value: object) -> str:
    """Numbers to 4 significant digits, missing values as an em dash, everything else as text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    status_col: int | None = None,
    tail: Sequence[str] = (),
    tail_header: str = "chart",
) -> str:
    """``tail``: one trusted HTML cell per row (e.g. ``bars``) after the escaped ones, under ``tail_header``."""
    head = "".join(f"<th>{escape(h)}</th>" for h in (*header, *([tail_header] if tail else [])))
    body = []
    for n, row in enumerate(rows):
        cells = []
        for i, value in enumerate(row):
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            cls = ' class="num"' if numeric else f' class="{escape(str(value))}"' if i == status_col else ""
            cells.append(f"<td{cls}>{escape(fmt(value))}</td>")
        body.append("<tr>" + "".join(cells) + (tail[n] if n < len(tail) else "") + "</tr>")
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"


def bars(values: Sequence[tuple[float, str]], top: float) -> str:
    """A cell of thin bars, one per ``(value, css class)``, each ``|value| / top`` wide; a negative one hatched red.
    A NaN value draws no bar (nothing measured)."""
    top = top or 1.0
    lines = [
        f'<div class="bar {cls}{" neg" if v < 0 else ""}" style="width:{min(abs(v) / top, 1.0) * 100:.1f}%"></div>'
        for v, cls in values
        if not math.isnan(v)
    ]
    return f'<td class="barcell">{"".join(lines)}</td>'


def bar_legend(items: Sequence[tuple[str, str]]) -> str:
    """What each bar class of ``bars`` stands for: ``(css class, text)``."""
    keys = "".join(f'<span class="bar {escape(cls)}"></span>{escape(text)}' for cls, text in items)
    return f'<p class="legend note">Bars:{keys}</p>'


def bar_table(header: Sequence[str], items: Iterable[tuple[str, float]]) -> str:
    """Name, value and a CSS bar as wide as the value's share of the largest: a chart with no image."""
    items = list(items)
    top = max((v for _, v in items), default=0.0) or 1.0
    rows = [
        f'<tr><td>{escape(name)}</td><td class="num">{escape(fmt(value))}</td>'
        f'<td class="barcell"><div class="bar" style="width:{max(0.0, value) / top * 100:.1f}%"></div></td></tr>'
        for name, value in items
    ]
    head = "".join(f"<th>{escape(h)}</th>" for h in (*header, "chart"))
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>"
