"""Reports of real runs, as ``cloudai run`` writes them at the end of every run (also after Ctrl-C).

Every expected number is recomputed here from the files the run wrote (job.json, metrics.json,
trajectory.csv, env.csv), not from the report package.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from statistics import fmean

from tests.conftest import cloudai
from tests.reports.real_runs import LIVE_HORIZON, LIVE_STEPS, RealRun, canonical, read_csv, scored
from tests.reports.report_builders import Page, parse, tables

from cloudai.reports import generate_report

END_OF_RUN = """
import contextlib, io, sys
from pathlib import Path
from cloudai.reports import generate_report, print_summary
run = Path(sys.argv[1])
generate_report([run])
with contextlib.redirect_stdout(io.StringIO()):
    print_summary(run)
print([m for m in ("optuna", "numpy", "pandas") if m in sys.modules])
"""  # what `cloudai run` does at its end


def fmt(value: float) -> str:
    """As the report prints numbers (``cloudai.reports.html.fmt``)."""
    return f"{value:.4g}"


def assert_charts(page: Page, base: str, kinds: list[str]) -> None:
    """The page's charts are exactly of these kinds (id prefixes under ``base``), each one at least, each drawing."""
    found = [next((k for k in kinds if c.startswith(f"{base}--{k}")), None) for c in page.charts]
    assert set(found) == set(kinds), list(page.charts)
    assert all(page.points(c) > 0 for c in page.charts)
    assert page.external == [] and page.loads == 0 and page.images == []


def test_a_plain_run_ends_with_its_report_and_summary(real_plain: RealRun) -> None:
    assert real_plain.returncode == 1, real_plain.stderr  # one job failed
    report = real_plain.path / "report.html"
    assert f"Report: {report}" in real_plain.stdout
    assert "Tests.broken (broken)" in real_plain.stdout and "1 failed" in real_plain.stdout
    page = parse(report)
    assert {"overview", "jobs"} <= page.kinds() and "agent" not in page.kinds()
    assert page.images == [] and page.external == []

    rows = read_csv(real_plain.path / "summary.csv")
    assert [(r["test_id"], r["iteration"], r["kind"]) for r in rows] == [
        ("Tests.bw", "0", "plain"),
        ("Tests.bw", "1", "plain"),
        ("Tests.broken", "0", "plain"),
    ]
    for row in rows:
        job_dir = real_plain.path / row["test_id"] / row["iteration"]
        record = json.loads((job_dir / "job.json").read_text())
        assert row["status"] == record["status"]
        assert float(row["duration_s"]) == round(record["ended_at"] - record["started_at"], 3)
        metrics = job_dir / "metrics.json"
        expected = json.loads(metrics.read_text())["default"] if metrics.exists() else None
        assert (float(row["metric"]) if row["metric"] else None) == expected
    assert [r["status"] for r in rows] == ["ok", "ok", "failed"]
    jobs = tables(report)["jobs"]
    assert [c[:4] for c in jobs[1:]] == [[r["test_id"], r["test_name"], r["iteration"], r["status"]] for r in rows]


