"""The bad-input corpus: every case in tests/bad_inputs/ through the real CLI.

Each case is a directory with the files it needs and a ``case.json``::

    {"args": ["run", "--tests-dir", "{case}/tests", "--test-scenario", "{case}/scenario.toml"],
     "exit_code": 2,
     "message": ["scenario.toml", "Tests[0].id"],   (fragments stderr must contain)
     "in_verify": ["scenario.toml"]}               (files verify-configs on the corpus must name)

``"generate": {"scenario.toml": 10485760}`` writes a file of that size first; ``"unreadable":
["scenario.toml"]`` makes those files mode 000 (and, as root, runs the CLI without the
capabilities that bypass file permissions). ``{case}`` is the
case directory, ``{out}`` a fresh output dir that must not be created (for ``--resume`` cases:
``{resume}`` is a copy of ``resume/`` in the case, which must not change).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.cli_fork import run_cli
from tests.conftest import REPO, cloudai

CORPUS = REPO / "tests" / "bad_inputs"
CASES = sorted(p for p in CORPUS.iterdir() if (p / "case.json").exists())


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _run(argv: list[str], cwd: Path, *, drop_dac: bool) -> subprocess.CompletedProcess[str]:
    """The real CLI, each case its own process; with ``drop_dac`` (as root) without the capabilities that
    bypass file permissions (a real ``python -m cloudai``), otherwise a fork of a warm interpreter."""
    if not (drop_dac and os.geteuid() == 0):
        return run_cli(argv, cwd)
    caps = "-dac_override,-dac_read_search"
    prefix = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", sys.executable, "-m", "cloudai"]
    return subprocess.run([*prefix, *argv], cwd=cwd, capture_output=True, text=True, timeout=120)


def _args(case: dict[str, Any], case_dir: Path, out: Path, resume: Path) -> list[str]:
    return [str(a).format(case=case_dir, out=out, resume=resume) for a in case["args"]]


@dataclass(frozen=True)
class _Outcome:
    case: dict[str, Any]
    work: Path
    result: subprocess.CompletedProcess[str]
    out_created: bool
    resume_before: str | None
    resume_after: str | None


def _run_case(case_dir: Path, root: Path) -> _Outcome:
    case = json.loads((case_dir / "case.json").read_text())
    work = root / case_dir.name / "case"
    shutil.copytree(case_dir, work, symlinks=True)
    for name, size in case.get("generate", {}).items():  # big inputs are made here, not committed
        (work / name).write_bytes(b"# " + b"x" * size + b"\n")
    out, resume = root / case_dir.name / "out", work / "resume"
    before = _tree_digest(resume) if resume.exists() else None
    if "--output-dir" not in case["args"] and case["args"][0] in ("run", "dry-run"):
        case["args"] += ["--output-dir", "{out}"]
    argv = _args(case, work, out, resume)
    for name in case.get("unreadable", []):  # root reads anything: drop the capabilities that let it
        (work / name).chmod(0)
    result = _run(argv, work.parent, drop_dac=bool(case.get("unreadable")))
    after = _tree_digest(resume) if before is not None else None
    return _Outcome(case, work, result, out.exists(), before, after)


@pytest.mark.parametrize("case_dir", CASES, ids=[p.name for p in CASES])
def test_bad_input(case_dir: Path, tmp_path: Path) -> None:
    """One case, its own CLI process (a fork of a warm interpreter: cases spread over the xdist workers)."""
    o = _run_case(case_dir, tmp_path)
    assert o.result.returncode == o.case.get("exit_code", 2), (o.result.stdout, o.result.stderr)
    assert "Traceback" not in o.result.stderr
    for fragment in o.case["message"]:
        assert fragment.format(case=o.work) in o.result.stderr, o.result.stderr
    assert not o.out_created
    assert o.resume_after == o.resume_before  # --resume on a dir that is not this run's changes nothing


def test_corpus_is_large() -> None:
    assert len(CASES) >= 40


def test_verify_configs_reports_every_file_in_one_run() -> None:
    result = cloudai("verify-configs", CORPUS)
    assert result.returncode == 2
    for case_dir in CASES:
        case = json.loads((case_dir / "case.json").read_text())
        for name in case.get("in_verify", []):
            assert f"{case_dir.name}/{name}" in result.stderr, f"{case_dir.name}/{name} not reported"
