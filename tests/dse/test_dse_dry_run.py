"""dry-run of agent-driven tests: the space and the agent's first trials, never the grid itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from tests.dse.conftest import Case, invoke

SIX_DIMS = "\n".join(f"k{i} = [{', '.join(str(v) for v in range(10))}]" for i in range(6))  # 10^6 points


def test_dry_run_prints_the_space_and_writes_five_scripts(case: Callable[..., Case]) -> None:
    c = case(f'name = "x"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "{{model}}"\n{SIX_DIMS}\n')
    result = invoke(c.args("dry-run"))
    assert result.exit_code == 0, result.output
    assert "1000000 grid points" in result.output and "6 dimension(s)" in result.output
    scripts = sorted(c.iteration_dir().glob("*/cmd.sh"))
    assert [p.parent.name for p in scripts] == ["1", "2", "3", "4", "5"]
    assert "--k5=4" in scripts[4].read_text()  # grid order: the last dimension varies fastest
    assert not list(c.iteration_dir().glob("*/stdout.txt"))  # nothing ran


def test_dry_run_of_a_continuous_space(case: Callable[..., Case]) -> None:
    test = 'name = "x"\ntest_template_name = "BashCmd"\nagent = "random_search"\nagent_steps = 9\n'
    test += '[cmd_args]\ncmd = "{model}"\nx = { low = 1, high = 100, log = true }\n'
    c = case(test)
    result = invoke(c.args("dry-run"))
    assert result.exit_code == 0, result.output
    assert "continuous" in result.output and "x: range [1, 100] float log" in result.output
    assert len(list(c.iteration_dir().glob("*/cmd.sh"))) == 5


def test_dry_run_of_a_million_point_grid_has_bounded_memory(case: Callable[..., Case], tmp_path: Path) -> None:
    c = case(f'name = "x"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "{{model}}"\n{SIX_DIMS}\n')
    probe = textwrap.dedent(f"""
        import resource, subprocess, sys
        done = subprocess.run([sys.executable, "-m", "cloudai", *{c.args("dry-run")!r}], capture_output=True)
        assert done.returncode == 0, done.stderr
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    max_rss_mb = int(out.stdout.strip()) / 1024
    assert max_rss_mb < 150, f"dry-run of a 10^6-point grid peaked at {max_rss_mb:.0f} MB"