def test_the_report_of_a_plain_run_imports_no_plotting_or_optuna(real_plain: RealRun) -> None:
    """The report at the end of every `cloudai run` must stay cheap when there is nothing to plot."""
    done = subprocess.run([sys.executable, "-c", END_OF_RUN, real_plain.path], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_report_is_written_after_the_summary_by_a_background_process(real_dse: RealRun) -> None:
    """The run exits without waiting for its report; the fixture waited on the renderer's lock, then: complete."""
    report = real_dse.path / "report.html"
    assert f"Report: {report} (being written in the background by process " in real_dse.stdout
    assert report.read_text().rstrip().endswith("</html>")
    assert (real_dse.path / "summary.csv").exists()
    assert not (real_dse.path / "report.pid").exists() and not (real_dse.path / "report_error.txt").exists()


def test_a_dse_run_with_env_params_reports_every_section(real_dse: RealRun) -> None:
    assert real_dse.returncode == 0, real_dse.stderr
    report = real_dse.path / "report.html"
    assert f"Report: {report}" in real_dse.stdout
    page = parse(report)
    assert {"overview", "agent", "reward", "knobs", "importance", "top", "regimes"} <= page.kinds()
    assert "episodes" not in page.kinds()
    # reward, observations, knob effects, time spent (regimes: a table with bars)
    assert_charts(page, "Tests.dse-0", ["reward-chart", "observations-", "knobs-", "time-chart"])

    steps = read_csv(real_dse.it_dir("Tests.dse") / "trajectory.csv")
    by_step = {int(r["step"]): r for r in steps}
    drawn = page.drawn("Tests.dse-0--reward-chart", "ok")  # what hovering each point shows: its row
    assert sorted(r["step"] for r in drawn) == [int(r["step"]) for r in steps if r["status"] == "ok"]
    knobs = page.rows["Tests.dse-0"]["knobs"]
    for row in drawn:
        record = by_step[row["step"]]
        assert row["reward"] == float(record["reward"])
        action = json.loads(record["action"])
        assert [row[f"knob:{j}"] for j in range(len(knobs))] == [action[k] for k in knobs]
    best = max(scored(steps), key=lambda r: float(r["reward"]))
    (row,) = read_csv(real_dse.path / "summary.csv")
    assert (row["kind"], row["status"], row["steps"]) == ("dse", "ok", str(len(steps)))
    assert row["ok_steps"] == str(sum(r["status"] == "ok" for r in steps))
    assert (row["best_step"], float(row["best_reward"])) == (best["step"], float(best["reward"]))
    assert row["best_action"] == canonical(best["action"])
    assert f"Best of Tests.dse: {row['best_action']}" in real_dse.stdout

    importance = tables(report)["Tests.dse-0--importance"]
    assert sorted(c[0] for c in importance[1:]) == ["algo", "chunk_kb", "num_channels"]
    # env_params: ranked by the value over the regimes (equal weights here), never by a mean pooled across them
    header, *rows = tables(report)["Tests.dse-0--top"]
    assert header[:6] == ["first step", "rank", "expected value ± 95 % CI", "n", "failed", "background_load=0.0"]
    load = {r["step"]: r["background_load"] for r in read_csv(real_dse.it_dir("Tests.dse") / "env.csv")}
    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    failed: dict[str, int] = defaultdict(int)
    first: dict[str, str] = {}
    for r in steps:
        first.setdefault(canonical(r["action"]), r["step"])
        if r["status"] == "ok":
            cells[canonical(r["action"])][load[r["step"]]].append(float(r["reward"]))
        elif r["status"] != "cached":
            failed[canonical(r["action"])] += 1
    whole = {k: sum(0.5 * sum(v) / len(v) for v in c.values()) for k, c in cells.items() if len(c) == 2}
    clean = [k for k in whole if not failed[k]]
    if clean:
        top = max(clean, key=lambda k: (whole[k], -int(first[k])))
        assert rows[0][0] == first[top] and rows[0][1] == "searched" and rows[0][2].startswith(f"{whole[top]:.6g}")
    ranks = [r[1] for r in rows]
    assert ranks == sorted(ranks, key=lambda rank: rank == "not in every regime")  # unvalued ones last
    assert all(r[2] == "—" for r in rows if r[1] == "not in every regime")


def test_the_regime_table_is_the_best_configuration_per_env_params_value(real_dse: RealRun) -> None:
    it_dir = real_dse.it_dir("Tests.dse")
    load = {r["step"]: r["background_load"] for r in read_csv(it_dir / "env.csv")}
    steps = scored(read_csv(it_dir / "trajectory.csv"))
    best = canonical(max(steps, key=lambda r: float(r["reward"]))["action"])
    by_regime: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in steps:
        by_regime[load[r["step"]]][canonical(r["action"])].append(float(r["reward"]))

    header, *rows = tables(real_dse.path / "report.html")["Tests.dse-0--regimes"]

    assert header[:3] == ["env param", "regime", "best mean"]
    assert [(r[0], r[1]) for r in rows] == [("background_load", v) for v in sorted(by_regime, key=float)]
    for row in rows:
        configs = by_regime[row[1]]
        mine = configs.get(best, [])
        assert row[2] == (fmt(fmean(mine)) if mine else "—")
        assert row[4] == str(len(mine))  # best n
        assert row[5] == fmt(fmean(fmean(v) for v in configs.values()))  # all configs mean
        assert row[6] == str(len(configs))


def test_a_live_rl_run_reports_the_return_of_each_episode(real_live: RealRun) -> None:
    assert real_live.returncode == 0, real_live.stderr
    report = real_live.path / "report.html"
    page = parse(report)
    assert {"agent", "reward", "observations", "episodes", "regimes"} <= page.kinds()
    # reward, the server's observations (named: the test has no agent_metrics), knob effects, time, episode returns
    assert_charts(page, "Tests.live-0", ["reward-chart", "observations-", "knobs-", "time-chart", "episodes-chart"])

    steps = read_csv(real_live.it_dir("Tests.live") / "trajectory.csv")
    returns: dict[str, float] = defaultdict(float)
    for r in steps:
        returns[r["episode"]] += float(r["reward"])
    header, *rows = tables(report)["Tests.live-0--episodes"]
    assert header == ["episode", "return", "steps"]
    assert len(rows) == LIVE_STEPS // LIVE_HORIZON
    assert rows == [[ep, fmt(ret), str(LIVE_HORIZON)] for ep, ret in returns.items()]
    (row,) = read_csv(real_live.path / "summary.csv")
    assert (row["kind"], row["steps"]) == ("live_rl", str(LIVE_STEPS))
    assert "live RL" in real_live.stdout
    # the units ServingSim declares label its metrics; best.toml gives them too
    assert "throughput [requests/s]" in report.read_text() and "p99_latency_ms [ms]" in report.read_text()
    best = (real_live.it_dir("Tests.live") / "best.toml").read_text()
    assert "requests/s, p99_latency_ms=" in best
    assert re.search(r"search best's metrics: throughput=[-\d.e]+ requests/s, p99_latency_ms=", real_live.stdout)


def test_an_interrupted_run_still_reports_its_finished_steps(real_interrupted: RealRun) -> None:
    assert real_interrupted.returncode == 130, real_interrupted.stderr
    assert f"Report: {real_interrupted.path / 'report.html'}" in real_interrupted.stdout
    assert f"Tests.dse is incomplete: it stopped before its last step; `--resume {real_interrupted.path}`" in (
        real_interrupted.stdout
    )
    steps = read_csv(real_interrupted.it_dir("Tests.dse") / "trajectory.csv")
    assert steps, "at least one step finished before Ctrl-C"
    (row,) = read_csv(real_interrupted.path / "summary.csv")
    assert (row["status"], row["steps"]) == ("incomplete", str(len(steps)))
    page = parse(real_interrupted.path / "report.html")
    assert "reward" in page.kinds()
    assert "Incomplete: the run stopped before its last step (no best.toml)" in page.all_text


def test_a_torn_trajectory_of_an_interrupted_run_still_reports(real_interrupted: RealRun, tmp_path: Path) -> None:
    """A crash mid-row (kill -9, power loss) leaves a last line without its newline: reported, not fatal."""
    run = Path(shutil.copytree(real_interrupted.path, tmp_path / real_interrupted.path.name))
    trajectory = run / "Tests.dse" / "0" / "trajectory.csv"
    finished = len(read_csv(trajectory))
    with trajectory.open("a") as fh:
        fh.write(f'{finished + 1},1,"{{""algo"": ""ri')

    page = parse(generate_report([run]))

    assert f"line {finished + 2}: torn last line (interrupted run); dropped" in page.all_text
    assert {"reward", "top"} <= page.kinds()
    assert read_csv(run / "summary.csv")[0]["steps"] == str(finished)


def test_two_real_runs_of_the_same_test_are_compared(real_dse: RealRun, real_interrupted: RealRun) -> None:
    done = cloudai("generate-report", real_dse.path, real_interrupted.path, "--output", real_dse.path / "cmp.html")

    assert done.returncode == 0, done.stderr
    cmp = real_dse.path / "cmp.html"
    assert f"Report: {cmp}" in done.stdout
    page = parse(cmp)
    assert page.sections["compare-dse"] == "compare-dse"
    assert list(page.charts) == ["compare-dse--chart", "compare-dse--time-chart"]  # best so far: by step, by time
    assert page.points("compare-dse--chart") > 0 and page.points("compare-dse--time-chart") > 0
    header, *rows = tables(cmp)["compare-dse"]
    names = [real_dse.path.name, real_interrupted.path.name]  # two runs started in one second share a name:
    if names[0] == names[1]:  # the page then names each by its parent dir too
        names = [f"{run.path.parent.name}/{run.path.name}" for run in (real_dse, real_interrupted)]
    assert header == ["value", f"{names[0]} #0", f"{names[1]} #0"]
    by_name = {r[0]: r[1:] for r in rows}
    bests = [read_csv(r.path / "summary.csv")[0] for r in (real_dse, real_interrupted)]
    assert by_name["best reward"] == [fmt(float(b["best_reward"])) for b in bests]
    assert by_name["steps"] == [b["steps"] for b in bests]
    assert by_name["its bus_bw [GB/s]"] == by_name["best reward"]  # identity: the reward is the metric
    assert {"algo", "chunk_kb", "num_channels"} <= set(by_name)
