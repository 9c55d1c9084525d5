"""CSS bars drawn in table cells (the regimes table): widths as a share of the largest magnitude, sign visible."""

from __future__ import annotations

import math
import re

from cloudai.reports import html as h


def widths(cell: str) -> list[tuple[str, float]]:
    return [(cls, float(w)) for cls, w in re.findall(r'class="bar ([\w ]+)" style="width:([\d.]+)%"', cell)]


def test_bars_are_shares_of_the_largest_and_a_negative_one_is_marked() -> None:
    assert widths(h.bars([(20.0, "best"), (10.0, "all")], 20.0)) == [("best", 100.0), ("all", 50.0)]
    assert widths(h.bars([(-5.0, "best"), (10.0, "all")], 10.0)) == [("best neg", 50.0), ("all", 100.0)]
    assert widths(h.bars([(math.nan, "best"), (4.0, "all")], 8.0)) == [("all", 50.0)]  # never measured: no bar


def test_the_tail_cell_follows_each_row_and_gets_a_header() -> None:
    page = h.table(
        ["a", "b"], [["x", 1.0], ["y", 2.0]], tail=[h.bars([(1.0, "best")], 2.0), h.bars([(2.0, "best")], 2.0)]
    )
    rows = re.findall(r"<tr>(.*?)</tr>", page)
    assert rows[0].count("<th>") == 3
    assert rows[1].startswith("<td>x</td>") and rows[1].endswith('style="width:50.0%"></div></td>')
    assert rows[2].endswith('style="width:100.0%"></div></td>')
