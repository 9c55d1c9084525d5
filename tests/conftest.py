"""Shared helpers (run the real CLI in a subprocess, write TOML files) and the session's one Slurm.

Slurm: ``@pytest.mark.slurm`` tests anywhere in the suite run against a real Slurm; no other test needs one.
``SLURM_CONF`` set (``.ci/run`` starts the local Slurm and exports it): that cluster is used, and a controller that
does not answer FAILS the tests. Not set, as root: the first test that needs it starts the repository's own
``tools/start-local-slurm.sh`` (under a file lock, so pytest-xdist workers share one; it installs the Debian
packages if missing) in a directory of this session's own, on free ports, and the session stops it at the end (only
if it started it): two checkouts' suites on one machine each have their own and never stop the other's. Not root, or
the script cannot start it (no packages, no registry, a port taken): the Slurm tests, and only they, are skipped,
each with the same loud reason. ``CLOUDAI_REQUIRE_SLURM=1`` (set by ``.ci/run``) turns that skip into a failure: a
CI that silently skipped them would prove nothing.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.cli_fork import run_cli

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import load_system
from cloudai.systems.base import Job, JobSpec
from cloudai.systems.slurm.system import SlurmSystem

REPO = Path(__file__).resolve().parents[1]
# Runs in tests render their report inline (in the run's own process, as by default); the background report
# of real runs is covered by tests/reports/test_report_real_runs.py.
os.environ.setdefault("CLOUDAI_REPORT", "inline")
# The suite starts hundreds of Python processes (cloudai runs, servers, jobs): with PYTHONDONTWRITEBYTECODE set and
# a venv synced without --compile-bytecode, each would compile pandas/matplotlib/optuna (and cloudai) from source
# again (~2.5 s of CPU a process). They share a bytecode cache outside the tree instead (PYTHONPYCACHEPREFIX: the
# checkout and the venv stay as they are); pytest-xdist's workers inherit it too.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "cloudai-tests-pycache"))
# openenv-core imports its optional web UI (gradio, ~10 s of CPU) when it can, and skips it on ModuleNotFoundError;
# no test uses that UI, and three modules import openenv in every xdist worker (one at collection).
sys.modules.setdefault("gradio", None)  # type: ignore[arg-type]
CONF = REPO / "conf"
TOOLS = REPO / "tools"  # the repository's own local-Slurm scripts
SLURM_SYSTEM_TOML = REPO / "tests" / "slurm" / "slurm_system.toml"
TIMEOUT_TEST = "test_time_limit_is_a_timeout"  # waits out Slurm's one-minute limit: run last, its job queued first


def cloudai(
    *args: str | os.PathLike[str], cwd: Path | None = None, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``cloudai ARGS`` as a user would, capturing output: its own process (a fork of a warm
    interpreter, see ``tests.cli_fork``), with the caller's cwd and environment unless given."""
    return run_cli([str(a) for a in args], cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """``write("tests/x.toml", text)`` -> the path, under tmp_path."""

    def _write(relative: str, text: str) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return _write


# -- the session's one Slurm ----------------------------------------------------------------------


def _session_file() -> Path:
    """Where this session (the xdist controller and its workers alike) records the Slurm it started."""
    return Path(tempfile.gettempdir()) / f"cloudai-tests-slurm-{os.environ['CLOUDAI_TEST_SESSION']}.env"


def local_slurm_dir(session: str) -> Path:
    """The directory of the local Slurm that test session ``session`` starts (config, daemons' state, logs)."""
    return Path(tempfile.gettempdir()) / f"cloudai-tests-slurm-{session}"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist): workers inherit it
        os.environ.setdefault("CLOUDAI_TEST_SESSION", str(os.getpid()))
    # A suite started in the background by a non-interactive shell inherits SIGINT ignored, and Python keeps it so
    # (and so would every cloudai it starts): the Ctrl-C tests would then test nothing. Python's own handler, as
    # in a terminal; processes the tests start get SIGINT's default back on exec.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core, at most 8. Half the suite's time is waiting (for the processes, servers
    and Slurm jobs a test starts), so one worker per core left a 2-core machine half idle: 3:54 there, 3:22 with
    4 workers. Beyond 8 the Slurm and server tests mostly wait on each other."""
    return min(2 * (os.cpu_count() or 1), 8)


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        from tests.docs.reader import remove_created  # what the doc snippets wrote in the repository

        remove_created()
    record = _session_file()
    if hasattr(config, "workerinput") or not record.exists():
        return
    if "started=1" in record.read_text().splitlines():
        stop_local_slurm(os.environ["CLOUDAI_TEST_SESSION"])
    record.unlink(missing_ok=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.name == TIMEOUT_TEST)  # stable: everything else keeps its order


def start_local_slurm(session: str) -> list[str] | str:
    """Start test session ``session``'s local Slurm (in ``local_slurm_dir(session)``, on free ports): the
    ``export K=V`` lines it prints, plus ``started=1`` if this call started it; or why it could not (a string)."""
    script = TOOLS / "start-local-slurm.sh"
    env = {**os.environ, "LOCAL_SLURM_INSTALL": "1", "LOCAL_SLURM_CPUS": "8",
           "LOCAL_SLURM_DIR": str(local_slurm_dir(session))}  # fmt: skip
    for fixed in ("LOCAL_SLURM_CTLD_PORT", "LOCAL_SLURM_SLURMD_PORT"):
        env.pop(fixed, None)  # free ones, chosen by the script
    try:
        done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{script} did not finish: {exc}"
    if done.returncode != 0:
        tail = " | ".join(line for line in done.stderr.strip().splitlines()[-3:])
        return f"{script} failed (exit {done.returncode}): {tail}"
    lines = [line for line in done.stdout.splitlines() if line.startswith("export ")]
    return [*lines, "started=1"] if "slurmctld started" in done.stderr else lines


def stop_local_slurm(session: str) -> None:
    """Stop test session ``session``'s local Slurm (only the daemons its directory's pid files name) and remove
    its directory."""
    where = local_slurm_dir(session)
    subprocess.run(["bash", str(TOOLS / "stop-local-slurm.sh"), str(where)], capture_output=True, timeout=120,
                   check=False)  # fmt: skip
    shutil.rmtree(where, ignore_errors=True)


def _export(lines: list[str]) -> None:
    for line in lines:
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, _, value = words[1].partition("=")
            os.environ[key] = value


def _unreachable() -> str | None:
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`scontrol ping` failed: {exc}"
    return None if "is UP" in ping.stdout else f"`scontrol ping` says: {(ping.stdout + ping.stderr).strip()}"


def _why_no_slurm() -> str | None:
    """None when a Slurm answers (started here if need be); else why the Slurm tests cannot run."""
    if os.environ.get("SLURM_CONF"):
        reason = _unreachable()
        if reason:
            pytest.fail(f"the Slurm controller (SLURM_CONF={os.environ.get('SLURM_CONF')}) is unreachable: {reason}")
        return None
    if os.geteuid() != 0:
        return f"not root, and SLURM_CONF is not set: {TOOLS / 'start-local-slurm.sh'} needs root"
    record = _session_file()
    with open(record.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker starts it; the others read what it recorded
        if not record.exists():
            started = start_local_slurm(os.environ["CLOUDAI_TEST_SESSION"])
            record.write_text(started if isinstance(started, str) else "\n".join(started) + "\n")
        text = record.read_text()
    if not text.startswith("export "):
        return text.strip()  # the start failed: its reason
    _export(text.splitlines())
    return _unreachable()


@functools.cache
def _slurm_skip_reason() -> str | None:
    reason = _why_no_slurm()
    if reason is None:
        return None
    message = f"SLURM TESTS SKIPPED: {reason}"
    if os.environ.get("CLOUDAI_REQUIRE_SLURM") == "1":
        pytest.fail(f"{message} (CLOUDAI_REQUIRE_SLURM=1: the Slurm tests must run)")
    return message


@pytest.fixture(scope="session")
def slurm_ready() -> None:
    reason = _slurm_skip_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(autouse=True)
def _needs_slurm(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("slurm") is not None:
        request.getfixturevalue("slurm_ready")


@pytest.fixture(scope="session", autouse=True)
def _queue_timeout_job_early(request: pytest.FixtureRequest) -> None:
    """Queue the Slurm job that must outlive its one-minute limit as the session starts, so its minute
    runs while the other tests do (``pytest_collection_modifyitems`` runs its test last)."""
    if any(item.name == TIMEOUT_TEST for item in request.session.items) and _slurm_skip_reason() is None:
        request.getfixturevalue("timeout_job")


@pytest.fixture(scope="session")
def timeout_job(slurm_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    """A job past its 60 s limit (see ``_queue_timeout_job_early``)."""
    config = load_system(SLURM_SYSTEM_TOML)
    assert isinstance(config, SlurmSystemConfig)
    system = SlurmSystem(config)
    job = system.submit(JobSpec("timeout", ("sleep", "600"), tmp_path_factory.mktemp("timeout") / "job", {}, 60))
    yield job
    system.cancel([job], "test teardown")


@pytest.fixture(autouse=True)
def _not_started_through_uv(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see a plain ``cloudai`` launch whether pytest ran under ``uv run`` or not (``UV`` and
    ``UV_RUN_RECURSION_DEPTH`` make the resume command ``uv run cloudai ...``); a test sets them to check that."""
    monkeypatch.delenv("UV", raising=False)
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)
