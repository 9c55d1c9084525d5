"""Fio benchmark: parsing fio's JSON, and what the shipped fio DSE example gains over fio's defaults.

1. Parse time of a 64-job fio JSON output (real fio 3.33 jobs from the test samples, 64 of them):
   ``cloudai.workloads.fio.results`` (parse + metrics, median of 50) against a bare ``json.loads`` of the
   same text in this process (aim: < 50 ms).
2. ``conf/common/test/dse_fio.toml`` run as shipped (Optuna, 16 real fio trials), then its best.toml and
   the same test at fio's defaults (bs=4k, ioengine=psync, iodepth=1, numjobs=1), each 3 times one after
   the other: median read bandwidth (MiB/s) of each and the ratio. Needs fio (apt-get install fio).

Run: ``uv run python benchmarks/bench_fio.py`` (``--parse-only`` skips part 2).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import toml

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "workloads" / "fio_json" / "three_jobs_read.json"
TESTS = ROOT / "conf" / "common" / "test"
JOBS = 64
REPEATS = 3
FIO_DEFAULTS = {"bs": "4k", "ioengine": "psync", "iodepth": 1, "numjobs": 1}


def sixty_four_jobs() -> str:
    data = json.loads(SAMPLE.read_text())
    jobs = data["jobs"]
    data["jobs"] = [{**jobs[i % len(jobs)], "jobname": f"job{i}"} for i in range(JOBS)]
    return json.dumps(data, indent=2)


def _median_ms(fn: object, runs: int = 50) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def bench_parse() -> None:
    from cloudai.workloads.fio.results import metrics, parse

    text = sixty_four_jobs()
    ours = _median_ms(lambda: metrics(parse(text)))
    bare = _median_ms(lambda: json.loads(text))
    print(f"64-job fio JSON ({len(text) / 1024:.0f} KiB): parse+metrics {ours:.2f} ms, json.loads {bare:.2f} ms, "
          f"ratio {ours / bare:.2f}x (aim < 50 ms)")  # fmt: skip


def _invoke(args: list[str]) -> None:
    from click.testing import CliRunner

    from cloudai.cli import cli

    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(f"cloudai {' '.join(args)} failed:\n{result.output}")


def bench_dse(root: Path) -> None:
    scenario = ROOT / "conf" / "common" / "test_scenario" / "dse_fio.toml"
    start = time.perf_counter()
    _invoke(["run", "--tests-dir", str(TESTS), "--test-scenario", str(scenario), "--output-dir", str(root / "dse")])
    dse_s = time.perf_counter() - start
    (best_file,) = (root / "dse").glob("*/fio/0/best.toml")

    tests = root / "tests"
    tests.mkdir()
    best = toml.loads(best_file.read_text())
    default = toml.loads((TESTS / "dse_fio.toml").read_text())
    for key in [k for k in default if k.startswith("agent")]:
        del default[key]
    default.update(name="fio_defaults", description="dse_fio at fio's defaults")
    default["cmd_args"]["args"].update(FIO_DEFAULTS)
    (tests / "best.toml").write_text(toml.dumps(best))
    (tests / "default.toml").write_text(toml.dumps(default))
    entries = "".join(
        f'[[Tests]]\nid = "{name}"\ntest_name = "{test}"\niterations = {REPEATS}\n'
        for name, test in (("default", "fio_defaults"), ("best", best["name"]))
    )
    (root / "s.toml").write_text(f'name = "fio-best-vs-default"\n{entries}')
    (root / "system.toml").write_text('name = "one"\nscheduler = "standalone"\nmax_concurrent_jobs = 1\n')
    _invoke(["run", "--system-config", str(root / "system.toml"), "--tests-dir", str(tests),
             "--test-scenario", str(root / "s.toml"), "--output-dir", str(root / "cmp")])  # fmt: skip

    def median_bw(test_id: str) -> float:
        jobs = [json.loads(p.read_text()) for p in (root / "cmp").glob(f"*/{test_id}/*/job.json")]
        return statistics.median(j["metrics"]["default"] for j in jobs)

    base, tuned = median_bw("default"), median_bw("best")
    knobs = {k: best["cmd_args"]["args"][k] for k in FIO_DEFAULTS}
    print(f"fio DSE example: 16 trials in {dse_s:.1f} s; best {knobs}")
    print(f"  read bandwidth, median of {REPEATS}: fio defaults {base:.0f} MiB/s, best {tuned:.0f} MiB/s, "
          f"ratio {tuned / base:.1f}x")  # fmt: skip


def main() -> None:
    bench_parse()
    if "--parse-only" in sys.argv:
        return
    if shutil.which("fio") is None:
        print("fio not found: skipping the DSE part (apt-get install fio)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        bench_dse(Path(tmp))


if __name__ == "__main__":
    main()
