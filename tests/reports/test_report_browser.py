"""report.html rendered by a real headless Chromium: it loads offline, without errors, and is not blank.

Three checks per page, from one Chromium run each:
- the screenshot exists and has content (pixel spread of the greyscale image, share of non-white pixels);
- Chromium's stderr log holds no ``CONSOLE`` line (the report's scripts log nothing unless a chart cannot be
  drawn, so any console message is a problem: a blocked resource, a parse error) except our probe's;
- Chromium's NetLog holds no request started by the page (browser-internal ones have initiator
  "not an origin"): the report needs no network.
The probe is a copy of report.html with a load-time script that checks every chart was drawn (a canvas).
Hovering a point, with a real mouse moved over the page: ``test_report_hover.py``.
Needs ``chromium`` on PATH (Debian package ``chromium``; ``.ci/run`` installs it); skipped without it.
``--no-sandbox``: Chromium refuses to start as root with its sandbox (CI containers run as root).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.reports.real_runs import RealRun

from cloudai.reports import generate_report

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")  # Debian: /usr/bin/chromium
PROBE = """<script>
window.addEventListener("load", () => {
  const charts = [...document.querySelectorAll("div.chart")];
  const bad = charts.filter((c) => !([...c.querySelectorAll("canvas")].some((k) => k.width > 0 && k.height > 0)));
  if (bad.length) console.error("PROBE undrawn charts: " + bad.map((c) => c.id).join(","));
  else console.log("PROBE ok " + charts.length + " charts");
});
</script>
</body>"""


def render(page: Path, tmp: Path) -> tuple[Path, list[str], list[str]]:
    """Screenshot ``page``; return the PNG, the console lines logged, the URLs the page requested."""
    if CHROMIUM is None:
        pytest.skip("headless Chromium not installed: apt-get install -y chromium (Debian package 'chromium')")
    shot, netlog, profile = tmp / f"{page.stem}.png", tmp / f"{page.stem}-net.json", tmp / f"{page.stem}-profile"
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
        f"--screenshot={shot}", "--window-size=1200,2000", "--enable-logging=stderr", "--v=0",
        f"--log-net-log={netlog}", page.resolve().as_uri(),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]
    return shot, console, page_requests(netlog)


def page_requests(netlog: Path) -> list[str]:
    """URLs of network requests the page started (Chromium's own background requests are left out)."""
    if not netlog.exists():
        return []
    text = netlog.read_text()
    log = json.loads(text if text.rstrip().endswith("}") else text.rstrip().rstrip(",") + "]}")
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        e["params"]["url"]
        for e in log["events"]
        if e["type"] == start and "url" in e.get("params", {}) and e["params"].get("initiator") != "not an origin"
    ]


def assert_not_blank(png: Path) -> None:
    from PIL import Image, ImageStat

    assert png.exists() and png.stat().st_size > 0
    with Image.open(png) as img:
        grey = img.convert("L")
        assert grey.size == (1200, 2000)
        assert ImageStat.Stat(grey).stddev[0] > 10, "screenshot is (nearly) one colour"
        histogram = grey.histogram()
        assert 1 - histogram[255] / sum(histogram) > 0.02, "screenshot is (nearly) all white"


def check(report: Path, tmp_path: Path) -> None:
    shot, console, requests = render(report, tmp_path)
    assert_not_blank(shot)
    assert console == [], console
    assert requests == [], requests

    probe = tmp_path / f"{report.stem}-probe.html"  # scripts and data are inline: the page works from anywhere
    probe.write_text(report.read_text().replace("</body>", PROBE))
    _, console, requests = render(probe, tmp_path)
    charts = report.read_text().count('<div class="chart"')
    assert charts > 0
    assert len(console) == 1 and f"PROBE ok {charts} charts" in console[0], console
    assert requests == []


def test_report_of_a_real_run_renders_offline_without_errors(real_live: RealRun, tmp_path: Path) -> None:
    """The live-RL report has every kind of section: reward, knobs, importance, top trials, regimes, episodes."""
    check(real_live.path / "report.html", tmp_path)


def test_comparison_renders_offline_without_errors(make_dse: Callable[..., Path], tmp_path: Path) -> None:
    a, b = make_dse("a_2026-11-23_07-00-00", steps=30), make_dse("b_2026-11-23_08-00-00", steps=20, seed=3)
    check(generate_report([a, b]), tmp_path)


def test_the_probe_catches_a_broken_page(tmp_path: Path) -> None:
    """The checks above can fail: a chart no script drew and a remote resource are caught."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<html><body><div class="chart" id="x"></div><img src="https://example.invalid/y.png"></body></html>'
    )
    _, _, requests = render(page, tmp_path)
    assert requests == ["https://example.invalid/y.png"]
    probe = tmp_path / "bad-probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE))
    _, console, _ = render(probe, tmp_path)
    assert any("PROBE undrawn charts: x" in line for line in console), console
