"""A standalone job's first process is started with glibc's ``posix_spawn`` (``systems.spawn``), not ``Popen``
(issue 39, item 7: half the CPU per start). The job must not notice: it sees what a ``Popen``-started job sees,
checked by running the same probe both ways; what cannot be started fails its job with ``Popen``'s words; a job
with a ``PATH`` of its own (which glibc cannot search) still finds its program there."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import cloudai.systems.standalone as standalone
from cloudai.config.system import StandaloneSystemConfig
from cloudai.systems import spawn
from cloudai.systems.base import Job, JobSpec, JobStatus
from cloudai.systems.standalone import StandaloneSystem

# What a job can tell of how it was started: working dir, session, descriptors, signals, stdin, environment.
PROBE = r"""
pwd
read -r -a stat < /proc/$$/stat
[ "${stat[5]}" = "$$" ] && echo "leads its session"
cd /proc/$$/fd && echo * && cd - >/dev/null
grep -E '^(SigBlk|SigIgn)' /proc/self/status
readlink /proc/$$/fd/0
echo "K=$K mark=${CLOUDAI_JOB_MARK:+set} token=${CLOUDAI_SERVE_TOKEN:-none}"
echo to-stderr >&2
"""


def _run(system: StandaloneSystem, spec: JobSpec) -> Job:
    job = system.submit(spec)
    while not job.done:
        system.wait([job], timeout=None)
    return job


@pytest.fixture
def leaky_fd() -> Iterator[int]:
    """An inheritable descriptor in cloudai's process: no job may get it (``Popen``'s ``close_fds``)."""
    read, write = os.pipe()
    os.set_inheritable(write, True)
    yield write
    os.close(read)
    os.close(write)


def test_a_spawned_job_sees_what_a_popen_started_one_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leaky_fd: int
) -> None:
    if not spawn.available():
        pytest.skip("no glibc posix_spawn with addchdir_np/addclosefrom_np here: jobs start through Popen")
    monkeypatch.setenv("CLOUDAI_SERVE_TOKEN", "secret")
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # an ignored signal stays ignored (both ways)
    started: list[str] = []
    real_spawn = standalone.spawn

    def counted(*args: object) -> int | None:
        pid = real_spawn(*args)  # type: ignore[arg-type]
        started.append("spawn" if pid is not None else "popen")
        return pid

    try:
        outputs = {}
        for way in ("spawn", "popen"):
            monkeypatch.setattr(standalone, "spawn", counted if way == "spawn" else lambda *a: None)
            job = _run(StandaloneSystem(StandaloneSystemConfig()), JobSpec("j", ("bash", "-c", PROBE),
                                                                        tmp_path / way, {"K": "v"}))  # fmt: skip
            assert job.status is JobStatus.OK, job.reason
            assert (tmp_path / way / "stderr.txt").read_text() == "to-stderr\n"
            outputs[way] = (tmp_path / way / "stdout.txt").read_text().replace(str(tmp_path / way), "<dir>")
    finally:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    assert started == ["spawn"]
    assert outputs["spawn"] == outputs["popen"]
    lines = outputs["spawn"].splitlines()
    assert lines[0] == "<dir>" and lines[1] == "leads its session"
    assert lines[2].split()[:3] == ["0", "1", "2"] and str(leaky_fd) not in lines[2].split()
    assert lines[3:5] == ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000200"]  # only SIGUSR1, as ignored here
    assert lines[-2:] == ["/dev/null", "K=v mark=set token=none"]


def test_a_program_that_cannot_start_fails_its_job_with_the_reason(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program\n")
    system = StandaloneSystem(StandaloneSystemConfig())
    reasons = {
        argv: _run(system, JobSpec(argv, (argv,), tmp_path / str(i))).reason
        for i, argv in enumerate(("/no/such/program", "no-such-program-anywhere", str(plain)))
    }
    assert reasons == {
        "/no/such/program": "could not start '/no/such/program': No such file or directory",
        "no-such-program-anywhere": "could not start 'no-such-program-anywhere': No such file or directory",
        str(plain): f"could not start {str(plain)!r}: Permission denied",
    }


def test_exit_codes_and_deaths_by_signal_read_as_before(tmp_path: Path) -> None:
    system = StandaloneSystem(StandaloneSystemConfig())
    codes = [_run(system, JobSpec(str(i), ("sh", "-c", cmd), tmp_path / str(i))).returncode
             for i, cmd in enumerate(("exit 0", "exit 3", "kill -KILL $$"))]  # fmt: skip
    assert codes == [0, 3, -9]


def test_a_job_with_a_path_of_its_own_finds_its_program_there(tmp_path: Path) -> None:
    """The job's ``PATH`` is searched, not cloudai's (``spawn._found``; ``Popen`` where that search is the job's
    own directory's)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "only-here").write_text("#!/bin/sh\necho found\n")
    (tools / "only-here").chmod(0o755)
    spec = JobSpec("j", ("only-here",), tmp_path / "job", {"PATH": f"{tools}:{os.environ['PATH']}"})
    job = _run(StandaloneSystem(StandaloneSystemConfig()), spec)
    assert job.status is JobStatus.OK, job.reason
    assert (tmp_path / "job" / "stdout.txt").read_text() == "found\n"


def test_a_nul_in_a_word_is_left_to_popen(tmp_path: Path) -> None:
    """C strings end at a NUL: ``spawn`` never passes such a word on cut short (``Popen`` refuses it; a job's
    script refuses it first, at render)."""
    if not spawn.available():
        pytest.skip("no glibc posix_spawn here")
    with open(os.devnull, "rb") as null:
        fd = null.fileno()
        assert spawn.spawn(("/bin/echo", "a\0b"), tmp_path, [b"K=v"], fd, fd, fd, None) is None


def test_each_job_gets_its_own_variables_over_the_shared_environment(tmp_path: Path) -> None:
    """The system's environment is converted to C once and a job's own variables go into the slots after it
    (``spawn.CEnviron``): a job with more of them than the room, then one with fewer, each see exactly theirs."""
    if not spawn.available():
        pytest.skip("no glibc posix_spawn here")
    system = StandaloneSystem(StandaloneSystemConfig(global_env_vars={"SHARED": "s"}))
    many = {f"V{i}": f"v{i}" for i in range(12)}  # more than the room the array starts with
    seen = {}
    for name, env in (("many", many), ("one", {"V0": "only"}), ("none", {})):
        job = _run(system, JobSpec(name, ("sh", "-c", "env | grep -E '^(V[0-9]+|SHARED)=' | sort"),
                                   tmp_path / name, env))  # fmt: skip
        assert job.status is JobStatus.OK, job.reason
        seen[name] = (tmp_path / name / "stdout.txt").read_text().split()
    assert seen["many"] == sorted(["SHARED=s", *(f"{k}={v}" for k, v in many.items())])
    assert seen["one"] == ["SHARED=s", "V0=only"]  # none of the first job's variables left behind
    assert seen["none"] == ["SHARED=s"]


def test_a_signal_ignored_between_two_jobs_is_ignored_by_the_second_only(tmp_path: Path) -> None:
    """The signals a job starts with at their defaults are named to glibc once (``spawn._Libc.defaults_for``); one
    that this process ignores later must stay ignored in the jobs it starts from then on, and no longer once it is
    handled again (what ``Popen`` gives)."""
    if not spawn.available():
        pytest.skip("no glibc posix_spawn here")
    system = StandaloneSystem(StandaloneSystemConfig())
    ignored = {}
    for name in ("before", "ignored", "after"):
        previous = signal.signal(signal.SIGUSR2, signal.SIG_IGN) if name == "ignored" else None
        try:
            job = _run(system, JobSpec(name, ("grep", "^SigIgn", "/proc/self/status"), tmp_path / name))
        finally:
            if previous is not None:
                signal.signal(signal.SIGUSR2, previous)
        assert job.status is JobStatus.OK, job.reason
        ignored[name] = int((tmp_path / name / "stdout.txt").read_text().split()[1], 16)
    usr2 = 1 << (signal.SIGUSR2 - 1)
    assert (ignored["before"] & usr2, ignored["ignored"] & usr2, ignored["after"] & usr2) == (0, usr2, 0)


def test_a_program_is_found_as_execvp_finds_it_and_again_once_it_has_moved(tmp_path: Path) -> None:
    """``spawn._found`` remembers where a program is on ``PATH`` (no failed ``execve`` per entry in every child):
    the first executable regular file, past a directory and a file without ``x`` of the same name; nothing where a
    relative entry comes first (the job's own directory decides). A program removed from where it was found is
    searched for again."""
    first, second, third = (tmp_path / name for name in ("first", "second", "third"))
    for where in (first, second, third):
        where.mkdir()
    (first / "tool").mkdir()  # a directory of that name: execvp goes on
    (second / "tool").write_text("#!/bin/sh\necho second\n")  # no x: execvp goes on
    for where in (second, third):
        (where / "other").write_text(f"#!/bin/sh\necho {where.name}\n")
        (where / "other").chmod(0o755)
    (third / "tool").write_text("#!/bin/sh\necho third\n")
    (third / "tool").chmod(0o755)
    path = f"{first}:{second}:{third}:{os.environ['PATH']}"
    assert spawn._found(b"tool", path.encode()) == f"{third}/tool".encode()
    assert spawn._found(b"tool", f"relative:{path}".encode()) is None
    system = StandaloneSystem(StandaloneSystemConfig())
    seen = []
    for i in range(2):
        job = _run(system, JobSpec(str(i), ("other",), tmp_path / f"job{i}", {"PATH": path}))
        assert job.status is JobStatus.OK, job.reason
        seen.append((tmp_path / f"job{i}" / "stdout.txt").read_text())
        (second / "other").unlink(missing_ok=True)  # gone after the first job: the second finds the next one
    assert seen == ["second\n", "third\n"]
