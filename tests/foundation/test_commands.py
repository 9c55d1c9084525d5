"""verify-configs, list and --help as a user types them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import CONF, cloudai


def test_verify_configs_accepts_every_shipped_config() -> None:
    result = cloudai("verify-configs", CONF)
    assert result.returncode == 0, result.stderr
    assert "0 problem(s)" in result.stdout


def test_verify_configs_reports_every_error_at_once(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write("a/system.toml", 'name = "x"\nscheduler = "standalone"\nouput_path = "r"\n')
    write("a/test.toml", 'name = "t"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = "x"\n')
    write("a/scenario.toml", 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "nope"\n')
    write("a/broken.toml", "name = \n")
    result = cloudai("verify-configs", tmp_path / "a")
    assert result.returncode == 2
    for fragment in (
        "system.toml: ouput_path",
        "scenario.toml: Tests[0].test_name",
        "broken.toml",
        "4 file(s) checked",
    ):
        assert fragment in result.stderr + result.stdout, result.stderr


def test_list_shows_the_registries() -> None:
    result = cloudai("list")
    assert result.returncode == 0
    for name in ("Sleep", "BashCmd", "Synthetic", "grid_search", "inverse", "standalone"):
        assert name in result.stdout


def test_help_lists_every_command() -> None:
    result = cloudai("--help")
    assert result.returncode == 0
    for command in ("run", "dry-run", "verify-configs", "list"):
        assert command in result.stdout


def test_verify_configs_resolves_a_shared_test_name_per_tree(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    """Two trees each with a test ``t`` (a Sleep, a BashCmd): each scenario is checked against its own tree's, and
    the name is noted once; two files of one directory with one name are one problem, as ``run`` reports it."""
    write("a/test/t.toml", 'name = "t"\ntest_template_name = "Sleep"\n')
    write("a/test_scenario/s.toml", 'name = "s"\n[[Tests]]\nid = "x"\ntest_name = "t"\n[Tests.cmd_args]\nseconds = 1\n')
    write("b/test/t.toml", 'name = "t"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "true"\n')
    write("b/test_scenario/s.toml", 'name = "s"\n[[Tests]]\nid = "x"\ntest_name = "t"\n[Tests.cmd_args]\ncmd = "ls"\n')
    result = cloudai("verify-configs", tmp_path / "a", tmp_path / "b")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("note: test name 't' is used by 2 files") == 1
    write("b/test/t2.toml", 'name = "t"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "false"\n')
    result = cloudai("verify-configs", tmp_path / "b")
    assert result.returncode == 2
    assert result.stderr.count("error:") == 1 and "t2.toml: name: test name 't' is also used by" in result.stderr
