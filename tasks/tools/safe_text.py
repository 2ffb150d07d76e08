"""Text from untrusted data (column names, batch ids, driver errors) made safe to print on a terminal
or to send as an HTTP header value."""

from __future__ import annotations

import re
import string
from typing import Any
from urllib.parse import quote

# Characters a terminal acts on rather than shows: C0 and C1 controls (ESC starts ANSI and OSC-8
# sequences, CR overwrites a line), DEL, and the invisible format characters that reorder or hide text
# (bidi overrides and isolates, zero-width characters, line and paragraph separators, the BOM).
# Newline and tab stay.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def printable(text: str) -> str:
    """`text` with every terminal control character shown as its Python escape (`\\x1b`, `\\u202e`)."""
    return CONTROL.sub(_escaped, text)


def page_value(value: Any) -> Any:
    """A value a page template shows, with `printable`'s escapes (a bidi override in a column name
    shows as `\\u202e` in titles, headings and cells instead of reordering them); markup stays markup.
    The `finalize` of driftline's Jinja environments."""
    from markupsafe import Markup

    if isinstance(value, Markup):
        return Markup(printable(str(value)))
    return printable(value) if isinstance(value, str) else value


def first_line(text: str) -> str:
    """The first non-blank line of `text`, stripped: a driver's multi-line error (psycopg's hint,
    SQLAlchemy's statement dump, Arrow's schema) becomes one error or log line."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


# Characters an HTTP header value carries as they are: visible ASCII and the space, but `%`, which
# starts an escape.
HEADER_SAFE = "".join(c for c in string.printable if c not in "%\t\n\r\x0b\x0c")


def header_value(text: str) -> str:
    """`text` as an HTTP header value: every other character (non-ASCII, controls, `%`) percent-encoded
    from its UTF-8 bytes (RFC 3986), so that any id is sent, read back with one unquote, and can
    neither fail Latin-1 encoding nor start a new header line."""
    return quote(text, safe=HEADER_SAFE)
