"""best.toml, the terminal and the report name the same env_params regimes (issue 16: one binning for all three).

A run with a uniform range, a loguniform range and a list as env_params: the regimes best.toml lists (measured or
"never measured in"), the lines the terminal prints and the report's regime table (plus its "no scored trial"
list) are the run's recorded ``RegimeBins`` labels, and the trap/robust verdict is one sentence in both places.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tests.dse.conftest import Case, invoke

from cloudai.reports.load import load_run
from cloudai.reports.regimes import regimes
from cloudai.space import RegimeBins

TEST = """name = "x"
test_template_name = "Synthetic"
agent = "random_search"
agent_steps = 16
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
agent_config = { seed = 3, confirm = 0 }
[cmd_args]
algo = ["ring", "tree"]
num_channels = [4, 16]
background_load = { low = 0.0, high = 0.9 }
jitter = [0.0, 0.2]
message_size = { low = 1048576, high = 1073741824, log = true, dtype = "int" }
duration_s = 0
[env_params.background_load]
[env_params.jitter]
[env_params.message_size]
"""
SCENARIO = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\nnum_nodes = 2\n'
NOTE = re.compile(r"^#? *(\w+)=(\S.*?): .* \(n=\d+\)$")


def labels_in_notes(lines: list[str]) -> set[str]:
    """``param=label`` of every regime the best-action notes name: measured ones and the never-measured list."""
    found = {f"{m[1]}={m[2]}" for line in lines if (m := NOTE.match(line.strip()))}
    for line in lines:
        if "never measured in: " in line:
            listed = line.split("never measured in: ")[1].split(" (a good result")[0]
            found |= {m[0] for m in re.finditer(r"\w+=(\[[^]\)]*[]\)]|[^,]+)", listed)}
    return found


def test_best_toml_terminal_and_report_bin_alike(case: Callable[..., Case]) -> None:
    c = case(TEST, SCENARIO)
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    run_dir, it_dir = c.run_dir(), c.iteration_dir()

    recorded = json.loads((run_dir / "run.json").read_text())["entries"][0]["env_param_regimes"]
    bins = {name: RegimeBins.from_json(raw) for name, raw in recorded.items()}
    assert bins["background_load"] == RegimeBins(low=0.0, high=0.9, count=3)
    assert bins["message_size"] == RegimeBins(low=1048576, high=1073741824, log=True, count=3)
    assert bins["jitter"] == RegimeBins(candidates=("0.0", "0.2"))
    declared = {f"{name}={label}" for name, b in bins.items() if b for label in b.labels()}
    assert "background_load=[0.6, 0.9]" in declared and "message_size=[1.049e+06, 1.057e+07)" in declared

    best_toml = (it_dir / "best.toml").read_text().splitlines()
    assert labels_in_notes(best_toml) == declared
    assert labels_in_notes(result.output.splitlines()) == declared

    run = load_run(run_dir)
    (agent_run,) = run.agent_runs
    found = regimes(agent_run.trajectory, None, run.entry("t").regimes)
    assert found is not None and not found.guessed
    assert {f"{r.param}={r.label}" for r in found.rows} | set(found.empty) == declared
    assert invoke(["generate-report", "--result-dir", str(run_dir)]).exit_code == 0
    page = (run_dir / "report.html").read_text()
    for row in found.rows:
        assert f"<td>{row.label}</td>" in page
    assert f"env_params: {found.verdict}" in result.output


def test_a_run_json_without_regimes_falls_back_and_says_so(case: Callable[..., Case]) -> None:
    c = case(TEST, SCENARIO)
    assert invoke(c.args()).exit_code == 0
    manifest_path = c.run_dir() / "run.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["entries"][0]["env_param_regimes"]  # as an older cloudai wrote it
    manifest_path.write_text(json.dumps(manifest))
    run = load_run(c.run_dir())
    found = regimes(run.agent_runs[0].trajectory, None, run.entry("t").regimes)
    assert found is not None and found.guessed == ["background_load", "jitter", "message_size"]
    assert invoke(["generate-report", "--result-dir", str(c.run_dir())]).exit_code == 0
    assert "no regimes recorded in run.json (an older run)" in (c.run_dir() / "report.html").read_text()


def test_labels_cover_the_range_in_the_sampling_scale() -> None:
    linear = RegimeBins(low=0.0, high=0.9)
    assert linear.labels() == ["[0, 0.3)", "[0.3, 0.6)", "[0.6, 0.9]"]
    assert [linear.label(v) for v in (0.0, 0.2999, 0.3, 0.9, 1.5, -1.0)] == [
        "[0, 0.3)", "[0, 0.3)", "[0.3, 0.6)", "[0.6, 0.9]", "[0.6, 0.9]", "[0, 0.3)"
    ]  # fmt: skip
    log = RegimeBins(low=1.0, high=1000.0, log=True)
    assert log.labels() == ["[1, 10)", "[10, 100)", "[100, 1000]"]
    assert log.label(99.0) == "[10, 100)" and log.label(0.0) == "[1, 10)"
    assert RegimeBins(candidates=("true", "false")).label(True) == "true"
    assert RegimeBins.from_json(log.to_json()) == log
    assert RegimeBins.from_json({"low": 5, "high": 1, "bins": 3}) is None  # hand-edited nonsense is ignored
