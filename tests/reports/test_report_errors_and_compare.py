"""Bad inputs give a ConfigError (exit code 2) naming the dir; several runs give a comparison page."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.reports.report_builders import parse

from cloudai.errors import ConfigError
from cloudai.reports import generate_report

MakeDse = Callable[..., Path]


def test_an_empty_dir_is_a_config_error_naming_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as info:
        generate_report([empty])
    assert info.value.exit_code == 2
    assert str(empty) in str(info.value)
    assert "expected run.json or <test id>/<iteration>/job.json" in str(info.value)
    assert not list(empty.iterdir()), "nothing is written into a dir that is not a results dir"


def test_an_unrelated_dir_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "README.md").write_text("hello")
    (tmp_path / "src" / "0").mkdir()
    with pytest.raises(ConfigError, match="not a cloudai results directory"):
        generate_report([tmp_path])


def test_a_missing_dir_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such results directory"):
        generate_report([tmp_path / "nope"])


def test_an_output_path_hints_at_its_run_dirs(plain_run: Path) -> None:
    with pytest.raises(ConfigError, match=f"pass one of its run dirs: {plain_run.name}"):
        generate_report([plain_run.parent])


def test_a_broken_run_json_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(ConfigError, match="unreadable run manifest"):
        generate_report([tmp_path])


def test_one_bad_dir_among_several_writes_nothing(plain_run: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        generate_report([plain_run, tmp_path / "nope"])
    assert not (plain_run / "report.html").exists()


def test_no_dir_at_all_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no results directory given"):
        generate_report([])


def test_two_runs_of_the_same_test_are_compared(make_dse: MakeDse) -> None:
    a = make_dse("dse-scenario_2026-11-23_07-00-00", steps=40, seed=1)
    b = make_dse("dse-scenario_2026-11-23_08-00-00", steps=25, seed=2, env=False)

    out = generate_report([a, b])

    assert out == a.parent / "comparison.html"
    assert (a / "report.html").exists() and (b / "report.html").exists()
    assert (a / "summary.csv").exists() and (b / "summary.csv").exists()
    page = parse(out)
    assert page.sections["compare-tests.1-test"] == "compare-tests.1-test"
    assert list(page.charts) == ["compare-tests.1-test--chart", "compare-tests.1-test--time-chart"]  # best so far
    assert [s["label"] for s in page.charts["compare-tests.1-test--chart"]["series"]] == [
        f"{a.name} #0",
        f"{b.name} #0",
    ]
    assert f"{a.name} #0" in page.cells and f"{b.name} #0" in page.cells  # best configurations side by side
    assert {"best reward", "its default", "threads", "algo", "chunk"} <= set(page.cells)  # inverse(default)
    assert page.external == [] and page.loads == 0


def test_comparison_of_plain_runs_and_an_explicit_output(plain_run: Path, make_dse: MakeDse, tmp_path: Path) -> None:
    dse = make_dse(steps=10)
    out = generate_report([plain_run, dse], tmp_path / "cmp.html")
    assert out == tmp_path / "cmp.html"
    page = parse(out)
    assert "jobs" in page.sections
    assert "Only in 1 of 2 runs" in page.all_text


def test_a_rerun_replaces_the_files(plain_run: Path) -> None:
    first = generate_report([plain_run]).read_text()
    second = generate_report([plain_run]).read_text()
    assert first == second
    assert sorted(p.name for p in plain_run.iterdir() if p.is_file()) == ["report.html", "run.json", "summary.csv"]
    with (plain_run / "summary.csv").open() as fh:
        assert len(list(csv.reader(fh))) == 4


def test_importing_the_package_imports_nothing_heavy() -> None:
    code = (
        "import sys, cloudai.reports; "
        "heavy = [m for m in ('pandas', 'optuna', 'rich') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_public_api_is_two_functions_and_the_list_of_outputs() -> None:
    import cloudai.reports

    assert cloudai.reports.__all__ == ["OUTPUTS", "generate_report", "print_summary"]


def test_runs_of_one_test_id_under_different_test_names_overlay_by_id(make_dse: MakeDse) -> None:
    """A test TOML renamed between two runs: by name they do not meet; ``--compare-by test-id`` overlays them,
    each run named by its dir, against step and against the trial time spent."""
    a = make_dse("dse-scenario_2026-11-23_07-00-00", steps=30, seed=1)
    b = make_dse("dse-scenario_2026-11-23_08-00-00", steps=20, seed=2)
    manifest = json.loads((b / "run.json").read_text())
    manifest["entries"][0]["test_name"] = "renamed-test"
    (b / "run.json").write_text(json.dumps(manifest))

    by_name = parse(generate_report([a, b]))
    assert {"compare-tests.1-test", "compare-renamed-test"} <= set(by_name.sections)
    assert "Only in 1 of 2 runs" in by_name.all_text

    from cloudai.cli import cli

    out = a.parent / "by-id.html"
    args = ["generate-report", str(a), str(b), "--compare-by", "test-id", "--output", str(out)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    page = parse(out)
    assert "compare-Tests.1" in page.sections and "Only in" not in page.all_text
    assert f"{a.name}: tests.1-test; {b.name}: renamed-test" in page.all_text
    step_chart, time_chart = page.charts["compare-Tests.1--chart"], page.charts["compare-Tests.1--time-chart"]
    assert [s["label"] for s in time_chart["series"]] == [f"{a.name} #0", f"{b.name} #0"]
    assert time_chart["xlabel"].startswith("trial time spent [s]") and step_chart["xlabel"] == "step"
    spent = [float(r["elapsed_s"]) for r in csv.DictReader((a / "Tests.1" / "0" / "trajectory.csv").open())]
    first = time_chart["series"][0]
    steps = step_chart["series"][0]["xs"]
    assert first["xs"] == [pytest.approx(sum(spent[:step])) for step in steps]  # the sum of durations so far
