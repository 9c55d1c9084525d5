"""Hovering a point of report.html in headless Chromium shows that trial: its step, status, configuration (every
knob's value), the env params it drew and metrics; moving away hides it. The mouse is moved with real input events
(``cdp.Chromium``), and every expected value is read from the run's trajectory.csv and env.csv, not from the report
package."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.reports.cdp import Chromium
from tests.reports.report_builders import parse
from tests.reports.test_report_browser import CHROMIUM

from cloudai.reports import generate_report

pytestmark = pytest.mark.browser

TIP = "document.getElementById({chart!r}).querySelector('.tip')"


def at(browser: Chromium, chart: str, x: float, y: float) -> tuple[float, float]:
    """Where in the viewport the point (x, y) of ``chart`` is, once the chart is scrolled into view."""
    js = f"""(() => {{
      const u = window.cloudaiReport.charts.get({chart!r}).u;
      u.root.scrollIntoView();
      const box = u.over.getBoundingClientRect();
      return [box.left + u.valToPos({x}, "x"), box.top + u.valToPos({y}, "y")];
    }})()"""
    cx, cy = browser.evaluate(js)
    return cx, cy


def hover(browser: Chromium, chart: str, x: float, y: float) -> str:
    """Move the mouse onto the point (x, y) of ``chart``; the tooltip's text ("" when none is shown)."""
    browser.move(*at(browser, chart, x, y))
    return browser.evaluate(f"(t => t.style.display === 'block' ? t.textContent : '')({TIP.format(chart=chart)})")


def expected(record: dict[str, str], env: dict[str, str]) -> list[str]:
    """The tooltip's lines for a trajectory.csv row of the fixtures' runs (metric ``default``, knobs in order) and
    its env.csv row (the env params the step drew, in the file's order)."""
    action = json.loads(record["action"])
    reward = float(record["reward"])
    knobs = [f"{k} = {v:.6g}" if isinstance(v, float) else f"{k} = {v}" for k, v in action.items()]
    drew = [f"{k} = {float(v):.6g} (env)" for k, v in env.items() if k != "step"]
    metric = json.loads(record["observation"])[0]
    return [f"step {record['step']} ({record['status']})", *knobs, *drew, f"reward = inverse(default): {reward:.6g}",
            f"default: {metric:.6g}", f"duration: {float(record['elapsed_s']):g} s"]  # fmt: skip


def test_hovering_a_point_shows_its_configuration_and_metrics(make_dse: Callable[..., Path], tmp_path: Path) -> None:
    if CHROMIUM is None:
        pytest.skip("headless Chromium not installed: apt-get install -y chromium (Debian package 'chromium')")
    run = make_dse(steps=40)
    report = generate_report([run])
    with (run / "Tests.1" / "0" / "trajectory.csv").open() as fh:
        records = list(csv.DictReader(fh))
    with (run / "Tests.1" / "0" / "env.csv").open() as fh:
        env = {row["step"]: row for row in csv.DictReader(fh)}
    best = max((r for r in records if r["status"] == "ok"), key=lambda r: float(r["reward"]))
    failed = next(r for r in records if r["status"] == "failed")
    page = parse(report)
    knob = page.charts["Tests.1-0--knobs-1"]["series"][0]  # algo: a categorical knob, points jittered beside boxes
    row = page.drawn("Tests.1-0--knobs-1", "trials")[0]

    with Chromium(CHROMIUM, tmp_path / "profile") as browser:
        browser.open(report.resolve().as_uri())
        reward = "Tests.1-0--reward-chart"
        assert hover(browser, reward, float(best["step"]), float(best["reward"])).splitlines() == expected(
            best, env[best["step"]]
        )
        assert hover(browser, reward, float(failed["step"]), float(failed["reward"])).splitlines() == expected(
            failed, env[failed["step"]]
        )
        on_knob = hover(browser, "Tests.1-0--knobs-1", knob["xs"][0], row["reward"])
        assert on_knob.splitlines() == expected(records[row["step"] - 1], env[str(row["step"])])
        browser.move(5, 5)  # off every chart: no tooltip left
        assert browser.evaluate("[...document.querySelectorAll('.tip')].filter(t => t.style.display === 'block')") == []
        assert browser.console() == []
