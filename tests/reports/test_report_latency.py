"""A serving DSE's report charts latency against throughput: TTFT (the SLA's statistic) and ITL against output
tokens/s, one point per trial that measured, the SLA as a line, hovering a point shows its configuration and both
values. The run is written file by file as `cloudai run` leaves a DynamoMocker DSE (run.json, trajectory.csv with
the constraint's metric observed, env.csv, each trial's job.json with every metric aiperf gave); every expected
value is read from those files, not from the report package."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from tests.reports.cdp import Chromium
from tests.reports.report_builders import T0, parse
from tests.reports.test_report_browser import CHROMIUM
from tests.reports.test_report_hover import hover

from cloudai.reports import generate_report
from cloudai.workloads import WORKLOADS, latency_charts, units_of

TEST_ID = "dynamo_serving_dse"
BASE = f"{TEST_ID}-0"
SLA_MS = 250.0


def _measure(seqs: int, workers: int, concurrency: int, step: int) -> dict[str, float]:
    """A mocker-like answer: more sequences and workers serve more tokens/s; 4 sequences queue 16 clients (each
    trial a little apart: no two points at one place)."""
    noise = 1.0 + 0.02 * step
    tput = 40.0 * concurrency * workers * min(seqs, concurrency) ** 0.5 * noise
    ttft = (60.0 * concurrency / min(seqs, concurrency) + 10.0 * seqs / workers) * noise
    itl = (4.0 + seqs / (4.0 * workers)) * noise
    return {"default": tput, "output_token_throughput": tput, "ttft_ms": 0.8 * ttft, "ttft_p90_ms": ttft,
            "itl_ms": itl, "itl_p90_ms": 1.2 * itl, "request_count": 60.0}  # fmt: skip


def write_serving_run(run: Path, steps: int = 24, workload: str = "DynamoMocker", charts: bool = True) -> Path:
    """A serving DSE: every 9th trial failed (no metrics), every 10th cached (no job dir), TTFT p90 over the SLA
    a ``constraint`` step (measured: its job.json says ok and holds the metrics); the last three: one tokens/s."""
    it_dir = run / TEST_ID / "0"
    it_dir.mkdir(parents=True)
    entry = {"id": TEST_ID, "test_name": TEST_ID, "workload": workload, "iterations": 1, "agent_driven": True,
             "agent": "optuna", "agent_metrics": ["default", "ttft_p90_ms"], "reward_function": "identity",
             "constraints": [f"ttft_p90_ms <= {SLA_MS:g}"], "units": units_of(workload, {}),
             "env_params": ["aiperf.replay_concurrency"]}  # fmt: skip
    if charts:
        entry["latency_charts"] = latency_charts(workload)
    (run / "run.json").write_text(json.dumps({"scenario": "dynamo-serving-dse", "started_at": T0, "entries": [entry]}))
    with (it_dir / "trajectory.csv").open("w", newline="") as tf, (it_dir / "env.csv").open("w", newline="") as ef:
        traj, env = csv.writer(tf), csv.writer(ef)
        traj.writerow(["step", "episode", "action", "reward", "observation", "status", "elapsed_s", "reason"])
        env.writerow(["step", "aiperf.replay_concurrency"])
        previous: tuple[dict, dict[str, float]] | None = None
        for step in range(1, steps + 1):
            concurrency = 4 if step % 2 else 16
            action = {"worker.max_num_seqs": [4, 16, 64][step % 3], "worker.num_workers": 1 + step % 2}
            if step > steps - 3:  # the last three serve the same largest tokens/s, at different latencies
                action, concurrency = {"worker.max_num_seqs": 64, "worker.num_workers": 2}, 16
            metrics = _measure(action["worker.max_num_seqs"], action["worker.num_workers"], concurrency, step)
            if step > steps - 2:
                slower = 3.0 + step - steps
                metrics = {k: v * slower if k.endswith("_ms") else v for k, v in _measure(64, 2, 16, steps - 2).items()}
            status, reason = "ok", ""
            if step % 10 == 0 and previous is not None:
                (action, metrics), status = previous, "cached"
            elif step % 9 == 0:
                status, reason, metrics = "failed", "exit code 1", {}
            elif metrics["ttft_p90_ms"] > SLA_MS:
                status, reason = "constraint", f"ttft_p90_ms = {metrics['ttft_p90_ms']:g} breaks <= {SLA_MS:g}"
            observation = [metrics.get("default", math.nan), metrics.get("ttft_p90_ms", math.nan)]
            reward = metrics["default"] if status in ("ok", "cached") else -1.0
            traj.writerow([step, 1, json.dumps(action), reward, json.dumps([None if math.isnan(v) else v
                           for v in observation]), status, 30.0, reason])  # fmt: skip
            env.writerow([step, concurrency])
            if status != "cached":
                job = {"name": f"{TEST_ID}.0.{step}", "status": "failed" if status == "failed" else "ok",
                       "reason": reason if status == "failed" else "", "started_at": T0, "ended_at": T0 + 30,
                       "metrics": metrics}  # fmt: skip
                (it_dir / str(step)).mkdir()
                (it_dir / str(step) / "job.json").write_text(json.dumps(job))
            if status == "ok":
                previous = (action, metrics)  # what a cached step re-uses
    return run


def _records(run: Path) -> dict[int, tuple[dict[str, str], dict]]:
    """Step -> (its trajectory.csv row, its job.json metrics; {} without a job dir)."""
    it_dir = run / TEST_ID / "0"
    with (it_dir / "trajectory.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for row in rows:
        job = it_dir / row["step"] / "job.json"
        out[int(row["step"])] = (row, json.loads(job.read_text())["metrics"] if job.exists() else {})
    return out


def test_ttft_and_itl_are_charted_against_throughput_one_point_per_measured_trial(tmp_path: Path) -> None:
    run = write_serving_run(tmp_path / "run")
    page = parse(generate_report([run]))
    assert page.sections[f"{BASE}--latency"] == "latency"
    records = _records(run)
    measured = {s for s, (row, _) in records.items() if row["status"] in ("ok", "constraint")}
    statuses = {row["status"] for row, _ in records.values()}
    assert {"ok", "constraint", "cached", "failed"} <= statuses  # the fixture has every kind of step
    ttft, itl = page.charts[f"{BASE}--latency-0"], page.charts[f"{BASE}--latency-1"]
    assert (ttft["ylabel"], itl["ylabel"]) == ("ttft_p90_ms [ms]", "itl_ms [ms]")  # the SLA's statistic; ITL's first
    assert ttft["xlabel"] == itl["xlabel"] == "output_token_throughput [tokens/s]"
    for chart, metric in ((f"{BASE}--latency-0", "ttft_p90_ms"), (f"{BASE}--latency-1", "itl_ms")):
        spec = page.charts[chart]
        points = {}
        for series in ("ok", "constraint"):
            for row in page.drawn(chart, series):
                step = row["step"]
                assert records[step][0]["status"] == series
                points[step] = (row[spec["series"][0]["x"]], row[spec["series"][0]["y"]])
        assert set(points) == measured  # not the cached or failed ones
        for step, (x, y) in points.items():
            metrics = records[step][1]
            assert x == pytest.approx(metrics["output_token_throughput"])
            assert y == pytest.approx(metrics[metric])
        tputs = [x for x, _ in points.values()]
        assert spec["xrange"][0] < min(tputs) and max(tputs) < spec["xrange"][1]  # every point in x's range
    (sla,) = [s for s in ttft["series"] if s["label"].startswith("SLA")]
    assert sla["ys"] == [SLA_MS, SLA_MS] and sla["label"] == "SLA ttft_p90_ms <= 250"
    tputs = [records[s][1]["output_token_throughput"] for s in measured]
    assert sla["xs"] == pytest.approx([min(tputs), max(tputs)])
    assert not [s for s in itl["series"] if s["label"].startswith("SLA")]  # ITL has no SLA here


@pytest.mark.parametrize(
    "workload", ["DynamoMocker", "AIDynamo", "TritonInference", "vllm", "sglang", "Aiconfigurator"]
)
def test_every_serving_workload_names_latency_and_throughput_metrics_it_measures(workload: str) -> None:
    charts = latency_charts(workload)
    assert charts is not None
    declared = WORKLOADS.get(workload).metrics or ()
    assert charts["throughput"] in declared
    assert all(m in declared for family in charts["latencies"] for m in family)  # type: ignore[union-attr]
    assert any("ttft" in family[0] for family in charts["latencies"])  # type: ignore[union-attr]


def test_no_latency_chart_for_a_workload_without_one_or_an_older_run(tmp_path: Path) -> None:
    assert latency_charts("Synthetic") is None
    for name, kwargs in (("synthetic", {"workload": "Synthetic"}), ("old", {"charts": False})):
        page = parse(generate_report([write_serving_run(tmp_path / name, steps=6, **kwargs)]))  # type: ignore[arg-type]
        assert f"{BASE}--latency" not in page.sections
        assert f"{BASE}--observations" in page.sections


@pytest.mark.browser
def test_hovering_a_latency_point_shows_its_configuration_traffic_and_both_values(tmp_path: Path) -> None:
    if CHROMIUM is None:
        pytest.skip("headless Chromium not installed: apt-get install -y chromium (Debian package 'chromium')")
    run = write_serving_run(tmp_path / "run")
    report = generate_report([run])
    records = _records(run)
    step = next(s for s, (row, _) in records.items() if row["status"] == "constraint")
    row, metrics = records[step]
    action = json.loads(row["action"])
    with Chromium(CHROMIUM, tmp_path / "profile") as browser:
        browser.open(report.resolve().as_uri())
        tip = hover(browser, f"{BASE}--latency-1", metrics["output_token_throughput"], metrics["itl_ms"]).splitlines()
        assert tip[0] == f"step {step} (constraint)"
        assert [f"{k} = {v}" for k, v in action.items()] == tip[1:3]
        with (run / TEST_ID / "0" / "env.csv").open() as fh:
            drew = next(r for r in csv.DictReader(fh) if r["step"] == str(step))["aiperf.replay_concurrency"]
        assert f"aiperf.replay_concurrency = {drew} (env)" in tip  # the traffic it was measured under
        assert f"itl_ms [ms]: {metrics['itl_ms']:.6g}" in tip  # read from its job.json: not an observed metric
        assert f"ttft_p90_ms [ms]: {metrics['ttft_p90_ms']:.6g}" in tip
        assert f"output_token_throughput [tokens/s]: {metrics['output_token_throughput']:.6g}" in tip
        inside = """(() => { const {u, points} = window.cloudaiReport.charts.get(%r);
          return points.filter(p => { const x = u.valToPos(p[0], "x"), y = u.valToPos(p[1], "y");
            return x < 0 || y < 0 || x > u.over.clientWidth || y > u.over.clientHeight; }).length; })()"""
        assert [browser.evaluate(inside % f"{BASE}--latency-{i}") for i in (0, 1)] == [0, 0]  # none off the plot
        assert browser.console() == []
