"""Issue 28 item 4: the terminal, best.toml and report.html name the metric and its unit; the report says what ran,
where, when and how; the best is shown against a baseline; best.toml is linked; no table has an empty header."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pandas as pd
from tests.dse.conftest import invoke
from tests.reports.real_runs import RealRun

from cloudai import __version__


def test_terminal_and_best_toml_name_the_metric_and_its_unit(real_dse: RealRun) -> None:
    assert real_dse.returncode == 0, real_dse.stdout + real_dse.stderr
    line = next(x for x in real_dse.stdout.splitlines() if re.search(r"best of \d+ step\(s\)", x))
    assert re.search(r"is step \d+: bus_bw [\d.]+ GB/s \(a single measurement\)$", line), line
    best = (real_dse.it_dir("Tests.dse") / "best.toml").read_text()
    assert re.search(r"^# bus_bw [\d.]+ GB/s \(reward = identity\(bus_bw\); a single measurement\)\.$", best, re.M)


GRID = """name = "g"
test_template_name = "Synthetic"
agent = "grid_search"
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
agent_config = { confirm = 0 }
[cmd_args]
algo = ["tree", "ring"]
message_size = 268435456
chunk_kb = 512
num_channels = 16
duration_s = 0
"""


def test_the_best_is_shown_against_the_first_trial(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "g.toml").write_text(GRID)
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "g"\nnum_nodes = 4\n')
    ran = invoke(["run", "--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(tmp_path / "s.toml"),
                  "--output-dir", str(tmp_path / "out")])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    tree, ring = (
        float(json.loads(r)[0]) for r in pd.read_csv(next(tmp_path.glob("out/*/t/0/trajectory.csv"))).observation
    )
    assert ring > tree  # the grid's first point (tree) is the baseline; ring is the best
    ratio = f"{ring / tree:.3g}x the first trial's configuration (step 1: {tree:.4g} GB/s, a single measurement)"
    assert f"  against the baseline: {ratio}" in ran.output
    page = next(tmp_path.glob("out/*/report.html")).read_text()
    assert f"Against the baseline: the best step is {ratio}".replace("'", "&#x27;") in page


def test_report_header_says_version_command_host_system_and_date(real_dse: RealRun) -> None:
    page = (real_dse.path / "report.html").read_text()
    overview = page[page.index('data-section="overview"') : page.index("</section>")]
    cells = dict(re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td></tr>", overview))
    assert cells["cloudai version"] == __version__
    assert cells["host"] == socket.gethostname()
    assert cells["system"] == "standalone"
    assert cells["command"].startswith("cloudai run --tests-dir ") and "--test-scenario " in cells["command"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", cells["started"])


def test_report_links_best_toml_and_has_no_empty_header(real_dse: RealRun) -> None:
    page = (real_dse.path / "report.html").read_text()
    (href,) = re.findall(r'<a href="([^"]+)">', page)
    assert href == "Tests.dse/0/best.toml" and (real_dse.path / href).is_file()
    assert "<th></th>" not in page
    assert "reward = identity(bus_bw [GB/s])" in page
