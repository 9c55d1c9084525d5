"""Fixtures: results dirs built file by file (``plain_run``, ``dse_run`` with env_params, ``live_run`` with
several episodes, and ``make_dse``, a factory for variations: steps, seed, torn last line, no run.json, no
env.csv), and real runs through the CLI, one per session (``real_plain``, ``real_dse``, ``real_live``,
``real_interrupted``; see ``real_runs.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.reports.real_runs import (
    DSE_SCENARIO,
    DSE_TEST,
    LIVE_SCENARIO,
    LIVE_TEST,
    PLAIN_SCENARIO,
    PLAIN_TESTS,
    RealRun,
    start,
    start_interrupted,
)
from tests.reports.report_builders import entry, write_job, write_manifest, write_trajectory


@pytest.fixture
def plain_run(tmp_path: Path) -> Path:
    run = tmp_path / "out" / "sleep-scenario_2026-11-23_07-00-00"
    write_manifest(run, [entry("Tests.1"), entry("Tests.2")])
    write_job(run / "Tests.1" / "0", metric=1.5)
    write_job(run / "Tests.1" / "1", metric=1.25)
    write_job(run / "Tests.2" / "0", status="failed")
    return run


@pytest.fixture
def make_dse(tmp_path: Path) -> Callable[..., Path]:
    def make(name: str = "dse-scenario_2026-11-23_07-00-00", *, manifest: bool = True, **kwargs: object) -> Path:
        run = tmp_path / "out" / name
        env = ["background_load", "latency_ms"] if kwargs.get("env", True) else []
        if manifest:
            write_manifest(run, [entry("Tests.1", agent="optuna", env=env)], scenario="dse-scenario")
        write_trajectory(run / "Tests.1" / "0", int(kwargs.pop("steps", 60)), **kwargs)  # type: ignore[arg-type]
        return run

    return make


@pytest.fixture
def dse_run(make_dse: Callable[..., Path]) -> Path:
    return make_dse()


@pytest.fixture
def live_run(tmp_path: Path) -> Path:
    run = tmp_path / "out" / "live-scenario_2026-11-23_07-00-00"
    write_manifest(run, [entry("Tests.1", agent="ppo", live=True, env=["background_load", "latency_ms"])])
    write_trajectory(run / "Tests.1" / "0", 30, episodes=3)
    return run


# Real runs through the CLI, once per session: each is a few seconds of real jobs or env steps.
@pytest.fixture(scope="session")
def real_plain(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    return start(tmp_path_factory.mktemp("plain"), PLAIN_TESTS, PLAIN_SCENARIO)


@pytest.fixture(scope="session")
def real_dse(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    return start(tmp_path_factory.mktemp("dse"), {"dse": DSE_TEST}, DSE_SCENARIO)


@pytest.fixture(scope="session")
def real_live(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    return start(tmp_path_factory.mktemp("live"), {"live": LIVE_TEST}, LIVE_SCENARIO)


@pytest.fixture(scope="session")
def real_interrupted(tmp_path_factory: pytest.TempPathFactory) -> RealRun:
    return start_interrupted(tmp_path_factory.mktemp("interrupted"))
