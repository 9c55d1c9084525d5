"""``cloudai.workloads.heredoc``: the files a job script writes for itself, read back byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cloudai.workloads.heredoc import write_lines, written_files


def test_a_text_holding_the_end_marker_is_written_whole_and_read_back(tmp_path: Path) -> None:
    text = "echo $HOME `date`\nCLOUDAI_EOF\nlast line"  # nothing expanded; a line equal to the marker
    script = "\n".join([*write_lines(tmp_path / "a b.sh", text, "CLOUDAI_EOF", executable=True),
                        *write_lines(tmp_path / "c.yaml", "", "CLOUDAI_EOF")]) + "\n"  # fmt: skip
    assert "<<'CLOUDAI_EOF_'" in script
    assert written_files(script) == {"a b.sh": text, "c.yaml": ""}
    subprocess.run(["bash", "-c", script], check=True)
    assert (tmp_path / "a b.sh").read_text() == text + "\n" and (tmp_path / "a b.sh").stat().st_mode & 0o100
