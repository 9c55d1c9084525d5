"""trials.csv, streamed from trajectory.csv and env.csv: the rows and cells the in-memory readers would give."""

from __future__ import annotations

import math
from pathlib import Path

from cloudai.reports.trials_csv import CHUNK_CHARS, write_trials
from cloudai.trajectory.records import TrajectoryWriter

HEADER = "step,episode,action,reward,observation,status,elapsed_s,reason\n"


def test_env_params_failures_cached_steps_and_damaged_rows(tmp_path: Path) -> None:
    (tmp_path / "trajectory.csv").write_text(
        HEADER + '1,1,"{""algo"":""ring"",""n"":4}",10.5,"[10.5,2.0]",ok,0.25,\n'
        '2,1,"{""algo"":""tree"",""n"":8}",-1.0,"[null,null]",failed,0.5,exit code 3\n'
        '4,1,"{""algo"":""ring"",""n"":4}",10.5,"[10.5,2.0]",cached,0.0,\n'
        '3,1,"{""algo"":""ring"",""n"":2}",1.0,"[1.0,1.0]",ok,0.1,\n'  # out of order: dropped
        '5,1,"{""algo"":""tree"",""n"":2}",-1.0,"[null,null]",constraint,0.0,too big\n'
        '6,1,"{""algo"":""tree"",""n"":4}",7.0,"[7.0]",ok,0.3,\n'  # a short observation
        '7,1,"{""algo"":""ring"",""n"":8}",9.0,"[9.0,1.0]",ok,0.2'  # torn: never committed
    )
    (tmp_path / "env.csv").write_text(
        "step,load,sharp\n1,0.5,true\n1,0.9,false\n2,0,false\n4,0.25,true\n5,x\n6,,true\n7,0.1,true\n"
    )
    write_trials(tmp_path, ["bw", "lat"])
    assert (tmp_path / "trials.csv").read_text() == (
        "step,episode,status,reward,elapsed_s,algo,n,bw,lat,load,sharp\n"
        "1,1,ok,10.5,0.25,ring,4,10.5,2.0,0.5,true\n"  # a duplicated env row: the first one
        "2,1,failed,-1.0,0.5,tree,8,,,0,false\n"
        "4,1,cached,10.5,0.0,ring,4,10.5,2.0,0.25,true\n"
        "5,1,constraint,-1.0,0.0,tree,2,,,,\n"  # its env row is damaged: empty cells
        "6,1,ok,7.0,0.3,tree,4,7.0,,,true\n"
    )


def test_a_knob_that_appears_later_gets_its_column_in_first_appearance_order(tmp_path: Path) -> None:
    (tmp_path / "trajectory.csv").write_text(
        HEADER + '1,1,"{""b"":1}",1.0,[1.0],ok,0.1,\n'
        '2,1,"{""a"":2,""b"":2}",2.0,[2.0],ok,0.1,\n'
        '3,1,"{""c"":[1,2]}",3.0,[3.0],ok,0.1,\n'
    )
    write_trials(tmp_path, ["m"])
    assert (tmp_path / "trials.csv").read_text() == (
        "step,episode,status,reward,elapsed_s,b,a,c,m\n"
        "1,1,ok,1.0,0.1,1,,,1.0\n"
        "2,1,ok,2.0,0.1,2,2,,2.0\n"
        '3,1,ok,3.0,0.1,,,"[1, 2]",3.0\n'
    )
    assert not list(tmp_path.glob(".trials.csv.*"))  # the abandoned first pass left no temp file


def test_a_run_longer_than_one_chunk_is_written_whole_in_step_order(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path, ["load"])
    steps = 5000  # about 170 000 characters: several chunks
    for n in range(1, steps + 1):
        status = "ok" if n % 3 else "failed"
        writer.append(step=n, episode=1, action={"k": n}, reward=float(n) if status == "ok" else -1.0,
                      observation=[float(n) if status == "ok" else math.nan], status=status, elapsed_s=0.5,
                      env={"load": n % 4}, reason="" if status == "ok" else "exit code 1")  # fmt: skip
    writer.close()
    text = write_trials(tmp_path, ["m"]).read_text()
    lines = text.splitlines()
    assert len(text) > 2 * CHUNK_CHARS and len(lines) == steps + 1
    assert lines[0] == "step,episode,status,reward,elapsed_s,k,m,load"
    assert lines[1] == "1,1,ok,1.0,0.5,1,1.0,1"
    assert lines[3] == "3,1,failed,-1.0,0.5,3,,3"
    assert lines[-1] == "5000,1,ok,5000.0,0.5,5000,5000.0,0"
    assert [int(line.split(",")[0]) for line in lines[1:]] == list(range(1, steps + 1))


def test_no_steps_and_no_env_file(tmp_path: Path) -> None:
    (tmp_path / "trajectory.csv").write_text(HEADER)
    assert write_trials(tmp_path, ["m"]).read_text() == "step,episode,status,reward,elapsed_s,m\n"
