"""report.html and summary.csv are replaced atomically: a reader (or a crash) never sees half a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudai.atomicfile import atomic_write
from cloudai.reports import generate_report


def test_a_regenerated_report_replaces_the_files_instead_of_rewriting_them(plain_run: Path) -> None:
    generate_report([plain_run])
    files = [plain_run / "report.html", plain_run / "summary.csv"]
    before = [f.read_text() for f in files]
    with files[0].open() as old_report, files[1].open() as old_summary:
        inodes = [f.stat().st_ino for f in files]
        (plain_run / "Tests.2" / "0" / "job.json").unlink()  # the next report differs

        generate_report([plain_run])

        assert [f.stat().st_ino for f in files] != inodes  # renamed into place, not truncated and rewritten
        assert [old_report.read(), old_summary.read()] == before  # a reader of the old files still reads all
    assert len(before[1].splitlines()) == 4 and len(files[1].read_text().splitlines()) == 3
    assert not [p for p in plain_run.iterdir() if p.name.endswith(".tmp")]


def test_a_failed_write_leaves_the_previous_file_and_no_temp_file(tmp_path: Path) -> None:
    target = atomic_write(tmp_path / "report.html", "old report\n")
    with pytest.raises(UnicodeEncodeError):
        atomic_write(target, "half a report, then \udcff")  # fails mid-write
    assert target.read_text() == "old report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    assert oct(target.stat().st_mode & 0o777) == "0o644"
