"""Reports from results dirs of each kind: the expected sections and images, self-contained, plus summary.csv."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

from tests.reports.report_builders import Page, entry, parse, write_manifest

from cloudai.reports import generate_report

MakeDse = Callable[..., Path]


def assert_self_contained(page: Page) -> None:
    """Nothing to fetch (scripts inline), and every chart's points are in its agent run's table."""
    assert page.external == [], "the report must open with no network"
    assert page.loads == 0 and page.images == []
    for chart in page.charts.values():
        rows = page.rows[chart["rows"]]["cols"]["step"] if "rows" in chart else []
        assert all(r is None or 0 <= r < len(rows) for s in chart["series"] for r in s.get("rows", []))


def read_summary(run: Path) -> list[dict[str, str]]:
    with (run / "summary.csv").open() as fh:
        return list(csv.DictReader(fh))


def test_plain_run_lists_every_job(plain_run: Path) -> None:
    report = generate_report([plain_run])

    assert report == plain_run / "report.html"
    page = parse(report)
    assert {"overview", "jobs"} <= page.kinds()
    assert "agent" not in page.kinds()
    for text in ("Tests.1", "Tests.2", "tests.1-test", "failed", "1.5", "1.25", "exit code 1"):
        assert text in page.cells
    assert_self_contained(page)
    rows = read_summary(plain_run)
    assert [(r["test_id"], r["iteration"], r["kind"], r["status"]) for r in rows] == [
        ("Tests.1", "0", "plain", "ok"),
        ("Tests.1", "1", "plain", "ok"),
        ("Tests.2", "0", "plain", "failed"),
    ]
    assert rows[0]["metric"] == "1.5" and rows[0]["duration_s"] == "2.0"


def test_dse_run_with_env_params_has_every_section(dse_run: Path) -> None:
    page = parse(generate_report([dse_run]))

    assert {"overview", "agent", "reward", "knobs", "importance", "top", "regimes"} <= page.kinds()
    assert "episodes" not in page.kinds()
    assert {"observations", "time", "trials"} <= page.kinds()
    # reward, observations, one per knob, time (importance, regimes: tables with CSS bars)
    charts = ["reward-chart", "observations-0", "knobs-0", "knobs-1", "knobs-2", "time-chart"]
    assert list(page.charts) == [f"Tests.1-0--{c}" for c in charts]
    assert all(page.points(c) > 0 for c in page.charts)
    assert_self_contained(page)
    assert {"threads", "algo", "chunk"} <= set(page.cells)  # importance and top-10 tables name the knobs
    assert "Optuna get_param_importances" in page.all_text
    row = read_summary(dse_run)[0]
    assert row["kind"] == "dse" and row["status"] == "ok" and row["steps"] == "60"
    assert '"threads"' in row["best_action"]


def test_top_trials_table_lists_each_configuration_once(dse_run: Path) -> None:
    text = generate_report([dse_run]).read_text()
    top = text.split('id="Tests.1-0--top"')[1].split("</section>")[0]
    assert "Top 9 configurations" in top  # the fake agent tries 9 configurations
    assert top.count("<tr>") == 10  # header + 9


def test_the_trap_configuration_is_called_out(dse_run: Path) -> None:
    page = parse(generate_report([dse_run]))

    assert "Trap: the best configuration is below the median configuration in background_load=0.9" in page.all_text


def test_live_rl_run_shows_episode_returns(live_run: Path) -> None:
    page = parse(generate_report([live_run]))

    assert {"agent", "reward", "episodes", "regimes"} <= page.kinds()
    # reward, knobs, time, episodes (metrics not named: no observations)
    charts = ["reward-chart", "knobs-0", "knobs-1", "knobs-2", "time-chart", "episodes-chart"]
    assert list(page.charts) == [f"Tests.1-0--{c}" for c in charts]
    assert read_summary(live_run)[0]["kind"] == "live_rl"
    assert_self_contained(page)


def test_interrupted_run_with_torn_last_line_still_reports(make_dse: MakeDse) -> None:
    run = make_dse(steps=20, torn=True)

    page = parse(generate_report([run]))

    assert "reward" in page.kinds()
    assert "line 22: torn last line (interrupted run); dropped" in page.all_text
    assert read_summary(run)[0]["steps"] == "20"


def test_a_run_without_run_json_is_inferred_from_the_tree(make_dse: MakeDse) -> None:
    run = make_dse(manifest=False, steps=15)

    page = parse(generate_report([run]))

    assert {"agent", "reward", "regimes"} <= page.kinds()


def test_importance_is_skipped_with_a_note_under_two_ok_trials(make_dse: MakeDse) -> None:
    run = make_dse(steps=1, env=False)

    page = parse(generate_report([run]))

    assert "Not computed: needs at least 2 distinct ok trials, found 1." in page.all_text
    assert "regimes" not in page.kinds()


def test_output_option_moves_the_report_but_not_the_summary(plain_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "mine.html"

    assert generate_report([plain_run], target) == target
    assert target.exists() and not (plain_run / "report.html").exists()
    assert (plain_run / "summary.csv").exists()
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_run_with_no_finished_job_says_so(tmp_path: Path) -> None:
    run = tmp_path / "fresh"
    write_manifest(run, [entry("Tests.1")])

    page = parse(generate_report([run]))

    assert "No job has finished in this run yet" in page.all_text


def test_a_hard_failure_is_shown_with_the_completed_steps(make_dse: MakeDse) -> None:
    run = make_dse(steps=12)
    (run / "Tests.1" / "0" / "dse_failure.txt").write_text("step 13: GymServerError: reset failed\nresume: ...\n")

    page = parse(generate_report([run]))

    assert "The run failed hard (dse_failure.txt):" in page.all_text
    assert "step 13: GymServerError: reset failed" in page.all_text
    assert "reward" in page.kinds()
    assert read_summary(run)[0]["status"] == "failed"


def test_a_run_that_failed_before_its_first_step(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_manifest(run, [entry("Tests.1", agent="optuna")])
    (run / "Tests.1" / "0").mkdir(parents=True)
    (run / "Tests.1" / "0" / "dse_failure.txt").write_text("could not start the agent")

    page = parse(generate_report([run]))

    assert "no trajectory.csv: the agent completed no step" in page.all_text
    assert "could not start the agent" in page.all_text
    assert read_summary(run)[0]["status"] == "failed"


def test_a_hostile_knob_value_is_data_in_the_page_not_markup(make_dse: MakeDse) -> None:
    """A knob value that closes the data's script and opens another stays a string in the run's table."""
    run = make_dse(steps=12, env=False)
    trajectory = run / "Tests.1" / "0" / "trajectory.csv"
    hostile = "</script><script>alert(1)</script><!--"
    trajectory.write_text(trajectory.read_text().replace('""ring""', json.dumps(hostile).replace('"', '""')))

    page = parse(generate_report([run]))

    assert page.loads == 0 and page.images == []
    algo = page.rows["Tests.1-0"]["knobs"].index("algo")
    assert hostile in page.rows["Tests.1-0"]["cols"][f"knob:{algo}"]
    assert "alert(1)" not in page.all_text.replace(hostile, "")  # only where the tables print it, as text


def test_a_run_whose_first_steps_did_not_score_still_draws_every_chart(make_dse: MakeDse) -> None:
    """Best so far is undefined (NaN) until a step scores: the page must still carry it (JSON has no NaN)."""
    run = make_dse(steps=20, env=False)
    trajectory = run / "Tests.1" / "0" / "trajectory.csv"
    lines = trajectory.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace(",ok,", ",failed,")  # step 1: no score, so no best yet

    trajectory.write_text("".join(lines))
    page = parse(generate_report([run]))

    best = page.charts["Tests.1-0--reward-chart"]["series"][-1]
    assert best["label"] == "best so far" and best["ys"][0] is None and best["ys"][-1] is not None
    assert "Tests.1-0--time-chart" in page.charts
