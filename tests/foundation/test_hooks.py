"""CloudAI's ``pre_test``/``post_test`` hook scenarios run as jobs around the scenario's tests
(``conf/hook/*.toml`` with their tests in ``conf/hook/test/``), on standalone here and on Slurm in
``tests/slurm/test_hooks_slurm.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import CONF, cloudai

from cloudai.config.hooks import hook_dirs, load_hooks, with_hooks
from cloudai.config.scenario import load_scenario
from cloudai.config.test import load_tests
from cloudai.errors import ConfigError

HOOKED = CONF / "common" / "test_scenario" / "sleep_with_hooks.toml"
TESTS = CONF / "common" / "test"


def test_hook_entries_are_ordered_around_the_tests() -> None:
    scenario = load_scenario(HOOKED, load_tests(TESTS))
    assert (scenario.pre_test, scenario.post_test) == ("node_check", "node_check")
    expanded = with_hooks(scenario, load_hooks(scenario, TESTS))
    order = {e.id: [f"{d.type}:{d.id}" for d in e.dependencies] for e in expanded.entries}
    assert order == {
        "pre_test.Tests.1": [],
        "Tests.1": ["start_post_comp:pre_test.Tests.1"],
        "Tests.2": ["start_post_comp:pre_test.Tests.1"],
        "post_test.Tests.1": ["start_post_comp:Tests.1", "start_post_comp:Tests.2"],
    }
    hook = expanded.entry("pre_test.Tests.1")
    assert (hook.workload, hook.scenario_file, hook.time_limit_s) == ("BashCmd", CONF / "hook" / "node_check.toml", 60)


def test_hook_dir_is_found_next_to_the_scenarios_conf_from_any_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert [d.resolve() for d in hook_dirs(HOOKED, None)] == [(CONF / "hook").resolve()]
    scenario = load_scenario(HOOKED, load_tests(TESTS))
    assert set(load_hooks(scenario, None)) == {"pre_test", "post_test"}
    moved = tmp_path / "s.toml"
    moved.write_text(HOOKED.read_text())
    with pytest.raises(ConfigError, match="unknown hook scenario 'node_check'"):
        load_hooks(load_scenario(moved, load_tests(TESTS)), None)


def test_hooks_run_before_and_after_on_standalone(tmp_path: Path) -> None:
    done = cloudai("run", "--tests-dir", TESTS, "--test-scenario", HOOKED, "--output-dir", tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    jobs = {p.parent.parent.name: json.loads(p.read_text()) for p in run.glob("*/0/job.json")}
    assert {k: v["status"] for k, v in jobs.items()} == dict.fromkeys(
        ["pre_test.Tests.1", "Tests.1", "Tests.2", "post_test.Tests.1"], "ok"
    )
    assert jobs["pre_test.Tests.1"]["ended_at"] <= min(jobs[t]["started_at"] for t in ("Tests.1", "Tests.2"))
    assert jobs["post_test.Tests.1"]["started_at"] >= max(jobs[t]["ended_at"] for t in ("Tests.1", "Tests.2"))
    assert (run / "pre_test.Tests.1" / "0" / "stdout.txt").read_text().startswith("node_check on ")


@pytest.mark.parametrize(
    ("hook_a", "hook_b", "scenario_ids", "expected"),
    [
        ('pre_test = "a"\n', "", ["Tests.1"], "names a hook itself (pre_test = 'a')"),
        ('post_test = "b"\n', 'pre_test = "a"\n', ["Tests.1"], "names a hook itself (post_test = 'b')"),
        ("", "", ["pre_test.h"], "entry id 'pre_test.h' is also the id of hook pre_test's entry 'h'"),
    ],
    ids=["self", "each-other", "id-collision"],
)
def test_hooks_that_cannot_run_are_refused_at_load(
    tmp_path: Path, hook_a: str, hook_b: str, scenario_ids: list[str], expected: str
) -> None:
    """Issue 29 item 8: accepted before, then a real run ran one job and ended with "no job can start"."""
    (tmp_path / "hook" / "test").mkdir(parents=True)
    (tmp_path / "hook" / "test" / "nap.toml").write_text('name = "nap"\ntest_template_name = "Sleep"\n')
    (tmp_path / "hook" / "a.toml").write_text(f'name = "a"\n{hook_a}[[Tests]]\nid = "h"\ntest_name = "nap"\n')
    (tmp_path / "hook" / "b.toml").write_text(f'name = "b"\n{hook_b}[[Tests]]\nid = "h"\ntest_name = "nap"\n')
    entries = "".join(f'[[Tests]]\nid = "{i}"\ntest_name = "nap"\n' for i in scenario_ids)
    (tmp_path / "s.toml").write_text(f'name = "s"\npre_test = "a"\n{entries}')
    result = cloudai("dry-run", "--tests-dir", tmp_path / "hook" / "test", "--test-scenario", tmp_path / "s.toml",
                     "--hook-dir", tmp_path / "hook", "--output-dir", tmp_path / "out")  # fmt: skip
    assert result.returncode == 2, result.stdout
    assert expected in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_verify_configs_finds_hooks_in_hook_dir(tmp_path: Path) -> None:
    """``verify-configs --hook-dir``: a hook scenario kept apart from the scenario's conf tree is found, as ``run``."""
    from click.testing import CliRunner

    from cloudai.cli import cli

    (tmp_path / "hooks" / "test").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    for tests in ("tests", "hooks/test"):  # a hook's tests live in the hook dir's test/
        (tmp_path / tests / "nap.toml").write_text('name = "nap"\ntest_template_name = "Sleep"\n')
    (tmp_path / "hooks" / "a.toml").write_text('name = "a"\n[[Tests]]\nid = "h"\ntest_name = "nap"\n')
    (tmp_path / "s.toml").write_text('name = "s"\npre_test = "a"\n[[Tests]]\nid = "x"\ntest_name = "nap"\n')
    args = ["verify-configs", "--tests-dir", str(tmp_path / "tests"), str(tmp_path / "s.toml")]
    without = CliRunner().invoke(cli, args)
    assert without.exit_code == 2 and "'a'" in without.output, without.output
    found = CliRunner().invoke(cli, [*args, "--hook-dir", str(tmp_path / "hooks")])
    assert found.exit_code == 0, found.output
