"""The bad-input corpus: every case in tests/bad_inputs/ through the real CLI.

Each case is a directory with the files it needs and a ``case.json``::

    {"args": ["run", "--tests-dir", "{case}/tests", "--test-scenario", "{case}/scenario.toml"],
     "exit_code": 2,
     "message": ["scenario.toml", "Tests[0].id"],   (fragments stderr must contain)
     "in_verify": ["scenario.toml"]}               (files verify-configs on the corpus must name)

``"generate": {"scenario.toml": 10485760}`` writes a file of that size first. ``{case}`` is the
case directory, ``{out}`` a fresh output dir that must not be created (for ``--resume`` cases:
``{resume}`` is a copy of ``resume/`` in the case, which must not change).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
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


def _args(case: dict[str, Any], case_dir: Path, out: Path, resume: Path) -> list[str]:
    return [str(a).format(case=case_dir, out=out, resume=resume) for a in case["args"]]


@pytest.mark.parametrize("case_dir", CASES, ids=[p.name for p in CASES])
def test_bad_input(case_dir: Path, tmp_path: Path) -> None:
    case = json.loads((case_dir / "case.json").read_text())
    work = tmp_path / case_dir.name
    shutil.copytree(case_dir, work, symlinks=True)
    for name, size in case.get("generate", {}).items():  # big inputs are made here, not committed
        (work / name).write_bytes(b"# " + b"x" * size + b"\n")
    out, resume = tmp_path / "out", work / "resume"
    before = _tree_digest(resume) if resume.exists() else None
    if "--output-dir" not in case["args"] and case["args"][0] in ("run", "dry-run"):
        case["args"] += ["--output-dir", "{out}"]
    result = cloudai(*_args(case, work, out, resume), cwd=tmp_path)
    assert result.returncode == case.get("exit_code", 2), (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    for fragment in case["message"]:
        assert fragment.format(case=work) in result.stderr, result.stderr
    assert not out.exists()
    if before is not None:
        assert _tree_digest(resume) == before


def test_corpus_is_large() -> None:
    assert len(CASES) >= 40


def test_verify_configs_reports_every_file_in_one_run() -> None:
    result = cloudai("verify-configs", CORPUS)
    assert result.returncode == 2
    for case_dir in CASES:
        case = json.loads((case_dir / "case.json").read_text())
        for name in case.get("in_verify", []):
            assert f"{case_dir.name}/{name}" in result.stderr, f"{case_dir.name}/{name} not reported"
