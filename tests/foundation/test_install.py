"""``cloudai install`` / ``uninstall`` for real: a uv-managed environment with a package from a wheel the test
writes (no registry needed), created once, reused, never taken as done when half finished, removed."""

from __future__ import annotations

import subprocess
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cloudai.cli import cli
from cloudai.errors import InstallError
from cloudai.installables import MARKER, Generated, PythonEnv
from cloudai.workloads import WORKLOADS
from cloudai.workloads.base import JobContext, Workload

PACKAGE_DIR: dict[str, Path] = {}  # set per test: the local package the workload asks for


class NeedsAnEnv(Workload):
    """A workload whose command runs in a Python environment of its own (as Aiconfigurator's does)."""

    name = "NeedsAnEnv"

    def installables(self, args: Mapping[str, Any]) -> Sequence[PythonEnv]:
        return [PythonEnv(f"tinyenv-{args.get('flavour', 'a')}", (str(PACKAGE_DIR["path"]),))]

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        assert job.install_path is not None
        python = self.installables(args)[0].python(job.install_path)
        return [str(python), "-c", "import tinypkg; print(tinypkg.HELLO)"]


def write_wheel(directory: Path, requires: str = "") -> Path:
    """A minimal pure-Python wheel (PEP 427): what uv installs without a build backend or a registry."""
    wheel = directory / "tinypkg-1.0-py3-none-any.whl"
    metadata = "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n" + (
        f"Requires-Dist: {requires}\n" if requires else ""
    )
    files = {
        "tinypkg/__init__.py": 'HELLO = "hello from the env"\n\ndef hello():\n    print(HELLO)\n',
        "tinypkg-1.0.dist-info/METADATA": metadata,
        "tinypkg-1.0.dist-info/entry_points.txt": "[console_scripts]\ntinyhello = tinypkg:hello\n",
        "tinypkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        records = [f"{name},,\n" for name in files] + ["tinypkg-1.0.dist-info/RECORD,,\n"]
        archive.writestr("tinypkg-1.0.dist-info/RECORD", "".join(records))
    return wheel


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setitem(WORKLOADS._loaded, "NeedsAnEnv", NeedsAnEnv)  # a plugin, for this test only
    PACKAGE_DIR["path"] = write_wheel(tmp_path)
    system = tmp_path / "system.toml"
    system.write_text(f'name = "here"\nscheduler = "standalone"\ninstall_path = "{tmp_path / "install"}"\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text('name = "t"\ntest_template_name = "NeedsAnEnv"\n')
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[[Tests]]\nid = "a"\ntest_name = "t"\n')
    return {"system": system, "tests": tmp_path / "tests", "scenario": scenario, "install": tmp_path / "install"}


def invoke(command: str, files: dict[str, Path], *more: str) -> Result:
    args = [command, "--system-config", str(files["system"]), "--tests-dir", str(files["tests"])]
    return CliRunner().invoke(cli, [*args, "--test-scenario", str(files["scenario"]), *more], catch_exceptions=False)


def test_install_once_reuse_then_uninstall(files: dict[str, Path], tmp_path: Path) -> None:
    env = files["install"] / "tinyenv-a"
    dry = invoke("install", files, "--dry-run")
    assert dry.exit_code == 0 and "Would install: Python environment 'tinyenv-a'" in dry.output
    assert not env.exists(), "--dry-run installed something"
    first = invoke("install", files)
    assert first.exit_code == 0, first.output
    assert "Installed in" in first.output and (env / MARKER).is_file()
    again = invoke("install", files)
    assert again.exit_code == 0 and "Already installed" in again.output
    run = invoke("run", files, "--output-dir", str(tmp_path / "out"))
    assert run.exit_code == 0, run.output
    assert (next((tmp_path / "out").glob("*/a/0")) / "stdout.txt").read_text() == "hello from the env\n"
    gone = invoke("uninstall", files)
    assert gone.exit_code == 0 and "Removed: Python environment 'tinyenv-a'" in gone.output and not env.exists()
    assert "Not installed" in invoke("uninstall", files).output


def test_a_half_finished_install_is_never_taken_as_done(files: dict[str, Path]) -> None:
    item = PythonEnv("tinyenv-a", (str(PACKAGE_DIR["path"]),))
    (files["install"] / "tinyenv-a" / "bin").mkdir(parents=True)  # what a Ctrl-C during `uv pip install` leaves
    (files["install"] / "tinyenv-a" / "bin" / "python").write_text("")
    assert not item.installed(files["install"])
    result = invoke("install", files)
    assert result.exit_code == 0 and "Installed in" in result.output
    done = subprocess.run([str(item.python(files["install"])), "-c", "import tinypkg"], check=False)
    assert done.returncode == 0 and item.installed(files["install"])


def test_a_failed_install_says_why_and_leaves_no_marker(files: dict[str, Path]) -> None:
    PACKAGE_DIR["path"] = files["install"].parent / "no-such-package.whl"
    result = invoke("install", files)
    assert result.exit_code == 1
    assert "installing tinyenv-a" in result.output and "no-such-package" in result.output
    assert not (files["install"] / "tinyenv-a" / MARKER).exists()


def test_other_packages_are_a_new_install(files: dict[str, Path]) -> None:
    assert invoke("install", files).exit_code == 0
    item = PythonEnv("tinyenv-a", (str(PACKAGE_DIR["path"]), "six"))
    assert not item.installed(files["install"]), "the marker records the exact packages"


def test_nothing_to_install_for_plain_workloads(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text('name = "t"\ntest_template_name = "Sleep"\n')
    result = CliRunner().invoke(cli, ["install", "--tests-dir", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0 and "Nothing to install: these workloads (Sleep)" in result.output


def test_no_deps_then_a_directory_its_script_writes(tmp_path: Path) -> None:
    """ai-dynamo's way in (a requirement that cannot be met, skipped with ``no_deps``), and the tiny model's
    (a directory a script writes with the environment's interpreter), redone when the script changes."""
    wheel = write_wheel(tmp_path, requires="cloudai-no-such-requirement==9.9")  # as aisimulate is for ai-dynamo
    env = PythonEnv("env", (), no_deps=(str(wheel),))
    script = tmp_path / "write.py"
    script.write_text("import sys, pathlib, tinypkg\npathlib.Path(sys.argv[1]).mkdir()\n"
                      "(pathlib.Path(sys.argv[1]) / 'out.txt').write_text(tinypkg.HELLO)\n")  # fmt: skip
    made = Generated("made", env, script)
    (tmp_path / "cache").mkdir()
    (tmp_path / "run").mkdir()
    link = tmp_path / "run" / "install"  # CloudAI's "./install", linked to a shared cache (as the tests do)
    link.symlink_to(tmp_path / "cache", target_is_directory=True)
    with pytest.raises(InstallError, match="needs Python environment 'env'"):
        made.install(link)
    assert env.install(link) and made.install(link)
    link.unlink()  # that run dir is gone: the env's scripts still run (their shebang is the real path)
    install = tmp_path / "cache"
    done = subprocess.run([str(install / "env" / "bin" / "tinyhello")], capture_output=True, text=True, check=False)
    assert done.stdout == "hello from the env\n", done.stderr
    assert (install / "made" / "out.txt").read_text() == "hello from the env"
    assert not made.install(install), "installed already"
    script.write_text(script.read_text() + "# changed\n")
    assert not made.installed(install) and made.install(install)
