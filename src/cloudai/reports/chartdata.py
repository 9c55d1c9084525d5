"""``Rows``: the steps an agent run's charts draw, embedded in the page once as JSON.

Every chart of an agent run refers to its points by row number into one table (``<script type=
"application/json" class="rows">``): step, status, reward, duration, each observed metric and each knob's
value. A point drawn by several charts (reward, observations, duration, knob effects) is one row, and hovering
any of them shows that row: the step's configuration, env params and metrics (``static/report.js``). Only the rows some
chart draws are kept (``thin`` bounds each chart), so the table stays a few thousand rows at any run length.

Columns (``cols``), each a list with one value per row (``null`` where nothing was measured):
``step``, ``status`` (an index into ``statuses``), ``reward``, ``elapsed``, ``obs:<i>`` (the i-th of
``metrics``, as the run names it with its unit), ``knob:<j>`` (the j-th of ``knobs``; a value that is not a
number, a string, a bool or null as its JSON text), ``env:<j>`` (the j-th of ``env``: the env param's value the
step drew, as a knob's), ``more:<k>`` (the k-th of ``more``: a metric the trials measured but the agent did not
observe, read from their job.json by the chart that draws it).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING, cast

from cloudai.display import DIGITS, clean, show_action

if TYPE_CHECKING:
    from cloudai.reports.trajectory import Step


class Rows:
    """The drawn steps of one agent run, in the order charts first asked for them."""

    def __init__(
        self, name: str, knobs: Sequence[str], metrics: Sequence[str], reward: str, env: Sequence[str] = ()
    ) -> None:
        """``name``: how charts find the table (unique in the page); ``metrics``, ``reward``: their labels;
        ``env``: the env params each step drew (the traffic a serving trial measured under)."""
        self.name, self.knobs, self.metrics, self.reward = name, list(knobs), list(metrics), reward
        self.env = list(env)
        self._index: dict[int, int] = {}  # step number -> row
        self._steps: list[Step] = []
        self.more: list[str] = []  # labels of the metrics added by ``add_metric``
        self._more: list[dict[int, float]] = []  # step number -> value, per added metric

    def __len__(self) -> int:
        return len(self._steps)

    def refs(self, steps: Iterable[Step]) -> list[int]:
        """The row of each step, adding those not drawn yet."""
        out = []
        for s in steps:
            row = self._index.get(s.step)
            if row is None:
                row = self._index[s.step] = len(self._steps)
                self._steps.append(s)
            out.append(row)
        return out

    def add_metric(self, label: str, values: dict[int, float]) -> str:
        """A metric not observed (``values``: by step number), shown on hovering a row; its column's name."""
        if label in self.more:
            self._more[self.more.index(label)].update(values)
            return f"more:{self.more.index(label)}"
        self.more.append(label)
        self._more.append(dict(values))
        return f"more:{len(self.more) - 1}"

    def table(self) -> dict[str, object]:
        """The rows as columns (see the module docstring), ready for ``json.dumps``."""
        steps = self._steps
        statuses = list(dict.fromkeys(s.status for s in steps))
        code = {status: i for i, status in enumerate(statuses)}
        cols: dict[str, list[object]] = {
            "step": [s.step for s in steps],
            "status": [code[s.status] for s in steps],
            "reward": finites([s.reward for s in steps]),
            "elapsed": finites([s.elapsed_s for s in steps]),
        }
        for i in range(len(self.metrics)):
            cols[f"obs:{i}"] = finites([s.observation[i] if i < len(s.observation) else None for s in steps])
        for j, knob in enumerate(self.knobs):
            cols[f"knob:{j}"] = scalars([s.action.get(knob) for s in steps])
        for j, param in enumerate(self.env):
            cols[f"env:{j}"] = scalars([s.env.get(param) for s in steps])
        for k, values in enumerate(self._more):
            cols[f"more:{k}"] = [finite(values.get(s.step)) for s in steps]
        return {"statuses": statuses, "knobs": self.knobs, "env": self.env, "metrics": self.metrics,
                "more": self.more, "reward": self.reward, "cols": cols}  # fmt: skip

    def script(self) -> str:
        """The table as an inline JSON script the page's charts find by ``name`` (their ``rows``)."""
        name = escape(self.name)
        return f'<script type="application/json" class="rows" data-rows="{name}">{to_json(self.table())}</script>'


def finite(value: object) -> float | None:
    """A number JSON can carry: NaN, infinities and non-numbers as ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value


def finites(values: list[object]) -> list[object]:
    """``finite`` of each value: the list itself when every value is a finite float (checked in two C passes)."""
    if set(map(type, values)) == {float} and all(map(math.isfinite, cast("list[float]", values))):
        return values
    return list(map(finite, values))


def scalar(value: object) -> object:
    """A knob value as JSON shows it: scalars as they are (a non-finite float as its text), others as JSON text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, float):
        return clean(value)  # as the terminal shows it: 0.6, not 0.6000000000000001
    if value is None or isinstance(value, bool | int | str):
        return value
    return show_action(value, sort_keys=True) if isinstance(value, dict) else json.dumps(clean(value))


def scalars(values: list[object]) -> list[object]:
    """``scalar`` of each value: the list itself when every value is one JSON shows as it is (ints, strings,
    bools, None: a knob such as ``threads`` or ``algo``, checked once per type rather than per value)."""
    types = set(map(type, values))
    if types <= _AS_IS:
        return values
    if types == {float} and all(map(math.isfinite, floats := cast("list[float]", values))):
        return list(map(float, map(format, floats, itertools.repeat(f".{DIGITS}g"))))  # clean's, in C calls
    return list(map(scalar, values))


_AS_IS = {int, str, bool, type(None)}


def to_json(value: object) -> str:
    """Compact JSON that is safe inside ``<script>``: every ``<`` (only ever inside a string) as ``\\u003c``, so no
    ``</script>`` or ``<!--`` in a knob's value can end or bend the script; a JSON parser reads the same string."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
