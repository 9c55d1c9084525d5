"""Text from outside cloudai (a server's error, a control plane's lease id): cut and made printable before it
reaches a terminal, a log or a file.

A server controls every byte it sends. Printed raw, an escape sequence retitles the user's terminal or rewrites
what is on it, a ``\\r\\n`` forges a line that looks like cloudai's, and a 2 MB error floods it. ``printable``
is the one way such text is shown: at most ``limit`` characters of it (the rest counted, not shown), and every
character that is not printable (control characters, ESC, CR/LF, tabs, bidi overrides) written as its Python
escape (``\\x1b``, ``\\n``, ``\\u202e``), so one value stays one line and reads as data.
"""

from __future__ import annotations

MAX_SHOWN = 300  # characters of one server-given value in a message


def printable(text: object, limit: int = MAX_SHOWN) -> str:
    """``text`` (``str()`` of it; bytes decoded, undecodable bytes replaced) cut to ``limit`` characters, with
    the rest counted, and every non-printable character escaped: safe to print on one line."""
    value = text.decode(errors="replace") if isinstance(text, bytes | bytearray) else str(text)
    shown, rest = value[:limit], len(value) - limit
    safe = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in shown)
    return f"{safe}... ({rest} more characters)" if rest > 0 else safe
