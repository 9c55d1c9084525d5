"""Issue 29 item 13: a full disk mid-run. The errors go to stderr, and cloudai leaves no empty record behind
(``job.json``, ``dse_failure.txt``): a file that exists is a file that was written. A real full file system: a
1 MiB tmpfs (needs root to mount; skipped otherwise, saying so)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import cloudai

# Each trial fills the disk, then cloudai must write its records there.
TEST = r"""name = "t"
test_template_name = "BashCmd"
agent_metrics = ["default"]
agent_reward_function = "identity"
[cmd_args]
cmd = 'f() { head -c 2000000 /dev/zero > big 2>/dev/null; echo "{\"default\": 1}" > metrics.json; }; f'
x = [1, 2, 3]
"""


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting the 1 MiB tmpfs that plays the full disk needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_disk_full_errors_on_stderr_and_no_empty_records(tmp_path: Path, full_disk: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(TEST)
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    args = ["--tests-dir", tmp_path / "tests", "--test-scenario", tmp_path / "s.toml", "--output-dir", full_disk]
    result = cloudai("run", *args)
    assert result.returncode == 1
    assert "No space left on device" in result.stderr and "resume with:" in result.stderr
    assert "error:" not in result.stdout, "an error line went to stdout"
    empty = [p.name for p in full_disk.rglob("*") if p.is_file() and p.stat().st_size == 0]
    assert "job.json" not in empty and "dse_failure.txt" not in empty, empty
