"""Test TOMLs for real trials: a fast metric-writing workload, discrete-only or mixed knobs.

``write_synthetic``: the ``Synthetic`` workload with duration_s = 0. ``write_tomls``: a ``BashCmd``
running a short Python program that writes ``metrics.json`` from its ``--name=value`` args, with
a known optimum (and an optional shell prefix, e.g. to hold a trial until a file appears).
Either way a trial is a real job through the standalone system, recorded in ``trajectory.csv``.
"""

from __future__ import annotations

from pathlib import Path

_SCORE = (
    "import sys, json; a = dict(x[2:].split('=', 1) for x in sys.argv[1:]); "
    "v = {'ring': 1.0, 'tree': 2.0}[a['algo']] + 0.1 * float(a['threads']) + 1e-4 * float(a.get('chunk_kb', 0)); "
    "json.dump({'default': v, 'bus_bw': 2 * v}, open('metrics.json', 'w'))"
)


def write_tomls(
    root: Path, *, mixed: bool = False, steps: int = 8, extra: str = "", before: str = ""
) -> tuple[Path, Path]:
    """``(tests_dir, scenario_file)`` under ``root``; results go to ``root / "results"``.

    ``extra``: more test-level TOML lines; ``before``: shell run before the metric writer.
    """
    tests, scenarios = root / "tests", root / "scenarios"
    tests.mkdir(parents=True, exist_ok=True)
    scenarios.mkdir(parents=True, exist_ok=True)
    knobs = 'algo = ["ring", "tree"]\nthreads = [1, 2, 4]\n'
    if mixed:
        knobs += 'chunk_kb = { low = 64, high = 8192, log = true, dtype = "int" }\n'
    cmd = f'cmd = "{before}python3 -c \\"{_SCORE}\\""\n'
    (tests / "score.toml").write_text(
        'name = "score"\ntest_template_name = "BashCmd"\n'
        f'agent = "random_search"\nagent_steps = {steps}\nagent_metrics = ["default", "bus_bw"]\n'
        f'agent_reward_function = "identity"\n{extra}[cmd_args]\n{cmd}{knobs}'
    )
    scenario = scenarios / "score.toml"
    scenario.write_text('name = "score-scenario"\n[[Tests]]\nid = "Tests.score"\ntest_name = "score"\n')
    system = root / "system.toml"
    system.write_text(f'name = "local"\nscheduler = "standalone"\noutput_path = "{root / "results"}"\n')
    return tests, scenario


def write_synthetic(root: Path, *, mixed: bool = False, steps: int = 8) -> tuple[Path, Path]:
    """A ``Synthetic`` test with ``duration_s = 0``: each trial a real job running the analytic model."""
    tests, scenarios = root / "tests", root / "scenarios"
    tests.mkdir(parents=True, exist_ok=True)
    scenarios.mkdir(parents=True, exist_ok=True)
    knobs = 'algo = ["ring", "tree"]\nnum_channels = [2, 4, 8]\n'
    if mixed:
        knobs += 'chunk_kb = { low = 64, high = 8192, log = true, dtype = "int" }\n'
    (tests / "synthetic.toml").write_text(
        'name = "synthetic"\ntest_template_name = "Synthetic"\n'
        f'agent = "random_search"\nagent_steps = {steps}\nagent_metrics = ["bus_bw", "latency_us"]\n'
        f'agent_reward_function = "identity"\n[cmd_args]\nduration_s = 0\n{knobs}'
    )
    scenario = scenarios / "synthetic.toml"
    scenario.write_text('name = "synthetic-scenario"\n[[Tests]]\nid = "Tests.syn"\ntest_name = "synthetic"\n')
    return tests, scenario
