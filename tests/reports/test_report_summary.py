"""The terminal summary printed at the end of every run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from cloudai.errors import ConfigError
from cloudai.reports import generate_report, print_summary


def printed(run: Path) -> str:
    console = Console(record=True, width=250, color_system=None)
    print_summary(run, console)
    return console.export_text()


def test_plain_run_summary_counts_statuses_and_says_how_to_get_the_report(plain_run: Path) -> None:
    text = printed(plain_run)
    assert "Tests.1 (tests.1-test)" in text and "2 ok" in text
    assert "Tests.2 (tests.2-test)" in text and "1 failed" in text
    assert f"Report: run `cloudai generate-report {plain_run}`" in text


def test_dse_summary_shows_the_best_trial_and_the_report(make_dse: Callable[..., Path]) -> None:
    run = make_dse(steps=30)
    generate_report([run])
    text = printed(run)
    assert "DSE" in text
    assert "(step 1)" in text and '{"algo": "ring", "chunk": 4.0, "threads": 128}' in text
    assert f"Report: {run / 'report.html'}" in text


def test_live_rl_summary(live_run: Path) -> None:
    assert "live RL" in printed(live_run)


def test_summary_of_an_unrelated_dir_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        print_summary(tmp_path)
