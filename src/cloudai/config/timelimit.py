"""Slurm's time formats, as CloudAI accepts them in ``time_limit``.

A clock field past its range is what Slurm accepts and normalises (``00:60:00`` is one hour, ``00:99:99``
101 minutes: Slurm rounds seconds up to whole minutes): CloudAI's own ``nemo_run_llama3_8b.toml`` says
``"00:60:00"``. Zero (Slurm's "no limit") and limits beyond a year are refused as typos.
"""

from __future__ import annotations

import re

_FORMATS = (  # whole matches: ``$`` alone would accept a trailing newline
    (re.compile(r"(\d+)"), ("m",)),
    (re.compile(r"(\d+):(\d{1,2})"), ("m", "s")),
    (re.compile(r"(\d+):(\d{1,2}):(\d{1,2})"), ("h", "m", "s")),
    (re.compile(r"(\d+)-(\d{1,2})"), ("d", "h")),
    (re.compile(r"(\d+)-(\d{1,2}):(\d{1,2})"), ("d", "h", "m")),
    (re.compile(r"(\d+)-(\d{1,2}):(\d{1,2}):(\d{1,2})"), ("d", "h", "m", "s")),
)
_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
MAX_SECONDS = 366 * 86400  # a year: beyond it a limit is a typo (and overflows timers)
HELP = 'use "HH:MM:SS", "D-HH:MM:SS", "MM:SS" or whole minutes, e.g. "00:30:00" or 30'


def parse_time_limit(value: str | int) -> int:
    """Seconds in a Slurm time limit. Raises ``ValueError`` (with ``HELP``) when malformed or zero."""
    text = str(value).strip()
    for pattern, units in _FORMATS:
        match = pattern.fullmatch(text)
        if match:
            fields = [(int(g), u) for g, u in zip(match.groups(), units, strict=True)]
            seconds = sum(number * _SECONDS[unit] for number, unit in fields)
            if seconds <= 0:
                raise ValueError(f"time limit must be positive; {HELP}")
            if seconds > MAX_SECONDS:
                raise ValueError(f"{value!r} is longer than a year; {HELP}")
            return seconds
    raise ValueError(f"{value!r} is not a time limit; {HELP}")


def format_time_limit(seconds: int) -> str:
    """Seconds as Slurm's ``D-HH:MM:SS`` (or ``HH:MM:SS`` under a day)."""
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    hms = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{hms}" if days else hms
